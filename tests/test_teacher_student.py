"""The multi-task teacher-student task and its student, the shallow hypernetwork."""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.tree_util as jtu
import numpy as np
import pytest

from tasks.config import TeacherStudentConfig
from tasks.teacher_student import (
    TeacherStudent,
    continuous_code,
    covers_all,
    discrete_code,
    is_connected,
    make,
    masks_with,
    support_masks,
)
from zoo import IOSpec, param_counts
from zoo.config import ShallowHypernetConfig
from zoo.shallow_hypernet import ShallowHypernet
from zoo.shallow_hypernet import make as make_student

TINY = TeacherStudentConfig(
    num_modules=6,
    in_features=3,
    hidden=5,
    out_features=2,
    shots_support=4,
    shots_query=7,
    eval_h=(1, 2, 3),
)

SUPPORTS = (
    "connected",
    "disconnected",
    "connected-triples",
    "disconnected-one-hots",
    "disconnected-triples",
)


def _set(*rows: str) -> set[str]:
    return set(rows)


def _as_strings(masks: np.ndarray) -> set[str]:
    return {"".join(str(int(v)) for v in row) for row in np.asarray(masks)}


def _keys(masks: np.ndarray) -> set[bytes]:
    return {row.tobytes() for row in np.ascontiguousarray(np.asarray(masks, bool))}


ONE_HOTS = _set("100000", "010000", "001000", "000100", "000010", "000001")
RING = _set("110000", "011000", "001100", "000110", "000011", "100001")
TRIANGLES = _set("110000", "011000", "101000", "000110", "000011", "000101")

# Table A9 of Schug et al. 2024 (M = 6), read column by column.
TABLE_A9 = {
    ("discrete", "connected"): ONE_HOTS | RING,
    ("discrete", "disconnected"): ONE_HOTS | TRIANGLES,
    ("continuous", "connected"): RING,
    ("continuous", "connected-triples"): _set("111000", "001110", "100011"),
    ("continuous", "disconnected"): TRIANGLES,
    ("continuous", "disconnected-one-hots"): ONE_HOTS,
    ("continuous", "disconnected-triples"): _set("111000", "000111") | TRIANGLES,
}


@pytest.fixture(scope="module")
def tiny() -> TeacherStudent:
    return make(TINY, key=jax.random.key(0))


@pytest.fixture(scope="module")
def tiny_continuous() -> TeacherStudent:
    return make(dataclasses.replace(TINY, distribution="continuous"), key=jax.random.key(0))


# ------------------------------------------------------------------------------------ masks


@pytest.mark.parametrize(("distribution", "support"), list(TABLE_A9))
def test_table_a9(distribution, support):
    masks = support_masks(6, support, distribution)
    assert masks.dtype == bool
    assert len(masks) == len(TABLE_A9[distribution, support])  # no duplicates
    assert _as_strings(masks) == TABLE_A9[distribution, support]


def test_connected_ring_order():
    masks = support_masks(6, "connected", "continuous")
    assert ["".join(str(int(v)) for v in row) for row in masks] == [
        "110000",
        "011000",
        "001100",
        "000110",
        "000011",
        "100001",
    ]


@pytest.mark.parametrize("m", [4, 6, 8, 10])
@pytest.mark.parametrize("distribution", ["discrete", "continuous"])
@pytest.mark.parametrize("support", SUPPORTS)
def test_connectivity(m, distribution, support):
    masks = support_masks(m, support, distribution)
    assert covers_all(masks)
    assert is_connected(masks) == support.startswith("connected")


def test_is_connected_and_covers_all_small_cases():
    assert not is_connected(np.zeros((0, 4), bool))
    assert is_connected(np.array([[1, 1, 0, 0]], bool))
    # The paper's example (Section 3.2): two blocks joined only by the fifth family.
    blocks = np.array([[1, 1, 0, 0], [1, 0, 0, 0], [0, 0, 1, 1], [0, 0, 0, 1]], bool)
    assert not is_connected(blocks)
    assert is_connected(np.concatenate([blocks, [[0, 1, 1, 0]]]))
    assert covers_all(blocks)
    assert not covers_all(blocks[:2])
    assert not covers_all(np.zeros((0, 4), bool))


def test_masks_with():
    masks = masks_with(4, 2)
    assert masks.shape == (6, 4)
    assert (masks.sum(-1) == 2).all()
    assert len(_keys(masks)) == 6
    assert masks_with(4, 4).shape == (1, 4)


