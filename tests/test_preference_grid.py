"""The compositional preferences grid world (Schug et al. 2024, Section 4.2;
docs/specs/gridworlds.md, A1)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tasks.config import CompositionalPreferencesConfig
from tasks.gridworld import value_iteration
from tasks.preference_grid import FREE_CELLS, WALLS, all_masks, make, make_split


@pytest.fixture(scope="module")
def task():
    return make(CompositionalPreferencesConfig(), key=jax.random.key(0))


def test_layout(task):
    assert WALLS.shape == (7, 7)
    assert len(FREE_CELLS) == 19
    assert task.num_states == 304
    assert task.obs_size == 490
    assert task.io.x_shape == (490,) and task.io.out_features == 5
    # The rooms are joined only through the middle row.
    assert [tuple(c) for c in FREE_CELLS if c[0] == 3] == [(3, 2), (3, 3), (3, 4)]


def test_pool_counts():
    assert len(all_masks(8, 3)) == 92
    key = jax.random.key(0)
    counts = {}
    for split, k in [
        ("compositional", 3),
        ("non-compositional", 3),
        ("connected", 2),
        ("disconnected", 2),
    ]:
        t = make(CompositionalPreferencesConfig(split=split, max_active=k), key=key)
        counts[split] = (len(t.train_masks), len(t.ood_masks))
        assert set(t.pools()) >= {"train", "test", "ood"}
    assert counts == {
        "compositional": (69, 23),
        "non-compositional": (63, 29),
        "connected": (24, 10),
        "disconnected": (20, 10),
    }
    c = make(CompositionalPreferencesConfig(split="connected", max_active=2), key=key)
    d = make(CompositionalPreferencesConfig(split="disconnected", max_active=2), key=key)
    np.testing.assert_array_equal(c.ood_masks, d.ood_masks)


def test_compositional_split_must_cover_every_module():
    masks = all_masks(8, 3)
    last = np.flatnonzero(masks[:, 7] == 1)
    permutation = np.concatenate([np.flatnonzero(masks[:, 7] == 0), last])
    with pytest.raises(ValueError, match=r"module\(s\) \[7\]"):
        make_split(8, 3, "compositional", permutation, ood_fraction=len(last) / 92 + 1e-3)


def _cell(r: int, c: int) -> int:
    return [tuple(x) for x in FREE_CELLS.tolist()].index((r, c))


def _demo(task, object_cells, rewards, agent):
    object_cells = jnp.array([_cell(*rc) for rc in object_cells])
    r, nxt = task.tables(object_cells, jnp.array(rewards, jnp.float32))
    q = value_iteration(r, nxt, 0.9, 8)
    n = task.config.num_objects
    start = _cell(*agent) * 2**n + 2**n - 1
    states, valid = task.rollout(q, nxt, jnp.array(start))
    final = int(nxt[states[-1], jnp.argmax(q[states[-1]])]) if bool(valid[-1]) else None
    return np.asarray(states), np.asarray(valid), final


def test_greedy_rollout_collects_reachable_positive_objects(task):
    # Agent at (1, 1); +1 at (1, 2), +0.5 at (2, 2), -1 at (2, 1) (top-left room), +1 at
    # (5, 5): 8 moves away through the other two objects, the last reachable step.
    states, valid, final = _demo(
        task, [(1, 2), (2, 2), (2, 1), (5, 5)], [1.0, 0.5, -1.0, 1.0], (1, 1)
    )
    assert valid.all()
    assert final is not None
    assert final % 16 == 0b0100  # only the negative object is left
    # With the far object out of reach, the agent stops (NOTHING) once both near ones are taken.
    states, valid, _ = _demo(task, [(1, 2), (2, 2), (2, 1), (5, 1)], [1.0, 0.5, -1.0, -2.0], (1, 1))
    assert valid.tolist() == [True] * 3 + [False] * 5
    assert states[2] % 16 == 0b1100
    # Nothing positive: NOTHING at once.
    _, valid, _ = _demo(task, [(1, 2), (2, 2), (2, 1), (5, 5)], [-1.0, -0.5, -1.0, -1.0], (1, 1))
    assert valid.tolist() == [True] + [False] * 7


def test_masked_loss_ignores_masked_rows(task):
    key1, key2 = jax.random.split(jax.random.key(1))
    q = jax.random.normal(key1, (6, 5))
    mask = jnp.array([1.0, 1.0, 0.0, 1.0, 0.0, 0.0])
    pred = jax.random.normal(key2, (6, 5))
    y = {"q": q, "mask": mask}
    base = task.loss(pred, y)
    changed = pred.at[jnp.array([2, 4, 5])].add(100.0)
    np.testing.assert_allclose(task.loss(changed, y), base, rtol=1e-6)
    expected = 0.5 * ((pred - q) ** 2).sum(-1)[jnp.array([0, 1, 3])].mean()
    np.testing.assert_allclose(base, expected, rtol=1e-6)
    assert task.metrics(pred, y)["mse"] == base
    none = task.loss(pred, {"q": q, "mask": jnp.zeros(6)})
    assert none == 0.0


def test_sample_jit_vmap_shapes():
    config = CompositionalPreferencesConfig(shots_support=2, shots_query=3)
    t = make(config, key=jax.random.key(0))
    keys = jax.random.split(jax.random.key(2), 3)
    ep = jax.jit(jax.vmap(t.sample))(keys)
    assert ep.support.x.shape == (3, 16, 490) and ep.query.x.shape == (3, 24, 490)
    assert ep.support.y["q"].shape == (3, 16, 5) and ep.query.y["mask"].shape == (3, 24)
    assert ep.latent.shape == (3, 8)
    for leaf in jax.tree.leaves(ep):
        assert bool(jnp.isfinite(leaf).all())
    w = np.asarray(ep.latent)
    active = w > 0
    assert ((w[active] > 0.5) & (w[active] < 1.0)).all()
    assert ((active.sum(-1) >= 1) & (active.sum(-1) <= 3)).all()
    # Step 0 of each trajectory is valid; each observation holds one agent and the walls.
    mask = np.asarray(ep.support.y["mask"]).reshape(3, 2, 8)
    assert (mask[..., 0] == 1).all()
    grid = np.asarray(ep.support.x).reshape(3, 16, 7, 7, 10)
    assert (grid[..., 8].sum((-1, -2)) == 1).all()
    np.testing.assert_array_equal(grid[0, 0, :, :, 9], WALLS)
    assert (grid[:, ::8, :, :, :8].sum((-1, -2, -3)) == 4).all()  # 4 objects at step 0


def test_pool_masks(task):
    keys = jax.random.split(jax.random.key(3), 64)
    train = {tuple(r) for r in np.asarray(task.train_masks).tolist()}
    ood = {tuple(r) for r in np.asarray(task.ood_masks).tolist()}
    for pool, allowed in (("train", train), ("ood", ood)):
        drawn = jax.jit(jax.vmap(lambda k, p=pool: task.sample_mask(k, p)))(keys)
        assert {tuple(r) for r in np.asarray(drawn).tolist()} <= allowed
    drawn = np.asarray(jax.jit(jax.vmap(lambda k: task.sample_mask(k, "ood_5")))(keys))
    assert (drawn.sum(-1) == 5).all() and len({tuple(r) for r in drawn.tolist()}) > 1
    assert task.pools() == ("train", "test", "ood", "ood_4", "ood_5", "ood_6", "ood_7", "ood_8")
    with pytest.raises(ValueError, match="Unknown pool"):
        task.sample_mask(keys[0], "ood_3")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"horizon": 0}, "horizon=0"),
        ({"num_objects": 19}, "num_objects <= 18"),
        ({"split": "non-compositional", "held_out": 8}, "held_out in 0..7"),
        ({"max_active": 9}, "max_active=9"),
        ({"split": "connected"}, "max_active=2"),
        ({"ood_fraction": 0.0}, "ood_fraction"),
    ],
)
def test_bad_configs(fields, message):
    with pytest.raises(ValueError, match=message):
        CompositionalPreferencesConfig(**fields)


def test_registered_spec_builds_the_task():
    import plugins
    from plugins.builtin import compositional_preferences

    # Under the built-in distribution's name, so that it coincides with the entry point once
    # the package is reinstalled.
    plugins.register(compositional_preferences, dist=plugins.own_distribution())
    try:
        spec = plugins.task_spec("compositional-preferences")
        task = spec.load()(spec.config(split="non-compositional"), key=jax.random.key(0))
        assert len(task.train_masks) == 63
        assert task.io == task.io.__class__(
            x_shape=(490,), x_dtype="float32", y_shape=(5,), y_dtype="float32", out_features=5
        )
    finally:
        plugins.reset()


def test_sample_inside_shard_map():
    # As the engine samples: task arrays marked device-varying, a key that is not.
    from runs.sharding import make_mesh, sharded_mean

    config = CompositionalPreferencesConfig(
        shots_support=1, shots_query=1, num_objects=1, horizon=2
    )
    t = make(config, key=jax.random.key(0))
    mesh = make_mesh(None, 2)

    def fn(task, share):
        ep = task.sample(jax.random.key(4))
        return task.loss(ep.support.y["q"], ep.query.y) + share.sum()

    out = eqx.filter_jit(lambda t, s: sharded_mean(fn, mesh, t, s))(t, jnp.zeros((2,)))
    assert bool(jnp.isfinite(out))


def test_render_a_trajectory(task):
    ep = jax.jit(lambda k: task.sample(k))(jax.random.key(5))
    img = task.render(ep.support.x[:8], ep.support.y["mask"][:8], scale=4)
    assert img.shape == (28, 28, 3) and img.dtype == np.uint8
    assert (img[:4, :4] == img[-4:, -4:]).all()  # wall corners alike


def test_build_is_traceable_and_codes():
    config = CompositionalPreferencesConfig()
    key = jax.random.key(0)
    shapes = eqx.filter_eval_shape(make, config, key=key)
    assert shapes.train_masks.shape == (69, 8) and shapes.ood_masks.shape == (23, 8)
    binary = make(CompositionalPreferencesConfig(continuous=False), key=key)
    mask = binary.train_masks[0]
    np.testing.assert_array_equal(binary.code(key, mask), mask)
