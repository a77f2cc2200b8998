"""The nonlinear hypernetwork, ANIL and MAML: fast/meta split, parameter counts, forward passes,
the `features`/`predict`/`embedding` hooks, and adaptation of the fast leaves."""

import itertools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
import jaxtyping
import numpy as np
import pytest

from plugins import builtin
from zoo import (
    AbstractIdentifiable,
    AbstractMetaLearner,
    AbstractSplitForward,
    IOSpec,
    count_params,
    param_counts,
)
from zoo.config import ANILConfig, MAMLConfig, NonlinearHypernetConfig
from zoo.linear_hypernet import LinearHypernet
from zoo.mlp import ANIL, MAML
from zoo.nonlinear_hypernet import MLPGenerator, NonlinearHypernet

IN, OUT, HIDDEN, NUM_HIDDEN, T, WIDTH, DEPTH = 4, 3, 8, 3, 4, 6, 2
SIZES = (IN, *([HIDDEN] * NUM_HIDDEN), OUT)
# (group, row) of each base-network layer of the hypernets: input, 2 hidden, output.
LAYERS = [(0, 0), (1, 0), (1, 1), (2, 0)]


def _perturbed(model, key):
    """`model` with small noise added to every array leaf, so that no LayerNorm scale is one
    and no bias is zero, and their use shows in the outputs."""
    leaves, treedef = jtu.tree_flatten(eqx.filter(model, eqx.is_inexact_array))
    keys = jr.split(key, len(leaves))
    noisy = [leaf + 0.3 * jr.normal(k, leaf.shape) for leaf, k in zip(leaves, keys, strict=True)]
    return eqx.combine(jtu.tree_unflatten(treedef, noisy), model)


@pytest.fixture(scope="module")
def nonlinear() -> NonlinearHypernet:
    model = NonlinearHypernet(IN, OUT, HIDDEN, NUM_HIDDEN, T, WIDTH, DEPTH, key=jr.key(0))
    return _perturbed(model, jr.key(10))


@pytest.fixture(scope="module")
def anil() -> ANIL:
    return _perturbed(ANIL(IN, OUT, HIDDEN, NUM_HIDDEN, key=jr.key(1)), jr.key(11))


@pytest.fixture(scope="module")
def maml() -> MAML:
    return _perturbed(MAML(IN, OUT, HIDDEN, NUM_HIDDEN, key=jr.key(2)), jr.key(12))


@pytest.fixture(params=["nonlinear", "anil", "maml"])
def any_model(request) -> AbstractMetaLearner:
    return request.getfixturevalue(request.param)


def _marked(filter_tree) -> set[str]:
    """Names of the leaves where `filter_tree` is True."""
    return {jtu.keystr(path) for path, flag in jtu.tree_leaves_with_path(filter_tree) if flag}


def _leaf_names(tree) -> set[str]:
    return {jtu.keystr(path) for path, _ in jtu.tree_leaves_with_path(tree)}


def _inputs(key, n: int = 5):
    return jr.uniform(key, (n, IN), minval=-1.0, maxval=1.0)


# --- fast / meta split -------------------------------------------------------------------------


def _check_partition(model: AbstractMetaLearner, fast_names: set[str]) -> None:
    assert _marked(model.fast_filter()) == fast_names
    fast, meta = model.partition()
    assert _leaf_names(fast) == fast_names
    assert _leaf_names(meta) == _leaf_names(model) - fast_names
    # Every leaf lands in exactly one half, unchanged, and the halves combine back.
    for path, leaf in jtu.tree_leaves_with_path(fast) + jtu.tree_leaves_with_path(meta):
        original = dict(jtu.tree_leaves_with_path(model))[path]
        assert leaf is original
    assert eqx.tree_equal(eqx.combine(fast, meta), model)


