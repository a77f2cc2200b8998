"""ANIL and MAML (Schug et al. 2024, Appendices D.1 and D.2): a ReLU MLP with biases in standard
parameterization, `x @ w + b`; weights truncated normal with std `1/sqrt(fan_in)`, biases zero
(the reference code's settings, docs/authors-settings.md, Schug 2024).

- ANIL: the body (every layer but the last) is meta; the readout (last weight and bias) is fast,
  from a meta-learned initialization. `features` is the body, so the engine computes it once
  per task, outside the inner loop.
- MAML: every leaf is fast, from a meta-learned initialization.
"""

import itertools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
from equinox import AbstractVar
from jaxtyping import Array, Float, PRNGKeyArray, PyTree

from ._base import FAST, META, AbstractMetaLearner, AbstractSplitForward
from .config import ANILConfig, MAMLConfig
from .io import IOSpec
from .linear_hypernet import truncated_normal


def init_mlp(
    layer_sizes: tuple[int, ...], *, key: PRNGKeyArray
) -> tuple[tuple[Float[Array, "fan_in fan_out"], ...], tuple[Float[Array, " fan_out"], ...]]:
    """`(weights, biases)` of a standard-parameterization MLP with the given layer sizes:
    weights `(fan_in, fan_out)` truncated normal with std `1/sqrt(fan_in)`, biases zero."""
    pairs = itertools.pairwise(layer_sizes)
    keys = jr.split(key, len(layer_sizes) - 1)
    weights = tuple(
        truncated_normal(k, (fan_in, fan_out), 1.0 / math.sqrt(fan_in))
        for (fan_in, fan_out), k in zip(pairs, keys, strict=True)
    )
    biases = tuple(jnp.zeros((size,)) for size in layer_sizes[1:])
    return weights, biases


class AbstractMLPLearner(AbstractMetaLearner):
    """A ReLU MLP `x -> readout(body(x))` with biases in standard parameterization; subclasses
    say which of its leaves are fast.

    `weights[l]` has shape `(fan_in, fan_out)` and `biases[l]` shape `(fan_out,)`; layer `l`
    computes `x @ weights[l] + biases[l]`, followed by a ReLU for every layer but the last.
    """

    weights: AbstractVar[tuple[Float[Array, "fan_in fan_out"], ...]]
    biases: AbstractVar[tuple[Float[Array, " fan_out"], ...]]

    def body(self, x: Float[Array, "n in"]) -> Float[Array, "n hidden"]:
        """The ReLU features of the last hidden layer (every layer but the readout)."""
        for w, b in zip(self.weights[:-1], self.biases[:-1], strict=True):
            x = jax.nn.relu(x @ w + b)
        return x

    def readout(self, h: Float[Array, "n hidden"]) -> Float[Array, "n out"]:
        """The last, linear layer."""
        return h @ self.weights[-1] + self.biases[-1]

    def __call__(self, x: Float[Array, "n in"]) -> Float[Array, "n out"]:
        return self.readout(self.body(x))


class ANIL(AbstractMLPLearner, AbstractSplitForward):
    """ANIL: a ReLU MLP whose body is meta-learned and whose readout (last weight and bias)
    adapts per task from a meta-learned initialization.

    `features(x)` is the body's output, which reads no fast leaf; `predict(h)` is the readout.
    """

    weights: tuple[Float[Array, "fan_in fan_out"], ...]
    biases: tuple[Float[Array, " fan_out"], ...]

    def __init__(
        self,
        in_features: int,
        out_features: int,
        hidden: int,
        num_hidden: int,
        *,
        key: PRNGKeyArray,
    ):
        """**Arguments:**

        - `in_features`, `out_features`: sizes of the input and the output.
        - `hidden`: width of the hidden layers.
        - `num_hidden`: number of hidden layers (at least 1).
        - `key`: a PRNG key for the initialization.
        """
        sizes = (in_features, *([hidden] * num_hidden), out_features)
        self.weights, self.biases = init_mlp(sizes, key=key)

    def features(self, x: Float[Array, "n in"]) -> Float[Array, "n hidden"]:
        return self.body(x)

    def predict(self, features: Float[Array, "n hidden"]) -> Float[Array, "n out"]:
        return self.readout(features)

    def labels(self) -> PyTree[str]:
        """The readout (last weight and bias) fast, the body meta."""
        spec = jtu.tree_map(lambda _: META, self)
        return eqx.tree_at(lambda m: (m.weights[-1], m.biases[-1]), spec, (FAST, FAST))


class MAML(AbstractMLPLearner):
    """MAML: a ReLU MLP whose every parameter adapts per task from a meta-learned
    initialization."""

    weights: tuple[Float[Array, "fan_in fan_out"], ...]
    biases: tuple[Float[Array, " fan_out"], ...]

    def __init__(
        self,
        in_features: int,
        out_features: int,
        hidden: int,
        num_hidden: int,
        *,
        key: PRNGKeyArray,
    ):
        """**Arguments:**

        - `in_features`, `out_features`: sizes of the input and the output.
        - `hidden`: width of the hidden layers.
        - `num_hidden`: number of hidden layers (at least 1).
        - `key`: a PRNG key for the initialization.
        """
        sizes = (in_features, *([hidden] * num_hidden), out_features)
        self.weights, self.biases = init_mlp(sizes, key=key)

    def labels(self) -> PyTree[str]:
        """Every leaf fast."""
        return jtu.tree_map(lambda _: FAST, self)


def make_anil(config: ANILConfig, *, io: IOSpec, key: PRNGKeyArray) -> ANIL:
    """Build an `ANIL` from its config (the factory of the `anil` plugin), for inputs of
    `io.in_features` and predictions of `io.out_features`."""
    return ANIL(io.in_features, io.out_features, config.hidden, config.num_hidden, key=key)


def make_maml(config: MAMLConfig, *, io: IOSpec, key: PRNGKeyArray) -> MAML:
    """Build a `MAML` from its config (the factory of the `maml` plugin), for inputs of
    `io.in_features` and predictions of `io.out_features`."""
    return MAML(io.in_features, io.out_features, config.hidden, config.num_hidden, key=key)
