"""The linear hypernetwork of Schug et al. 2024 (Appendix D.3).

Where the paper and the authors' code differ, this follows the code (docs/authors-settings.md,
Schug 2024):

- The base network's layers form three groups (input layer, hidden layers, output layer), each
  with its own generator and its own embedding matrix `[chunks, T]` (one chunk per layer of the
  group); the hidden-layer generator is shared by all hidden layers.
- The generator makes both weights *and* biases of each layer (the paper says biases are not
  generated); the base layers are NTK: `x @ (w / sqrt(fan_in)) + b`.
- Each embedding row is normalized to norm `sqrt(T)` in the forward pass, with a stop-gradient
  on the scale (the paper says unit norm; the two differ only by the constant `sqrt(T)`).
- Fast leaves: the embedding matrices (meta-learned initialization) and a zero output bias that
  restarts at zero for every task (not meta-learned). Meta leaves: the generators and the
  embeddings' initialization.
- Initialization: embeddings uniform with unit variance over the chunk axis (haiku's
  `VarianceScaling(1, "fan_in", "uniform")`); generators truncated normal, std `1/sqrt(T)`.
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
from jaxtyping import Array, Float, PRNGKeyArray, PyTree

from ._base import FAST, FIXED, META, AbstractIdentifiable, AbstractMetaLearner
from .config import LinearHypernetConfig
from .io import IOSpec


def truncated_normal(key: PRNGKeyArray, shape: tuple[int, ...], std: float) -> Array:
    """Normal samples truncated to two standard deviations, rescaled to standard deviation
    `std` (as haiku's `TruncatedNormal`)."""
    # The std of a standard normal truncated to [-2, 2].
    unscaled_std = 0.87962566103423978
    return jr.truncated_normal(key, -2.0, 2.0, shape) * (std / unscaled_std)


def normalize_rows(e: Float[Array, "chunks T"]) -> Float[Array, "chunks T"]:
    """Scale each row to norm `sqrt(T)`; the scale carries no gradient."""
    t = e.shape[-1]
    scale = jnp.sqrt(t) / jnp.linalg.norm(e, axis=-1, keepdims=True)
    return e * jax.lax.stop_gradient(scale)


def layer_groups(layer_sizes: tuple[int, ...]) -> list[tuple[int, int]]:
    """`(index of the group's first layer, number of layers)` for each layer group of a base
    network with the given layer sizes: input layer, hidden layers (absent when there is one
    hidden layer), output layer."""
    num_layers = len(layer_sizes) - 1
    if num_layers == 2:
        return [(0, 1), (1, 1)]
    return [(0, 1), (1, num_layers - 2), (num_layers - 1, 1)]


class LinearHypernet(AbstractMetaLearner, AbstractIdentifiable):
    """ReLU MLP in NTK parameterization whose weights and biases are linear functions of
    normalized task embeddings.

    Layer group `g` (input, hidden, output; the hidden group is absent when there is one hidden
    layer) has an embedding matrix `embeddings[g]` with one row per layer of the group and a
    generator, stored as its weight part `weight_generators[g]` and its bias part
    `bias_generators[g]` (together the reference's `Linear(T -> fan_in * fan_out + fan_out)`).
    Layer `l` of group `g` has weight `normalize_rows(embeddings[g])[l] @ weight_generators[g]`
    (reshaped to `(fan_in, fan_out)`) and bias `... @ bias_generators[g]`.
    """

    embeddings: tuple[Float[Array, "chunks T"], ...]
    weight_generators: tuple[Float[Array, "T fan_in_fan_out"], ...]
    bias_generators: tuple[Float[Array, "T fan_out"], ...]
    out_bias: Float[Array, " out"]
    layer_sizes: tuple[int, ...] = eqx.field(static=True)

    def __init__(
        self,
        in_features: int,
        out_features: int,
        hidden: int,
        num_hidden: int,
        num_templates: int,
        *,
        key: PRNGKeyArray,
    ):
        self.layer_sizes = (in_features, *([hidden] * num_hidden), out_features)
        groups = layer_groups(self.layer_sizes)
        embeddings, weight_generators, bias_generators = [], [], []
        std = 1.0 / math.sqrt(num_templates)
        for (first, chunks), gkey in zip(groups, jr.split(key, len(groups)), strict=True):
            fan_in, fan_out = self.layer_sizes[first], self.layer_sizes[first + 1]
            ekey, wkey = jr.split(gkey)
            limit = math.sqrt(3.0 / chunks)
            embeddings.append(
                jr.uniform(ekey, (chunks, num_templates), minval=-limit, maxval=limit)
            )
            generator = truncated_normal(wkey, (num_templates, fan_in * fan_out + fan_out), std)
            weight_generators.append(generator[:, : fan_in * fan_out])
            bias_generators.append(generator[:, fan_in * fan_out :])
        self.embeddings = tuple(embeddings)
        self.weight_generators = tuple(weight_generators)
        self.bias_generators = tuple(bias_generators)
        self.out_bias = jnp.zeros((out_features,))

    def layer_params(
        self,
    ) -> list[tuple[Float[Array, "fan_in fan_out"], Float[Array, " fan_out"]]]:
        """The generated `(weight, bias)` of every base-network layer, input to output."""
        params = []
        groups = zip(
            layer_groups(self.layer_sizes),
            self.embeddings,
            self.weight_generators,
            self.bias_generators,
            strict=True,
        )
        for (first, chunks), e, wg, bg in groups:
            e = normalize_rows(e)
            for c in range(chunks):
                fan_in, fan_out = self.layer_sizes[first + c], self.layer_sizes[first + c + 1]
                params.append(((e[c] @ wg).reshape(fan_in, fan_out), e[c] @ bg))
        return params

    def __call__(self, x: Float[Array, "n in"]) -> Float[Array, "n out"]:
        params = self.layer_params()
        for i, (w, b) in enumerate(params):
            x = x @ (w / math.sqrt(w.shape[0])) + b
            x = jax.nn.relu(x) if i < len(params) - 1 else x + self.out_bias
        return x

    def embedding(self) -> Float[Array, " dim"]:
        """The normalized embedding rows of all layer groups, input to output, flattened (the
        output bias is not part of it)."""
        return jnp.concatenate([normalize_rows(e) for e in self.embeddings]).reshape(-1)

    def labels(self) -> PyTree[str]:
        """Embeddings fast (meta-learned initialization), the output bias fixed (restarts at
        zero for every task), the generators meta."""
        spec = jtu.tree_map(lambda _: META, self)
        return eqx.tree_at(
            lambda m: (m.embeddings, m.out_bias),
            spec,
            (tuple(FAST for _ in self.embeddings), FIXED),
        )


def make(config: LinearHypernetConfig, *, io: IOSpec, key: PRNGKeyArray) -> LinearHypernet:
    """Build a `LinearHypernet` from its config (the factory of the `linear-hypernet` plugin),
    for inputs of `io.in_features` and predictions of `io.out_features`."""
    return LinearHypernet(
        io.in_features,
        io.out_features,
        config.hidden,
        config.num_hidden,
        config.num_templates,
        key=key,
    )