def test_nonlinear_hypernet_split(nonlinear: NonlinearHypernet):
    _check_partition(nonlinear, {".embeddings[0]", ".embeddings[1]", ".embeddings[2]"})
    # No fixed-start leaf: unlike the linear hypernet there is no output bias reset per task.
    assert _marked(nonlinear.fixed_start_filter()) == set()
    # The generators (LayerNorms, hidden layers, heads) are all meta.
    _, meta = nonlinear.partition()
    assert count_params(meta.generators) == count_params(nonlinear.generators) > 0


def test_anil_split(anil: ANIL):
    last = len(SIZES) - 2
    _check_partition(anil, {f".weights[{last}]", f".biases[{last}]"})
    assert _marked(anil.fixed_start_filter()) == set()


def test_maml_split(maml: MAML):
    _check_partition(maml, _leaf_names(maml))
    _, meta = maml.partition()
    assert jtu.tree_leaves(meta) == []
    assert _marked(maml.fixed_start_filter()) == set()


# --- parameter counts --------------------------------------------------------------------------


def _mlp_count(sizes: tuple[int, ...]) -> int:
    return sum(fan_in * fan_out + fan_out for fan_in, fan_out in itertools.pairwise(sizes))


def _nonlinear_counts(
    in_features: int,
    out_features: int,
    hidden: int,
    num_hidden: int,
    t: int,
    width: int,
    depth: int,
) -> dict[str, int]:
    """Meta and fast counts of the nonlinear hypernet, from the architecture."""
    sizes = (in_features, *([hidden] * num_hidden), out_features)
    # Layer groups (first layer, rows): input, hidden (num_hidden - 1 layers), output.
    groups = [(0, 1), (1, num_hidden - 1), (num_hidden, 1)]
    generators = 0
    for first, _ in groups:
        chunk = sizes[first] * sizes[first + 1] + sizes[first + 1]  # weight and bias
        layer_norm_in = 2 * t  # scale and offset
        hidden_layers = (t * width + width + 2 * width) + (depth - 1) * (
            width * width + width + 2 * width
        )  # Linear with bias, then LayerNorm with scale and offset
        head = width * chunk  # no bias
        generators += layer_norm_in + hidden_layers + head
    embeddings = t * sum(rows for _, rows in groups)
    return {"meta": generators + embeddings, "fast": embeddings}


def test_param_counts_of_the_paper_nonlinear_hypernet():
    # Hyperteacher size (docs/authors-settings.md): 16 -> 8, hidden 128, 3 hidden layers, T = 32,
    # generator width 32, depth 4.
    model = NonlinearHypernet(16, 8, 128, 3, 32, 32, 4, key=jr.key(0))
    expected = _nonlinear_counts(16, 8, 128, 3, 32, 32, 4)
    assert param_counts(model) == expected
    assert expected == {"meta": 644_800, "fast": 128}


def test_param_counts_of_the_tiny_nonlinear_hypernet(nonlinear: NonlinearHypernet):
    assert param_counts(nonlinear) == _nonlinear_counts(
        IN, OUT, HIDDEN, NUM_HIDDEN, T, WIDTH, DEPTH
    )


def test_param_counts_of_the_paper_anil_and_maml():
    # docs/authors-settings.md, Schug 2024, hyperteacher learners (16 inputs, 8 outputs).
    anil = ANIL(16, 8, 512, 3, key=jr.key(0))
    assert param_counts(anil) == {"meta": 538_120, "fast": 4_104}
    assert param_counts(anil)["meta"] == _mlp_count((16, 512, 512, 512, 8))
    maml = MAML(16, 8, 384, 3, key=jr.key(0))
    assert param_counts(maml) == {"meta": 305_288, "fast": 305_288}
    assert param_counts(maml)["meta"] == _mlp_count((16, 384, 384, 384, 8))


def test_param_counts_of_the_tiny_mlps(anil: ANIL, maml: MAML):
    assert param_counts(anil) == {"meta": _mlp_count(SIZES), "fast": HIDDEN * OUT + OUT}
    assert param_counts(maml) == {"meta": _mlp_count(SIZES), "fast": _mlp_count(SIZES)}


