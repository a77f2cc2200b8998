"""The nonlinear hypernetwork of Schug et al. 2024 (Appendix D.4).

The base network, its layer groups, the embeddings and their normalization are those of the
linear hypernetwork (`zoo.linear_hypernet`, with the reference code's details listed there);
only the generator differs. Following the authors' code (docs/authors-settings.md, Schug 2024):

- Each layer group's generator is an MLP applied to each normalized embedding row:
  `LayerNorm(T)`, then `generator_depth` x [`Linear(generator_width)` -> `LayerNorm` -> `ELU`],
  then a head `Linear(generator_width -> fan_in * fan_out + fan_out)` without bias, whose output
  is the layer's flattened weight followed by its bias.
- Initialization: hidden generator layers truncated normal with std `1/sqrt(fan_in)` and zero
  biases; the head truncated normal with std `1/sqrt(generator_width)`; LayerNorms with unit
  scale and zero offset (both learned); embeddings as in the linear hypernetwork.
- Fast leaves: the embedding matrices only (meta-learned initialization); there is no extra
  output bias (the reference has one only for the linear hypernetwork). Meta leaves: the
  generators and the embeddings' initialization.
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
from jaxtyping import Array, Float, PRNGKeyArray, PyTree

from ._base import FAST, META, AbstractIdentifiable, AbstractMetaLearner
from .config import NonlinearHypernetConfig
from .io import IOSpec
from .linear_hypernet import layer_groups, normalize_rows, truncated_normal


class MLPGenerator(eqx.Module):
    """The generator of one layer group: an MLP from one embedding row to the flattened weight
    and bias of one base-network layer,
    `LayerNorm -> depth x [Linear -> LayerNorm -> ELU] -> Linear (no bias)`."""

    in_norm: eqx.nn.LayerNorm
    linears: tuple[eqx.nn.Linear, ...]
    norms: tuple[eqx.nn.LayerNorm, ...]
    head: Float[Array, "width chunk"]

    def __init__(
        self, num_templates: int, width: int, depth: int, out_size: int, *, key: PRNGKeyArray
    ):
        """**Arguments:**

        - `num_templates`: the embedding size T.
        - `width`: width of the hidden layers.
        - `depth`: number of hidden layers.
        - `out_size`: size of the output (`fan_in * fan_out + fan_out` of the generated layer).
        - `key`: a PRNG key for the initialization.
        """
        self.in_norm = eqx.nn.LayerNorm(num_templates)
        keys = jr.split(key, depth + 1)
        linears = []
        for i, lkey in enumerate(keys[:-1]):
            fan_in = num_templates if i == 0 else width
            init_key, weight_key = jr.split(lkey)
            linear = eqx.nn.Linear(fan_in, width, key=init_key)
            weight = truncated_normal(weight_key, (width, fan_in), 1.0 / math.sqrt(fan_in))
            linear = eqx.tree_at(
                lambda lin: (lin.weight, lin.bias), linear, (weight, jnp.zeros((width,)))
            )
            linears.append(linear)
        self.linears = tuple(linears)
        self.norms = tuple(eqx.nn.LayerNorm(width) for _ in range(depth))
        head_in = width if depth else num_templates
        self.head = truncated_normal(keys[-1], (head_in, out_size), 1.0 / math.sqrt(head_in))

    def __call__(self, e: Float[Array, " T"]) -> Float[Array, " chunk"]:
        h = self.in_norm(e)
        for linear, norm in zip(self.linears, self.norms, strict=True):
            h = jax.nn.elu(norm(linear(h)))
        return h @ self.head


class NonlinearHypernet(AbstractMetaLearner, AbstractIdentifiable):
    """ReLU MLP in NTK parameterization whose weights and biases are nonlinear functions (MLP
    generators) of normalized task embeddings.

    Layer group `g` (input, hidden, output; the hidden group is absent when there is one hidden
    layer) has an embedding matrix `embeddings[g]` with one row per layer of the group and a
    generator `generators[g]`, shared by the layers of the group. Layer `l` of group `g` has
    weight and bias `generators[g](normalize_rows(embeddings[g])[l])`, split into the first
    `fan_in * fan_out` entries (reshaped to `(fan_in, fan_out)`) and the last `fan_out`.
    """

    embeddings: tuple[Float[Array, "chunks T"], ...]
    generators: tuple[MLPGenerator, ...]
    layer_sizes: tuple[int, ...] = eqx.field(static=True)

    def __init__(
        self,
        in_features: int,
        out_features: int,
        hidden: int,
        num_hidden: int,
        num_templates: int,
        generator_width: int,
        generator_depth: int,
        *,
        key: PRNGKeyArray,
    ):
        """**Arguments:**

        - `in_features`, `out_features`: sizes of the base network's input and output.
        - `hidden`: width of the base network's hidden layers.
        - `num_hidden`: number of hidden layers of the base network (at least 1).
        - `num_templates`: the embedding size T of every layer group.
        - `generator_width`, `generator_depth`: width and number of hidden layers of each
            generator MLP.
        - `key`: a PRNG key for the initialization.
        """
        self.layer_sizes = (in_features, *([hidden] * num_hidden), out_features)
        groups = layer_groups(self.layer_sizes)
        embeddings, generators = [], []
        for (first, chunks), gkey in zip(groups, jr.split(key, len(groups)), strict=True):
            fan_in, fan_out = self.layer_sizes[first], self.layer_sizes[first + 1]
            ekey, wkey = jr.split(gkey)
            # Unit variance over the chunk axis (haiku's VarianceScaling(1, "fan_in", "uniform")).
            limit = math.sqrt(3.0 / chunks)
            embeddings.append(
                jr.uniform(ekey, (chunks, num_templates), minval=-limit, maxval=limit)
            )
            generators.append(
                MLPGenerator(
                    num_templates,
                    generator_width,
                    generator_depth,
                    fan_in * fan_out + fan_out,
                    key=wkey,
                )
            )
        self.embeddings = tuple(embeddings)
        self.generators = tuple(generators)

    def layer_params(
        self,
    ) -> list[tuple[Float[Array, "fan_in fan_out"], Float[Array, " fan_out"]]]:
        """The generated `(weight, bias)` of every base-network layer, input to output."""
        params = []
        groups = zip(layer_groups(self.layer_sizes), self.embeddings, self.generators, strict=True)
        for (first, chunks), e, generator in groups:
            flat = jax.vmap(generator)(normalize_rows(e))
            for c in range(chunks):
                fan_in, fan_out = self.layer_sizes[first + c], self.layer_sizes[first + c + 1]
                weight, bias = flat[c, : fan_in * fan_out], flat[c, fan_in * fan_out :]
                params.append((weight.reshape(fan_in, fan_out), bias))
        return params

    def __call__(self, x: Float[Array, "n in"]) -> Float[Array, "n out"]:
        params = self.layer_params()
        for i, (w, b) in enumerate(params):
            x = x @ (w / math.sqrt(w.shape[0])) + b
            if i < len(params) - 1:
                x = jax.nn.relu(x)
        return x

    def embedding(self) -> Float[Array, " dim"]:
        """The normalized embedding rows of all layer groups, input to output, flattened."""
        return jnp.concatenate([normalize_rows(e) for e in self.embeddings]).reshape(-1)

    def labels(self) -> PyTree[str]:
        """Embeddings fast (meta-learned initialization), everything else meta."""
        spec = jtu.tree_map(lambda _: META, self)
        return eqx.tree_at(lambda m: m.embeddings, spec, tuple(FAST for _ in self.embeddings))


def make(config: NonlinearHypernetConfig, *, io: IOSpec, key: PRNGKeyArray) -> NonlinearHypernet:
    """Build a `NonlinearHypernet` from its config (the factory of the `nonlinear-hypernet`
    plugin), for inputs of `io.in_features` and predictions of `io.out_features`."""
    return NonlinearHypernet(
        io.in_features,
        io.out_features,
        config.hidden,
        config.num_hidden,
        config.num_templates,
        config.generator_width,
        config.generator_depth,
        key=key,
    )
