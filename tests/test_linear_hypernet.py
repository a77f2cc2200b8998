"""The linear hypernetwork: fast/meta split, parameter counts, generated layers, forward pass."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
import numpy as np
import pytest

from zoo import param_counts
from zoo.linear_hypernet import LinearHypernet, normalize_rows

IN, OUT, HIDDEN, NUM_HIDDEN, T = 4, 3, 8, 3, 4


@pytest.fixture(scope="module")
def model() -> LinearHypernet:
    # 3 hidden layers: the hidden group holds 2 layers sharing one generator.
    model = LinearHypernet(IN, OUT, HIDDEN, NUM_HIDDEN, T, key=jr.key(0))
    # A non-zero output bias, so that the forward pass is seen to add it.
    return eqx.tree_at(lambda m: m.out_bias, model, jnp.array([0.5, -1.0, 2.0]))


def _marked(model: LinearHypernet, filter_tree) -> set[str]:
    """Names of the leaves of `model` where `filter_tree` is True."""
    paths = jtu.tree_leaves_with_path(filter_tree)
    return {jtu.keystr(path) for path, flag in paths if flag}


def test_fast_and_meta_split(model: LinearHypernet):
    assert _marked(model, model.fast_filter()) == {
        ".embeddings[0]",
        ".embeddings[1]",
        ".embeddings[2]",
        ".out_bias",
    }
    assert _marked(model, model.fixed_start_filter()) == {".out_bias"}

    fast, meta = model.partition()
    assert all(a is b for a, b in zip(fast.embeddings, model.embeddings, strict=True))
    assert fast.out_bias is model.out_bias
    assert all(g is None for g in fast.weight_generators + fast.bias_generators)
    assert meta.out_bias is None and all(e is None for e in meta.embeddings)
    assert all(a is b for a, b in zip(meta.weight_generators, model.weight_generators, strict=True))
    # The halves combine back into the same model.
    assert eqx.tree_equal(eqx.combine(fast, meta), model)


def test_initial_output_bias_is_zero():
    model = LinearHypernet(IN, OUT, HIDDEN, NUM_HIDDEN, T, key=jr.key(1))
    np.testing.assert_array_equal(model.out_bias, np.zeros(OUT))


def test_param_counts_of_the_paper_model():
    # docs/authors-settings.md, Schug 2024: hyperteacher 16 -> 8, hidden 128, 3 hidden layers,
    # T = 32.
    model = LinearHypernet(16, 8, 128, 3, 32, key=jr.key(0))
    assert param_counts(model) == {"meta": 631_168, "fast": 136}


def test_param_counts_of_the_tiny_model(model: LinearHypernet):
    generators = T * ((IN * HIDDEN + HIDDEN) + (HIDDEN * HIDDEN + HIDDEN) + (HIDDEN * OUT + OUT))
    embeddings = T * (1 + (NUM_HIDDEN - 1) + 1)
    assert param_counts(model) == {"meta": generators + embeddings, "fast": embeddings + OUT}


def test_layer_params_shapes_and_values(model: LinearHypernet):
    params = model.layer_params()
    sizes = (IN, *([HIDDEN] * NUM_HIDDEN), OUT)
    assert [(w.shape, b.shape) for w, b in params] == [
        ((sizes[i], sizes[i + 1]), (sizes[i + 1],)) for i in range(len(sizes) - 1)
    ]
    assert [e.shape for e in model.embeddings] == [(1, T), (NUM_HIDDEN - 1, T), (1, T)]

    # By hand: layer l of group g is row c of the normalized embedding times the generator.
    layers = [(0, 0), (1, 0), (1, 1), (2, 0)]  # (group, row) of each layer
    for (w, b), (g, c), fan_in, fan_out in zip(params, layers, sizes[:-1], sizes[1:], strict=True):
        e = np.asarray(model.embeddings[g][c], np.float64)
        e = e * math.sqrt(T) / np.linalg.norm(e)
        weight = (e @ np.asarray(model.weight_generators[g])).reshape(fan_in, fan_out)
        bias = e @ np.asarray(model.bias_generators[g])
        np.testing.assert_allclose(w, weight, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b, bias, rtol=1e-5, atol=1e-6)
    # The two hidden layers share a generator but not an embedding row.
    assert not np.allclose(params[1][0], params[2][0])


def test_forward_is_an_ntk_relu_mlp(model: LinearHypernet):
    x = jr.uniform(jr.key(2), (5, IN), minval=-1.0, maxval=1.0)
    h = np.asarray(x, np.float64)
    params = model.layer_params()
    for i, (w, b) in enumerate(params):
        w, b = np.asarray(w, np.float64), np.asarray(b, np.float64)
        h = h @ w / math.sqrt(w.shape[0]) + b
        if i < len(params) - 1:
            h = np.maximum(h, 0.0)
    h = h + np.asarray(model.out_bias)
    out = model(x)
    assert out.shape == (5, OUT)
    np.testing.assert_allclose(out, h, rtol=1e-5, atol=1e-5)


def test_normalize_rows():
    e = jr.normal(jr.key(3), (3, T))
    norms = jnp.linalg.norm(normalize_rows(e), axis=-1)
    np.testing.assert_allclose(norms, math.sqrt(T) * np.ones(3), rtol=1e-6)
    # The scale carries no gradient: d/de sum(normalize_rows(e) * v) = scale * v.
    v = jr.normal(jr.key(4), (3, T))
    grad = jax.grad(lambda e: jnp.sum(normalize_rows(e) * v))(e)
    scale = math.sqrt(T) / np.linalg.norm(np.asarray(e), axis=-1, keepdims=True)
    np.testing.assert_allclose(grad, scale * np.asarray(v), rtol=1e-5)


@pytest.mark.parametrize(("group", "row"), [(0, 0), (1, 1), (2, 0)])
def test_output_is_invariant_to_positive_scaling_of_an_embedding_row(
    model: LinearHypernet, group: int, row: int
):
    x = jr.uniform(jr.key(5), (6, IN), minval=-1.0, maxval=1.0)
    scaled = eqx.tree_at(
        lambda m: m.embeddings[group],
        model,
        model.embeddings[group].at[row].multiply(7.5),
    )
    assert not np.allclose(scaled.embeddings[group], model.embeddings[group])
    np.testing.assert_allclose(scaled(x), model(x), rtol=1e-5, atol=1e-5)
    # A direction change of the same row does change the output.
    turned = eqx.tree_at(
        lambda m: m.embeddings[group],
        model,
        model.embeddings[group].at[row].set(jnp.roll(model.embeddings[group][row], 1)),
    )
    assert not np.allclose(turned(x), model(x), atol=1e-4)
