"""The hyperteacher task generator: splits, configuration checks, episodes, loss and metrics."""

import dataclasses
import subprocess
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tasks.config import HyperteacherConfig
from tasks.hyperteacher import (
    Hyperteacher,
    all_tasks,
    is_compositional,
    layer_codes,
    make,
    make_split,
)
from zoo import IOSpec

TINY = HyperteacherConfig(
    num_modules=4,
    max_active=2,
    ood_h=(1, 2, 3, 4),
    in_features=5,
    hidden=8,
    out_features=3,
    shots_support=6,
    shots_query=7,
    num_norm_inputs=200,
)


def _as_set(masks: np.ndarray) -> set[bytes]:
    return {m.tobytes() for m in np.ascontiguousarray(masks)}


@pytest.fixture(scope="module")
def tiny() -> Hyperteacher:
    return make(TINY, key=jax.random.key(0))


# ------------------------------------------------------------------------------------ splits


@pytest.mark.parametrize(
    ("m", "k", "kind", "n_train", "n_ood"),
    [
        (4, 2, "compositional", 75, 25),
        (8, 2, "compositional", 972, 324),
        (8, 2, "non-compositional", 1008, 288),
        (8, 2, "connected", 576, 698),
        (8, 2, "disconnected", 104, 698),
        (8, 3, "compositional", 6348, 2116),
        (16, 2, "compositional", 13872, 4624),
    ],
)
def test_split_counts(m, k, kind, n_train, n_ood):
    train, ood = make_split(m, k, kind, seed=0)
    assert train.shape == (n_train, 2, m)
    assert ood.shape == (n_ood, 2, m)
    assert not _as_set(train) & _as_set(ood)
    if kind in ("compositional", "non-compositional"):
        assert _as_set(train) | _as_set(ood) == _as_set(all_tasks(m, k))


def test_layer_codes_order():
    codes = layer_codes(3, 2)
    expected = [[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, 0, 1], [0, 1, 1]]
    np.testing.assert_array_equal(codes, expected)
    tasks = all_tasks(3, 2)
    assert tasks.shape == (36, 2, 3)
    np.testing.assert_array_equal(tasks[1], [codes[0], codes[1]])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compositional_covers_every_module(seed):
    train, _ = make_split(8, 2, "compositional", seed=seed)
    assert is_compositional(train)
    assert train.astype(bool).any(axis=0).all()


def test_compositional_impossible_says_how_to_fix():
    # 4 tasks, 1 kept for training: one module never trains.
    with pytest.raises(ValueError, match="ood_fraction"):
        make_split(2, 1, "compositional", seed=0, ood_fraction=0.75)


def test_non_compositional_leaves_last_module_out_of_last_layer():
    train, ood = make_split(8, 2, "non-compositional")
    assert (train[:, 1, -1] == 0).all()
    assert (ood[:, 1, -1] == 1).all()
    assert not is_compositional(train)
    assert train[:, 0].astype(bool).any(axis=0).all()  # the first layer still sees every module


def test_connected_disconnected_disjoint_from_ood():
    conn, ood_c = make_split(8, 2, "connected")
    disc, ood_d = make_split(8, 2, "disconnected")
    np.testing.assert_array_equal(ood_c, ood_d)
    ood = _as_set(ood_c)
    assert not _as_set(conn) & ood
    assert not _as_set(disc) & ood
    assert _as_set(conn) | _as_set(disc) | ood == _as_set(all_tasks(8, 2))
    # Disconnected: both layers from the same half, both 1-hot or both 2-hot.
    counts = disc.sum(-1)
    assert (counts[:, 0] == counts[:, 1]).all()
    first_half = disc[..., :4].sum((-1, -2)) == counts.sum(-1)
    second_half = disc[..., 4:].sum((-1, -2)) == counts.sum(-1)
    assert (first_half | second_half).all()


def test_split_determinism():
    a_train, a_ood = make_split(8, 2, "compositional", seed=3)
    b_train, b_ood = make_split(8, 2, "compositional", seed=3)
    c_train, _ = make_split(8, 2, "compositional", seed=4)
    np.testing.assert_array_equal(a_train, b_train)
    np.testing.assert_array_equal(a_ood, b_ood)
    assert _as_set(a_train) != _as_set(c_train)


# ------------------------------------------------------------------------------------ config


