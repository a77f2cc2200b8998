"""The `example-anil` model: an MLP whose readout layer is fast (adapted per task)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
from jaxtyping import Array, Float, PRNGKeyArray, PyTree

from zoo._base import AbstractMetaLearner

from .config import ExampleANILConfig


class ExampleANIL(AbstractMetaLearner):
    """`x -> readout(tanh(hidden(x)))`; `readout` is fast, `hidden` is meta-learned."""

    hidden: eqx.nn.Linear
    readout: eqx.nn.Linear

    def __init__(
        self,
        config: ExampleANILConfig,
        *,
        in_features: int,
        out_features: int,
        key: PRNGKeyArray,
    ):
        hidden_key, readout_key = jr.split(key)
        self.hidden = eqx.nn.Linear(in_features, config.hidden, key=hidden_key)
        self.readout = eqx.nn.Linear(config.hidden, out_features, key=readout_key)

    def __call__(self, x: Float[Array, "n in_features"]) -> Float[Array, "n out_features"]:
        return jax.vmap(lambda xi: self.readout(jnp.tanh(self.hidden(xi))))(x)

    def fast_filter(self) -> PyTree[bool]:
        no = jtu.tree_map(lambda _: False, self)
        return eqx.tree_at(lambda m: (m.readout.weight, m.readout.bias), no, replace=(True, True))


def make(
    config: ExampleANILConfig, *, in_features: int, out_features: int, key: PRNGKeyArray
) -> ExampleANIL:
    """The factory named by the `example-anil` spec."""
    return ExampleANIL(config, in_features=in_features, out_features=out_features, key=key)