def test_support_masks_rejects_bad_arguments():
    with pytest.raises(ValueError, match="even"):
        support_masks(5, "connected", "discrete")
    with pytest.raises(ValueError, match="even"):
        support_masks(2, "connected", "discrete")


# ------------------------------------------------------------------------------------ codes


def test_continuous_codes_lie_on_their_mask():
    masks = jnp.asarray(support_masks(6, "connected-triples", "continuous"), jnp.float32)
    masks = jnp.tile(masks, (200, 1))
    keys = jax.random.split(jax.random.key(0), len(masks))
    codes = np.asarray(jax.jit(jax.vmap(continuous_code))(keys, masks))
    active = np.asarray(masks) > 0
    assert (codes[~active] == 0).all()
    assert (codes[active] >= 0.5).all()
    assert (codes[active] < 1.0).all()
    # The authors' (w + 1) / 2 with w = e / (sum(e) + 1): the active entries sum to less than
    # the (1 + h) / 2 of Algorithm 1's simplex weights.
    assert (codes.sum(-1) < (1 + active.sum(-1)) / 2 - 1e-3).all()
    assert codes[active].std() > 0.05  # random, not constant


def test_continuous_codes_divide_by_the_sum_plus_one():
    """The authors' formula, not Algorithm 1's: `(e / (sum(e) + 1) + 1) / 2` on the mask."""
    mask = jnp.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.0])
    for seed in range(5):
        key = jax.random.key(seed)
        e = jax.random.exponential(key, mask.shape) * mask
        expected = 0.5 * (e / (e.sum() + 1.0) + 1.0) * mask
        np.testing.assert_allclose(continuous_code(key, mask), expected, rtol=1e-6)
        algorithm_1 = 0.5 * (e / e.sum() + mask)
        assert not np.allclose(continuous_code(key, mask), algorithm_1, atol=1e-3)


def test_discrete_codes_are_unit_norm(tiny):
    for pool in tiny.pools():
        masks = jnp.asarray(tiny.pool_masks(pool), jnp.float32)
        codes = jax.vmap(discrete_code)(masks)
        np.testing.assert_allclose(jnp.linalg.norm(codes, axis=-1), 1.0, rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(codes) > 0, np.asarray(masks) > 0)


# ------------------------------------------------------------------------------------ pools


def test_pools(tiny, tiny_continuous):
    assert tiny.pools() == ("train", "test", "ood", "h_1", "h_2", "h_3")
    np.testing.assert_array_equal(tiny.pool_masks("test"), tiny.pool_masks("train"))
    assert _as_strings(tiny.pool_masks("train")) == TABLE_A9["discrete", "connected"]
    train = _keys(tiny.pool_masks("train"))
    ood = _keys(tiny.pool_masks("ood"))
    assert not train & ood
    everything = set().union(*(_keys(masks_with(6, h)) for h in (1, 2, 3)))
    assert train | ood == everything
    for h in (1, 2, 3):
        masks = tiny.pool_masks(f"h_{h}")
        assert (masks.sum(-1) == h).all()
        assert _keys(masks) == _keys(masks_with(6, h))
    # Continuous connected: the one-hots are not trained on, so they are OOD.
    assert _as_strings(tiny_continuous.pool_masks("ood")) >= ONE_HOTS
    assert not _keys(tiny_continuous.pool_masks("train")) & _keys(tiny_continuous.pool_masks("ood"))
    with pytest.raises(ValueError, match="Unknown pool"):
        tiny.pool_masks("h_4")


def test_empty_ood_pool_is_left_out():
    task = make(dataclasses.replace(TINY, eval_h=(1,)), key=jax.random.key(0))
    assert task.pools() == ("train", "test", "h_1")  # every one-hot trains in discrete mode


# ------------------------------------------------------------------------------------ episodes


