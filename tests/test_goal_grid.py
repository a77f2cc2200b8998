"""The compositional goals grid world (Schug et al. 2024, 4.3; docs/specs/gridworlds.md, A2)."""

import collections

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import plugins
from plugins.builtin import compositional_goals
from tasks.config import CompositionalGoalsConfig
from tasks.goal_grid import MOVE_DELTAS, all_goals, generate_maze, make, make_split
from tasks.gridworld import MOVES

# The 7x7 maze of the authors' test (tests/data/envs/test_grid.py, test_step: maze 2 of seed
# 2022, i.e. generate_random_maze(7, seed=2024)); their goal and agent cells read as free.
AUTHORS_7x7_SEED_2024 = np.array(
    [
        [0, 0, 0, 0, 0, 0, 0],
        [0, 1, 1, 1, 1, 1, 0],
        [0, 1, 0, 0, 0, 1, 0],
        [0, 1, 1, 1, 0, 1, 0],
        [0, 0, 0, 0, 0, 1, 0],
        [0, 1, 1, 1, 1, 1, 0],
        [0, 0, 0, 0, 0, 0, 0],
    ],
    bool,
)


@pytest.fixture(scope="module")
def task():
    return make(CompositionalGoalsConfig(), key=jax.random.key(0))


@pytest.fixture(scope="module")
def episodes(task):
    keys = jax.random.split(jax.random.key(1), 24)
    sample = jax.jit(jax.vmap(task.sample, in_axes=(0, None)), static_argnums=1)
    return {pool: sample(keys, pool) for pool in ("train", "ood")}


def _python_bfs(walls: np.ndarray, target: tuple[int, int]) -> np.ndarray:
    h, w = walls.shape
    dist = np.full((h, w), h * w)
    dist[target] = 0
    queue = collections.deque([target])
    while queue:
        r, c = queue.popleft()
        for dr, dc in ((-1, 0), (0, 1), (1, 0), (0, -1)):
            nr, nc = r + dr, c + dc
            if 0 <= nr < h and 0 <= nc < w and not walls[nr, nc] and dist[nr, nc] == h * w:
                dist[nr, nc] = dist[r, c] + 1
                queue.append((nr, nc))
    return dist


def test_maze_reproduces_authors_layout():
    np.testing.assert_array_equal(generate_maze(7, seed=2024), AUTHORS_7x7_SEED_2024)


def test_mazes_match_verified_statistics(task):
    # Seeds 2020-2024 (the mazes of seed 2020): 72-75 free cells, all connected.
    walls = np.asarray(task.walls)
    dist = np.asarray(task.dist)
    for i in range(5):
        free = ~walls[i]
        assert 72 <= free.sum() <= 75
        first = int(np.flatnonzero(free.reshape(-1))[0])
        assert (dist[i, first][free] < 121).all()
        # Every free cell of every quadrant admits a start >= 11 steps away.
        assert (
            np.asarray(task.goal_cells[i]).sum(-1)
            == np.asarray(
                [free[:6, :6].sum(), free[:6, 6:].sum(), free[6:, :6].sum(), free[6:, 6:].sum()]
            )
        ).all()


