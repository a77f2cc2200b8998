"""The `sine-mlp` model: a tanh MLP whose readout is fast (adapted per task), as in ANIL."""

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
from jaxtyping import Array, Float, PRNGKeyArray, PyTree

from zoo import AbstractMetaLearner, IOSpec

from .config import SineMLPConfig


class SineMLP(AbstractMetaLearner):
    """`x -> readout(tanh(hidden(x)))`; `readout` is fast, `hidden` meta-learned."""

    hidden: eqx.nn.Linear
    readout: eqx.nn.Linear

    def __init__(self, config: SineMLPConfig, *, io: IOSpec, key: PRNGKeyArray):
        hidden_key, readout_key = jr.split(key)
        self.hidden = eqx.nn.Linear(io.in_features, config.hidden, key=hidden_key)
        self.readout = eqx.nn.Linear(config.hidden, io.out_features, key=readout_key)

    def __call__(self, x: Float[Array, "n in_features"]) -> Float[Array, "n out_features"]:
        return jax.vmap(lambda xi: self.readout(jnp.tanh(self.hidden(xi))))(x)

    def labels(self) -> PyTree[str]:
        meta = jtu.tree_map(lambda _: "meta", self)
        return eqx.tree_at(lambda m: (m.readout.weight, m.readout.bias), meta, ("fast", "fast"))


def make(config: SineMLPConfig, *, io: IOSpec, key: PRNGKeyArray) -> SineMLP:
    """The factory of the `sine-mlp` model."""
    return SineMLP(config, io=io, key=key)