# --- initialization and factories --------------------------------------------------------------


def test_mlp_initialization():
    model = ANIL(16, 8, 64, 2, key=jr.key(3))
    for w, b, fan_in, fan_out in zip(
        model.weights, model.biases, (16, 64, 64), (64, 64, 8), strict=True
    ):
        assert w.shape == (fan_in, fan_out) and b.shape == (fan_out,)
        np.testing.assert_array_equal(b, np.zeros(fan_out))
        std = 1.0 / math.sqrt(fan_in)
        # Truncated at two standard deviations of the untruncated normal (haiku's scaling).
        assert np.abs(np.asarray(w)).max() <= 2.0 * std / 0.87962566103423978 + 1e-6
        assert 0.7 * std < float(jnp.std(w)) < 1.3 * std


def test_nonlinear_generator_initialization():
    generator = MLPGenerator(32, 32, 4, 1032, key=jr.key(4))
    assert len(generator.linears) == len(generator.norms) == 4
    for linear in generator.linears:
        assert linear.weight.shape == (32, 32) and linear.bias is not None
        np.testing.assert_array_equal(linear.bias, np.zeros(32))
    for norm in (generator.in_norm, *generator.norms):
        assert norm.weight is not None and norm.bias is not None
        np.testing.assert_array_equal(norm.weight, np.ones(32))
        np.testing.assert_array_equal(norm.bias, np.zeros(32))
    assert generator.head.shape == (32, 1032)
    assert 0.9 / math.sqrt(32) < float(jnp.std(generator.head)) < 1.1 / math.sqrt(32)


def test_factories_build_the_configured_models():
    key = jr.key(5)
    nonlinear_config = NonlinearHypernetConfig(
        hidden=HIDDEN, num_hidden=1, num_templates=T, generator_width=WIDTH, generator_depth=1
    )
    io = IOSpec.vectors(IN, OUT)
    model = builtin.nonlinear_hypernet.load()(nonlinear_config, io=io, key=key)
    assert eqx.tree_equal(model, NonlinearHypernet(IN, OUT, HIDDEN, 1, T, WIDTH, 1, key=key))
    assert len(model.embeddings) == 2  # one hidden layer: no hidden group
    anil = builtin.anil.load()(ANILConfig(hidden=HIDDEN, num_hidden=1), io=io, key=key)
    assert eqx.tree_equal(anil, ANIL(IN, OUT, HIDDEN, 1, key=key))
    maml = builtin.maml.load()(MAMLConfig(hidden=HIDDEN, num_hidden=2), io=io, key=key)
    assert eqx.tree_equal(maml, MAML(IN, OUT, HIDDEN, 2, key=key))


# --- forward passes ----------------------------------------------------------------------------


def test_output_shapes_are_checked(any_model: AbstractMetaLearner):
    assert any_model(_inputs(jr.key(6))).shape == (5, OUT)
    # jaxtyping + beartype are active under pytest: an unbatched input is refused, although
    # the matrix products alone would accept it.
    with pytest.raises(jaxtyping.TypeCheckError):
        any_model(jnp.zeros((IN,)))


def test_forward_is_predict_of_features(any_model: AbstractMetaLearner):
    if not isinstance(any_model, AbstractSplitForward):
        pytest.skip(f"{type(any_model).__name__} has no split forward pass")
    x = _inputs(jr.key(7))
    np.testing.assert_array_equal(any_model(x), any_model.predict(any_model.features(x)))


def test_anil_forward_by_hand(anil: ANIL):
    x = _inputs(jr.key(8))
    h = np.asarray(x, np.float64)
    for i, (w, b) in enumerate(zip(anil.weights, anil.biases, strict=True)):
        h = h @ np.asarray(w, np.float64) + np.asarray(b, np.float64)
        if i == len(anil.weights) - 2:
            np.testing.assert_allclose(anil.features(x), np.maximum(h, 0.0), rtol=1e-5, atol=1e-5)
        if i < len(anil.weights) - 1:
            h = np.maximum(h, 0.0)
    assert anil.features(x).shape == (5, HIDDEN)
    np.testing.assert_allclose(anil(x), h, rtol=1e-5, atol=1e-5)