def test_shortest_paths_match_python_bfs(task):
    walls = np.asarray(task.walls[0])
    for cell in np.flatnonzero(~walls.reshape(-1))[::9]:
        target = (int(cell // 11), int(cell % 11))
        ref = _python_bfs(walls, target)
        np.testing.assert_array_equal(np.asarray(task.dist[0, cell]), ref)


def test_goals_and_splits():
    goals = all_goals(2, 5, 5)
    assert goals.shape == (200, 4)
    assert tuple(goals[1]) == (0, 0, 0, 1) and tuple(goals[-1]) == (3, 1, 4, 4)
    for split in ("compositional", "non-compositional"):
        train, ood = make_split(CompositionalGoalsConfig(split=split))
        assert (len(train), len(ood)) == (150, 50)
        both = {tuple(g) for g in train} | {tuple(g) for g in ood}
        assert len(both) == 200
        for i, size in enumerate((4, 2, 5, 5)):
            if split == "compositional":
                assert set(train[:, i].tolist()) == set(range(size))
    _, ood = make_split(CompositionalGoalsConfig(split="non-compositional"))
    assert (ood[:, 0] == 3).all()
    a, _ = make_split(CompositionalGoalsConfig(seed=2021))
    b, _ = make_split(CompositionalGoalsConfig(seed=2021))
    np.testing.assert_array_equal(a, b)


def test_sample_shapes_under_jit_and_vmap(task, episodes):
    assert task.io.in_features == 847 and task.io.out_features == 6
    for ep in episodes.values():
        for split in (ep.support, ep.query):
            assert split.x.shape == (24, 120, 847) and split.x.dtype == jnp.float32
            assert split.y["action"].shape == (24, 120) and split.y["action"].dtype == jnp.int32
            assert split.y["mask"].shape == (24, 120)
        assert ep.latent.shape == (24, 20)
        np.testing.assert_array_equal(ep.latent.reshape(24, 4, 5).sum(-1), 1.0)


def test_demonstrations_follow_shortest_paths(task, episodes):
    dist = np.asarray(task.dist)
    for pool, ep in episodes.items():
        goals = np.asarray(ep.latent).reshape(-1, 4, 5).argmax(-1)
        pool_goals = {tuple(g) for g in np.asarray(task.pool_goals(pool))}
        for split in (ep.support, ep.query):
            x = np.asarray(split.x).reshape(24, 120, 11, 11, 7)
            actions, mask = np.asarray(split.y["action"]), np.asarray(split.y["mask"]) > 0
            for i in range(24):
                goal = goals[i]
                assert tuple(goal) in pool_goals
                n = int(mask[i].sum())
                assert mask[i, :n].all() and not mask[i, n:].any()
                assert n >= 12
                np.testing.assert_array_equal(x[i, 0, :, :, 5], task.walls[goal[2]])
                agent = x[i, :, :, :, 6].reshape(120, -1).argmax(-1)
                goal_cell = agent[n - 1]
                r, c = divmod(int(goal_cell), 11)
                assert 6 * (goal[0] // 2) <= r < 6 + 5 * (goal[0] // 2)
                assert 6 * (goal[0] % 2) <= c < 6 + 5 * (goal[0] % 2)
                to_goal = dist[goal[2], goal_cell].reshape(-1)
                assert to_goal[agent[0]] >= 11
                assert n == to_goal[agent[0]] + 1  # a shortest path, then the interaction
                assert actions[i, n - 1] == 4 + goal[1]
                assert (actions[i, : n - 1] < 4).all()
                assert (np.diff(to_goal[agent[:n]]) == -1).all()
                # An object of the goal's type on the goal cell, unless a distractor covers it.
                objects = x[i, 0, :, :, :5].reshape(121, 5)
                assert objects.sum(-1).max() == 1.0
                assert objects[goal_cell].sum() == 1.0


def test_masked_rows_do_not_change_loss(task, episodes):
    y = jax.tree.map(lambda a: a[0], episodes["train"].query.y)
    pred = jax.random.normal(jax.random.key(2), (120, 6))
    noise = jax.random.normal(jax.random.key(3), (120, 6)) * 10
    changed = jnp.where(y["mask"][:, None] > 0, pred, noise)
    assert jnp.allclose(task.loss(pred, y), task.loss(changed, y))
    perfect = jax.nn.one_hot(y["action"], 6) * 10
    perfect_masked = jnp.where(y["mask"][:, None] > 0, perfect, noise)
    metrics = task.metrics(perfect_masked, y)
    assert metrics["accuracy"] == 1.0 and metrics["accuracy_all"] == 1.0
    one_wrong = perfect.at[0].set(jnp.roll(perfect[0], 1))
    metrics = task.metrics(one_wrong, y)
    assert metrics["accuracy_all"] == 0.0
    assert jnp.isclose(metrics["accuracy"], 1 - 1 / y["mask"].sum())
    empty = {"action": y["action"], "mask": jnp.zeros_like(y["mask"])}
    assert task.loss(pred, empty) == 0.0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"grid_size": 8}, "odd size > 5"),
        ({"grid_size": 5}, "odd size > 5"),
        ({"num_objects": 1}, "num_objects >= 2"),
        ({"ood_fraction": 1.0}, "strictly between 0 and 1"),
        ({"max_len": 11}, "set max_len >= 12"),
        ({"num_mazes": 0}, "num_mazes >= 1"),
        ({"seed": -1}, "non-negative"),
    ],
)
def test_bad_configs_fail_with_messages(fields, message):
    with pytest.raises(ValueError, match=message):
        CompositionalGoalsConfig(**fields)


def test_max_len_too_short_for_the_mazes_names_the_value():
    with pytest.raises(ValueError, match=r"the longest one .* has (\d+) steps; set max_len >= "):
        make(CompositionalGoalsConfig(max_len=20), key=jax.random.key(0))


def test_registered_spec_builds_the_task():
    spec = plugins.task_spec("compositional-goals")  # the entry point of pyproject.toml
    assert spec == compositional_goals
    assert spec.config is CompositionalGoalsConfig
    assert spec.load() is make


def test_builds_abstractly_as_the_engine_does():
    task = eqx.filter_eval_shape(make, CompositionalGoalsConfig(), key=jax.random.key(0))
    assert task.dist.shape == (5, 121, 11, 11)
    assert task.train_goals.shape == (150, 4)


def test_move_deltas_are_the_shared_moves():
    np.testing.assert_array_equal(MOVE_DELTAS, np.asarray(MOVES))