@pytest.mark.parametrize(
    ("changes", "fix"),
    [
        ({"num_modules": 4, "max_active": 5, "ood_h": (1,)}, "max_active <= 4"),
        ({"max_active": 0}, "max_active >= 1"),
        ({"num_modules": 1, "max_active": 1, "ood_h": (1,)}, "num_modules >= 2"),
        ({"hidden": 0}, "hidden >= 1"),
        ({"shots_query": 0}, "shots_query >= 1"),
        ({"temperature": 0.0}, "temperature=0.1"),
        ({"ood_fraction": 1.0}, "ood_fraction=0.25"),
        ({"split": "connected", "max_active": 3}, "max_active=2"),
        ({"split": "disconnected", "num_modules": 4, "ood_h": (1,)}, "num_modules to 6"),
        ({"ood_h": (0, 1)}, "remove it"),
        ({"ood_h": (1, 9)}, "remove 9"),
    ],
)
def test_config_validation(changes, fix):
    with pytest.raises(ValueError, match=fix):
        HyperteacherConfig(**changes)


def test_package_import_is_light():
    code = "import sys, tasks, tasks.config; assert 'jax' not in sys.modules, 'jax imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# ------------------------------------------------------------------------------------ pools


def test_pools(tiny):
    assert tiny.pools() == ("train", "test", "ood", "ood_1", "ood_2", "ood_3", "ood_4")
    train = _as_set(np.asarray(tiny.pool_codes("train") > 0, np.int32))
    ood = _as_set(np.asarray(tiny.pool_codes("ood") > 0, np.int32))
    expected_train, expected_ood = make_split(4, 2, "compositional", seed=0)
    assert train == _as_set(expected_train)
    assert ood == _as_set(expected_ood)
    for h in (1, 2, 3, 4):
        codes = tiny.pool_codes(f"ood_{h}")
        masks = np.asarray(codes > 0, np.int32)
        assert (masks.sum(-1) == h).all()
        np.testing.assert_array_equal(codes, masks)  # raw 0/1 codes, not normalized
        assert not _as_set(masks) & train
        if h <= 2:
            assert _as_set(masks) <= ood
    assert tiny.pool_codes("ood_3").shape[0] == 16  # all C(4,3)^2 tasks
    with pytest.raises(ValueError, match="Unknown pool"):
        tiny.pool_codes("ood_7")


def test_empty_ood_h_pools_are_skipped():
    config = dataclasses.replace(
        TINY, num_modules=6, split="connected", ood_h=(1, 2, 5), num_norm_inputs=10
    )
    task = make(config, key=jax.random.key(0))
    assert task.pools() == ("train", "test", "ood", "ood_2", "ood_5")


def test_large_h_pool_is_random_and_capped():
    config = HyperteacherConfig(ood_h=(4,), hidden=4, num_norm_inputs=10)
    task = make(config, key=jax.random.key(1))
    codes = np.asarray(task.pool_codes("ood_4"))
    assert codes.shape == (512, 2, 8)
    assert ((codes > 0).sum(-1) == 4).all()
    assert set(np.unique(codes)) == {0.0, 1.0}  # raw 0/1 codes, not divided by sqrt(h)


def test_large_h_pool_draws_a_fresh_task_per_episode():
    """An `ood_4` pool of M = 8 (70^2 tasks) draws each episode's task afresh, uniformly over
    the 4-hot codes, standardized like any other task; a small pool samples its listed tasks."""
    config = HyperteacherConfig(ood_h=(4,), hidden=4, num_norm_inputs=10)
    task = make(config, key=jax.random.key(1))
    episodes = jax.vmap(lambda k: task.sample(k, "ood_4"))(jax.random.split(jax.random.key(2), 600))
    codes = np.asarray(episodes.latent).reshape(-1, 2, 8)
    assert ((codes > 0).sum(-1) == 4).all()
    listed = _as_set(np.asarray(task.pool_codes("ood_4") > 0, np.int32))
    drawn = _as_set((codes > 0).astype(np.int32))
    assert len(drawn) > 500 and not drawn <= listed  # fresh: not the 512 listed ones
    np.testing.assert_allclose(np.asarray(codes).mean(axis=(0, 1)), 0.5, atol=0.05)
    one = jax.tree.map(lambda a: a[0], episodes)
    code = one.latent.reshape(2, 8)
    x = jnp.concatenate([one.support.x, one.query.x])
    y = jnp.concatenate([one.support.y, one.query.y])
    np.testing.assert_allclose(y, task.targets(code, x), rtol=1e-4, atol=1e-6)


def test_codes_are_raw_k_hot(tiny):
    """Task codes are the raw 0/1 masks (the reference code), not normalized per layer: a
    layer with 2 active modules gets the plain SUM of the two modules' generated weights."""
    for pool in tiny.pools():
        codes = np.asarray(tiny.pool_codes(pool))
        np.testing.assert_array_equal(codes, (codes > 0).astype(np.float32))
    m = TINY.num_modules

    def module(layer: int, j: int) -> jnp.ndarray:
        one_hot = jnp.zeros((2, m)).at[layer, j].set(1.0)
        return tiny.hidden_weights(one_hot)

    codes = np.asarray(tiny.pool_codes("train"))
    counts = codes.sum(-1)
    # A training task with 2 modules in one layer and 1 in the other (where normalization
    # would scale the two layers differently).
    index = int(np.flatnonzero((counts[:, 0] == 2) & (counts[:, 1] == 1))[0])
    code = codes[index]
    expected = sum(module(layer, j) for layer, j in zip(*np.nonzero(code), strict=True))
    np.testing.assert_allclose(tiny.hidden_weights(jnp.asarray(code)), expected, rtol=1e-5)
    # The sampled latent is that same code: the episode's targets come from it.
    latents = jax.vmap(tiny.sample)(jax.random.split(jax.random.key(7), 64)).latent
    assert set(np.unique(np.asarray(latents))) == {0.0, 1.0}