def test_anil_features_do_not_read_the_fast_leaves(anil: ANIL):
    x = _inputs(jr.key(9))
    fast, meta = anil.partition()
    moved = eqx.combine(jtu.tree_map(lambda a: a + 1.0, fast), meta)
    np.testing.assert_array_equal(moved.features(x), anil.features(x))
    assert not np.allclose(moved(x), anil(x))
    grads = jax.grad(lambda f: jnp.sum(eqx.combine(f, meta).features(x)))(fast)
    assert all(np.all(g == 0) for g in jtu.tree_leaves(grads))


def test_capabilities_are_marker_classes(anil: ANIL, maml: MAML):
    # Every leaf of MAML is fast, so nothing can be computed outside the inner loop; ANIL's
    # body reads no fast leaf.
    assert isinstance(anil, AbstractSplitForward) and not isinstance(maml, AbstractSplitForward)
    assert not isinstance(anil, AbstractIdentifiable) and not isinstance(maml, AbstractIdentifiable)


def _layer_norm(v: np.ndarray, scale, offset) -> np.ndarray:
    return (v - v.mean()) / np.sqrt(v.var() + 1e-5) * np.asarray(scale) + np.asarray(offset)


def _generate_by_hand(generator: MLPGenerator, e: np.ndarray) -> np.ndarray:
    h = _layer_norm(e, generator.in_norm.weight, generator.in_norm.bias)
    for linear, norm in zip(generator.linears, generator.norms, strict=True):
        h = np.asarray(linear.weight, np.float64) @ h + np.asarray(linear.bias)
        h = _layer_norm(h, norm.weight, norm.bias)
        h = np.where(h > 0, h, np.expm1(np.minimum(h, 0.0)))  # ELU
    return h @ np.asarray(generator.head, np.float64)


def test_nonlinear_layer_params_and_forward_by_hand(nonlinear: NonlinearHypernet):
    params = nonlinear.layer_params()
    assert [(w.shape, b.shape) for w, b in params] == [
        ((SIZES[i], SIZES[i + 1]), (SIZES[i + 1],)) for i in range(len(SIZES) - 1)
    ]
    assert [e.shape for e in nonlinear.embeddings] == [(1, T), (NUM_HIDDEN - 1, T), (1, T)]
    for (w, b), (g, c), fan_in, fan_out in zip(params, LAYERS, SIZES[:-1], SIZES[1:], strict=True):
        e = np.asarray(nonlinear.embeddings[g][c], np.float64)
        e = e * math.sqrt(T) / np.linalg.norm(e)
        flat = _generate_by_hand(nonlinear.generators[g], e)
        np.testing.assert_allclose(w, flat[: fan_in * fan_out].reshape(fan_in, fan_out), 1e-4, 1e-5)
        np.testing.assert_allclose(b, flat[fan_in * fan_out :], rtol=1e-4, atol=1e-5)
    # The hidden layers share a generator but not an embedding row.
    assert not np.allclose(params[1][0], params[2][0])

    x = _inputs(jr.key(14))
    h = np.asarray(x, np.float64)
    for i, (w, b) in enumerate(params):
        h = h @ np.asarray(w, np.float64) / math.sqrt(w.shape[0]) + np.asarray(b, np.float64)
        if i < len(params) - 1:
            h = np.maximum(h, 0.0)
    np.testing.assert_allclose(nonlinear(x), h, rtol=1e-4, atol=1e-4)


