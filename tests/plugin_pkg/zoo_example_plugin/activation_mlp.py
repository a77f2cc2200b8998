"""The `example-activation-mlp` model: any Equinox model trains, non-array leaves included.

Its body is an `eqx.nn.MLP` whose activation function is a leaf of the pytree, and it carries a
name (a string leaf); its readout adapts per task, from a meta-learned initialization."""

import equinox as eqx
import jax
import jax.random as jr
import jax.tree_util as jtu
from jaxtyping import Array, Float, PRNGKeyArray, PyTree

from zoo import AbstractMetaLearner, AbstractSplitForward, IOSpec

from .config import ExampleActivationMLPConfig

ACTIVATIONS = {"tanh": jax.nn.tanh, "gelu": jax.nn.gelu, "relu": jax.nn.relu}


class ExampleActivationMLP(AbstractMetaLearner, AbstractSplitForward):
    """`x -> readout(body(x))`: `body` an `eqx.nn.MLP` (meta), `readout` linear (fast)."""

    body: eqx.nn.MLP
    readout: eqx.nn.Linear
    name: str

    def __init__(self, config: ExampleActivationMLPConfig, *, io: IOSpec, key: PRNGKeyArray):
        body_key, readout_key = jr.split(key)
        self.body = eqx.nn.MLP(
            io.in_features,
            config.hidden,
            config.hidden,
            depth=1,
            activation=ACTIVATIONS[config.activation],
            final_activation=ACTIVATIONS[config.activation],
            key=body_key,
        )
        self.readout = eqx.nn.Linear(config.hidden, io.out_features, key=readout_key)
        self.name = f"mlp-{config.activation}"

    def features(self, x: Float[Array, "n in"]) -> Float[Array, "n hidden"]:
        return jax.vmap(self.body)(x)

    def predict(self, features: Float[Array, "n hidden"]) -> Float[Array, "n out"]:
        return jax.vmap(self.readout)(features)

    def __call__(self, x: Float[Array, "n in"]) -> Float[Array, "n out"]:
        return self.predict(self.features(x))

    def labels(self) -> PyTree[str]:
        meta = jtu.tree_map(lambda _: "meta", self)
        return eqx.tree_at(lambda m: (m.readout.weight, m.readout.bias), meta, ("fast", "fast"))


def make(
    config: ExampleActivationMLPConfig, *, io: IOSpec, key: PRNGKeyArray
) -> ExampleActivationMLP:
    """The factory named by the `example-activation-mlp` spec."""
    return ExampleActivationMLP(config, io=io, key=key)