@pytest.mark.parametrize("distribution", ["discrete", "continuous"])
@pytest.mark.parametrize("pool", ["train", "ood", "h_3"])
def test_sample_jit_vmap(distribution, pool):
    task = make(dataclasses.replace(TINY, distribution=distribution), key=jax.random.key(0))
    keys = jax.random.split(jax.random.key(1), 16)
    episodes = jax.jit(jax.vmap(lambda k: task.sample(k, pool)))(keys)
    assert episodes.support.x.shape == (16, 4, 3)
    assert episodes.support.y.shape == (16, 4, 2)
    assert episodes.query.x.shape == (16, 7, 3)
    assert episodes.query.y.shape == (16, 7, 2)
    assert episodes.latent.shape == (16, 6)
    assert episodes.latent.dtype == jnp.float32
    bound = np.sqrt(3.0)
    assert (jnp.abs(episodes.query.x) <= bound).all()
    # Targets: the teacher on the inputs.
    teacher = jax.vmap(task.teacher)
    np.testing.assert_allclose(
        episodes.support.y, teacher(episodes.latent, episodes.support.x), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        episodes.query.y, teacher(episodes.latent, episodes.query.x), rtol=1e-5, atol=1e-6
    )
    # Codes lie on the pool's masks.
    latent = np.asarray(episodes.latent)
    assert _keys(latent > 0) <= _keys(task.pool_masks(pool))
    if distribution == "discrete" and pool == "train":
        np.testing.assert_allclose(np.linalg.norm(latent, axis=-1), 1.0, rtol=1e-6)
    else:  # evaluation pools draw continuous codes whatever the training distribution
        assert ((latent == 0) | ((latent >= 0.5) & (latent < 1.0))).all()
    # Support and query are independent inputs.
    assert not np.allclose(episodes.support.x[:, :4], episodes.query.x[:, :4])


def test_evaluation_pools_draw_continuous_codes_in_discrete_mode(tiny):
    """As the authors' evaluation: discrete training tasks, continuous codes on every pool but
    "train" and "test"."""
    keys = jax.random.split(jax.random.key(3), 16)
    for pool in ("test", "ood", "h_2"):  # "train": test_sample_jit_vmap
        latent = np.asarray(jax.jit(jax.vmap(lambda k, p=pool: tiny.sample(k, p).latent))(keys))
        norms = np.linalg.norm(latent, axis=-1)
        if pool in ("train", "test"):
            np.testing.assert_allclose(norms, 1.0, rtol=1e-6)
        else:
            active = latent > 0
            assert (latent[active] >= 0.5).all() and (latent[active] < 1.0).all()
            assert latent[active].std() > 0.05  # random weights, not a fixed many-hot
            assert not np.allclose(norms, 1.0, atol=1e-3)


def test_sample_deterministic(tiny_continuous):
    sample = eqx.filter_jit(lambda task, key, pool: task.sample(key, pool))
    a = sample(tiny_continuous, jax.random.key(5), "train")
    b = sample(tiny_continuous, jax.random.key(5), "train")
    c = sample(tiny_continuous, jax.random.key(6), "train")
    for leaf_a, leaf_b in zip(jtu.tree_leaves(a), jtu.tree_leaves(b), strict=True):
        np.testing.assert_array_equal(leaf_a, leaf_b)
    assert not np.array_equal(a.query.x, c.query.x)
    again = make(dataclasses.replace(TINY, distribution="continuous"), key=jax.random.key(0))
    np.testing.assert_array_equal(again.module_weights, tiny_continuous.module_weights)


def test_teacher_parameters(tiny):
    assert tiny.modules().shape == (6, 3, 5)
    assert tiny.readout.shape == (5, 2)
    # The authors' hk.Linear defaults: truncated normal with sigma = 1/sqrt(fan_in), cut at
    # 2 sigma and not rescaled (std 0.8796 sigma); the modules' fan-in is M.
    m = 16
    big = make(
        dataclasses.replace(TINY, num_modules=m, in_features=40, hidden=50),
        key=jax.random.key(3),
    )
    sigma = 1 / np.sqrt(m)
    np.testing.assert_allclose(big.module_weights.std(), 0.8796 * sigma, rtol=0.03)
    assert jnp.abs(big.module_weights).max() <= 2 * sigma + 1e-6
    assert jnp.abs(big.module_weights).max() > 1.9 * sigma  # truncated at 2 sigma, not less
    np.testing.assert_allclose(big.readout.std(), 0.8796 / np.sqrt(50), rtol=0.3)
    assert jnp.abs(big.readout).max() <= 2 / np.sqrt(50) + 1e-6