def test_nonlinear_generator_depends_nonlinearly_on_the_embedding(nonlinear: NonlinearHypernet):
    generator = nonlinear.generators[1]
    a, b = jr.normal(jr.key(15), (2, T))
    out_a, out_b, out_ab = generator(a), generator(b), generator(a + b)
    assert not np.allclose(out_a, out_b)
    # Not linear (a linear generator would make these equal).
    assert not np.allclose(out_ab, out_a + out_b, atol=1e-2)

    # Every group's embedding reaches the output of the base network.
    x = _inputs(jr.key(16))
    fast, meta = nonlinear.partition()
    grads = jax.grad(lambda f: jnp.sum(eqx.combine(f, meta)(x) ** 2))(fast)
    for g in grads.embeddings:
        assert np.all(np.linalg.norm(np.asarray(g), axis=-1) > 0)


@pytest.mark.parametrize(("group", "row"), [(0, 0), (1, 1), (2, 0)])
def test_nonlinear_output_is_invariant_to_positive_scaling_of_an_embedding_row(
    nonlinear: NonlinearHypernet, group: int, row: int
):
    x = _inputs(jr.key(17))
    where = lambda m: m.embeddings[group]  # noqa: E731
    scaled = eqx.tree_at(where, nonlinear, nonlinear.embeddings[group].at[row].multiply(7.5))
    np.testing.assert_allclose(scaled(x), nonlinear(x), rtol=1e-5, atol=1e-5)
    e = nonlinear.embeddings[group]
    turned = eqx.tree_at(where, nonlinear, e.at[row].set(jnp.roll(e[row], 1)))
    assert not np.allclose(turned(x), nonlinear(x), atol=1e-4)


# --- embedding() -------------------------------------------------------------------------------


def _check_embedding(model: NonlinearHypernet | LinearHypernet) -> None:
    rows = 1 + (NUM_HIDDEN - 1) + 1
    embedding = model.embedding()
    assert embedding.shape == (rows * T,)
    blocks = np.asarray(embedding).reshape(rows, T)
    np.testing.assert_allclose(np.linalg.norm(blocks, axis=-1), math.sqrt(T) * np.ones(rows), 1e-5)
    # Input group first, then the hidden rows, then the output group.
    e = np.concatenate([np.asarray(e) for e in model.embeddings])
    np.testing.assert_allclose(blocks, e * math.sqrt(T) / np.linalg.norm(e, axis=-1)[:, None], 1e-5)


def test_nonlinear_embedding(nonlinear: NonlinearHypernet):
    _check_embedding(nonlinear)


def test_linear_hypernet_embedding():
    model = LinearHypernet(IN, OUT, HIDDEN, NUM_HIDDEN, T, key=jr.key(18))
    _check_embedding(model)
    # The output bias (fast, but not a task embedding) is not part of it.
    moved = eqx.tree_at(lambda m: m.out_bias, model, model.out_bias + 1.0)
    np.testing.assert_array_equal(moved.embedding(), model.embedding())


# --- adaptation --------------------------------------------------------------------------------


def test_fast_leaves_adapt(any_model: AbstractMetaLearner):
    x = _inputs(jr.key(19), 16)
    y = jr.normal(jr.key(20), (16, OUT))
    fast, meta = any_model.partition()
    # As the inner loop does: features once, then gradient steps on the fast leaves via
    # predict, for a model with a split forward pass.
    split = isinstance(any_model, AbstractSplitForward)
    h = any_model.features(x) if split else x

    def loss(fast) -> jax.Array:
        model = eqx.combine(fast, meta)
        return jnp.mean(((model.predict(h) if split else model(h)) - y) ** 2)

    losses = [float(loss(fast))]
    for _ in range(5):
        grads = jax.grad(loss)(fast)
        fast = jtu.tree_map(lambda f, g: f - 0.02 * g, fast, grads)
        losses.append(float(loss(fast)))
    assert all(b < a for a, b in itertools.pairwise(losses)), losses
    assert losses[-1] < 0.9 * losses[0], losses
    # The meta leaves are untouched.
    assert eqx.tree_equal(eqx.combine(fast, meta).partition()[1], meta)