# ------------------------------------------------------------------------------------ episodes


@pytest.mark.parametrize("pool", ["train", "test", "ood", "ood_1", "ood_3"])
def test_sample_jit_vmap_shapes(tiny, pool):
    keys = jax.random.split(jax.random.key(1), 4)
    episodes = jax.jit(jax.vmap(lambda k: tiny.sample(k, pool)))(keys)
    assert episodes.support.x.shape == (4, 6, 5)
    assert episodes.support.y.shape == (4, 6, 3)
    assert episodes.query.x.shape == (4, 7, 5)
    assert episodes.query.y.shape == (4, 7, 3)
    assert episodes.latent.shape == (4, 8)
    assert episodes.latent.dtype == jnp.float32
    for y in (episodes.support.y, episodes.query.y):
        assert (y >= 0).all()
        np.testing.assert_allclose(y.sum(-1), 1.0, rtol=1e-5)
    assert (jnp.abs(episodes.support.x) <= 1).all()
    latent = np.asarray(episodes.latent).reshape(4, 2, 4)
    assert set(np.unique(latent)) <= {0.0, 1.0}  # the raw 0/1 code the teacher uses
    pool_set = _as_set(np.asarray(tiny.pool_codes(pool) > 0, np.int32))
    assert _as_set(np.asarray(latent > 0, np.int32)) <= pool_set


def test_sample_deterministic(tiny):
    # The task as a jit argument (its arrays traced, config and pool static).
    sample = eqx.filter_jit(lambda task, key, pool: task.sample(key, pool))
    a = sample(tiny, jax.random.key(5), "ood")
    b = sample(tiny, jax.random.key(5), "ood")
    c = sample(tiny, jax.random.key(6), "ood")
    for leaf_a, leaf_b in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(leaf_a, leaf_b)
    assert not np.array_equal(a.query.x, c.query.x)
    again = make(TINY, key=jax.random.key(0))
    np.testing.assert_array_equal(again.generator, tiny.generator)


def test_targets_from_standardized_logits(tiny):
    code = tiny.pool_codes("train")[3]
    z_ref = tiny.logits(code, tiny.norm_inputs)
    np.testing.assert_allclose(z_ref.mean(0), 0.0, atol=1e-5)
    np.testing.assert_allclose(z_ref.std(0), 1.0, rtol=1e-4)
    task = make(dataclasses.replace(TINY, num_norm_inputs=1000), key=jax.random.key(2))
    x = jax.random.uniform(jax.random.key(3), (20_000, 5), minval=-1.0, maxval=1.0)
    logits = eqx.filter_jit(eqx.filter_vmap(Hyperteacher.logits, in_axes=(None, 0, None)))
    for z in logits(task, task.pool_codes("ood")[:3], x):
        np.testing.assert_allclose(z.mean(0), 0.0, atol=0.15)
        np.testing.assert_allclose(z.std(0), 1.0, atol=0.15)
    episode = tiny.sample(jax.random.key(0))
    code = episode.latent.reshape(2, 4)
    expected = jax.nn.softmax(tiny.logits(code, episode.query.x) / TINY.temperature, axis=-1)
    np.testing.assert_allclose(episode.query.y, expected, rtol=1e-5, atol=1e-7)


def test_loss_and_accuracy(tiny):
    y = tiny.sample(jax.random.key(0)).query.y
    pred = jnp.log(y)
    assert float(tiny.loss(pred, y)) == pytest.approx(0.0, abs=1e-5)
    assert float(tiny.metrics(pred, y)["accuracy"]) == 1.0
    random_pred = jax.random.normal(jax.random.key(1), y.shape)
    assert float(tiny.loss(random_pred, y)) > 0.0
    grad = jax.grad(tiny.loss)(random_pred, y)
    assert jnp.isfinite(grad).all()
    # One-hot targets (exact zeros) stay finite.
    one_hot = jax.nn.one_hot(jnp.argmax(y, -1), 3)
    assert jnp.isfinite(tiny.loss(random_pred, one_hot))
    assert tiny.io == IOSpec.vectors(5, 3)
    assert tiny.io.in_features == 5 and tiny.io.out_features == 3