def test_loss_and_metrics(tiny):
    y = tiny.sample(jax.random.key(0)).query.y
    assert float(tiny.loss(y, y)) == 0.0
    pred = y + 1.0
    assert float(tiny.loss(pred, y)) == pytest.approx(0.5)
    assert float(tiny.metrics(pred, y)["mse"]) == pytest.approx(1.0)
    assert tiny.io == IOSpec.vectors(3, 2)
    assert tiny.io.in_features == 3 and tiny.io.out_features == 2


# ------------------------------------------------------------------------------------ student


def test_student_with_teacher_parameters_reproduces_targets(tiny_continuous):
    task = tiny_continuous
    student = make_student(
        ShallowHypernetConfig(hidden=5, num_modules=6), io=task.io, key=jax.random.key(1)
    )
    episode = task.sample(jax.random.key(2), "ood")
    student = eqx.tree_at(
        lambda s: (s.module_weights, s.readout, s.code),
        student,
        (task.module_weights, task.readout, episode.latent),
    )
    np.testing.assert_array_equal(
        student(episode.query.x), task.teacher(episode.latent, episode.query.x)
    )
    np.testing.assert_allclose(student(episode.query.x), episode.query.y, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(student.modules(), task.modules())


def test_student_shapes_and_filters():
    student = ShallowHypernet(3, 2, hidden=8, num_modules=12, key=jax.random.key(0))
    assert student.module_weights.shape == (12, 3, 8)
    assert student.readout.shape == (8, 2)
    assert student.code.shape == (12,)
    assert student(jnp.ones((5, 3))).shape == (5, 2)
    embedding = student.embedding()
    assert embedding is not None
    np.testing.assert_array_equal(embedding, student.code)
    modules = student.modules()
    assert modules is not None and modules.shape == (12, 3, 8)
    for spec in (student.fast_filter(), student.fixed_start_filter()):
        assert spec.code is True
        assert spec.module_weights is False
        assert spec.readout is False
    fast, _ = student.partition()
    assert [leaf.shape for leaf in jtu.tree_leaves(fast)] == [(12,)]
    assert param_counts(student) == {"meta": 12 * 3 * 8 + 8 * 2, "fast": 12}


def test_student_init_scales_are_the_authors():
    """Modules and readout as the teacher (hk.Linear defaults: truncated normal, sigma =
    1/sqrt(fan_in), not rescaled); the fixed start code N(0, 1) (`embedding_init='constant'`)."""
    m, hidden = 16, 50
    student = ShallowHypernet(40, 2, hidden=hidden, num_modules=m, key=jax.random.key(0))
    sigma = 1 / np.sqrt(m)
    np.testing.assert_allclose(student.module_weights.std(), 0.8796 * sigma, rtol=0.03)
    assert jnp.abs(student.module_weights).max() <= 2 * sigma + 1e-6
    assert jnp.abs(student.readout).max() <= 2 / np.sqrt(hidden) + 1e-6
    wide = ShallowHypernet(1, 1, hidden=1, num_modules=4000, key=jax.random.key(1))
    np.testing.assert_allclose(wide.code.std(), 1.0, atol=0.05)
    assert jnp.abs(wide.code).max() > 2.5  # a plain normal, not truncated


def test_teacher_student_presets_draw_fresh_inputs_at_every_inner_step():
    """Paper size: a support of steps x batch inputs read in sequential minibatches (256
    fresh inputs at each of 300 inner steps); CPU scale: one fixed support used whole."""
    from runs.presets import get_preset

    for dist in ("discrete", "continuous"):
        for support in ("connected", "disconnected"):
            name = f"schug2024/teacher-student-{dist}-{support}"
            paper = get_preset(name)
            assert paper.algorithm.inner.minibatches == "sequential"
            assert (paper.algorithm.inner.steps, paper.algorithm.inner.batch) == (300, 256)
            assert paper.task.shots_support == 300 * 256
            assert paper.task.shots_query == 256
            cpu = get_preset(f"{name}-cpu")
            assert (cpu.algorithm.inner.minibatches, cpu.algorithm.inner.batch) == ("random", 0)
            assert cpu.task.shots_support == 128


def test_student_deterministic_init():
    a = ShallowHypernet(3, 2, hidden=4, num_modules=6, key=jax.random.key(0))
    b = ShallowHypernet(3, 2, hidden=4, num_modules=6, key=jax.random.key(0))
    for leaf_a, leaf_b in zip(jtu.tree_leaves(a), jtu.tree_leaves(b), strict=True):
        np.testing.assert_array_equal(leaf_a, leaf_b)
