"""The grid-world core against plain NumPy / Python references."""

import collections

import jax
import jax.numpy as jnp
import numpy as np

from tasks.gridworld import MOVES, bfs_distances, greedy_moves, move, render, value_iteration


def _random_layout(rng: np.random.Generator, h: int = 6, w: int = 7) -> np.ndarray:
    walls = rng.random((h, w)) < 0.3
    return walls


def _python_bfs(walls: np.ndarray, target: tuple[int, int]) -> np.ndarray:
    h, w = walls.shape
    dist = np.full((h, w), h * w, np.int32)
    if walls[target]:
        return dist
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


def test_moves_order():
    assert MOVES.tolist() == [[-1, 0], [0, 1], [1, 0], [0, -1]]


def test_move_stays_at_walls_and_edges():
    walls = jnp.array([[0, 1, 0], [0, 0, 0]], bool)
    at = jnp.array([0, 0])
    assert move(walls, at, MOVES[0]).tolist() == [0, 0]  # edge (up)
    assert move(walls, at, MOVES[3]).tolist() == [0, 0]  # edge (left)
    assert move(walls, at, MOVES[1]).tolist() == [0, 0]  # wall (right)
    assert move(walls, at, MOVES[2]).tolist() == [1, 0]  # free (down)
    corner = jnp.array([1, 2])
    assert move(walls, corner, MOVES[1]).tolist() == [1, 2]
    assert move(walls, corner, MOVES[2]).tolist() == [1, 2]
    assert move(walls, corner, MOVES[0]).tolist() == [0, 2]


def test_bfs_matches_python_reference():
    rng = np.random.default_rng(0)
    bfs = jax.jit(bfs_distances)
    unreachable_seen = False
    for _ in range(12):
        walls = _random_layout(rng)
        target = (int(rng.integers(walls.shape[0])), int(rng.integers(walls.shape[1])))
        expected = _python_bfs(walls, target)
        got = np.asarray(bfs(jnp.asarray(walls), jnp.array(target)))
        np.testing.assert_array_equal(got, expected)
        unreachable_seen |= bool(((expected == walls.size) & ~walls).any())
    assert unreachable_seen  # the random layouts include cut-off free cells


def test_bfs_vmaps_over_targets_and_greedy_moves():
    rng = np.random.default_rng(1)
    walls = _random_layout(rng)
    h, w = walls.shape
    targets = jnp.stack(jnp.meshgrid(jnp.arange(h), jnp.arange(w), indexing="ij"), -1)
    targets = targets.reshape(-1, 2)
    dists = jax.jit(jax.vmap(bfs_distances, in_axes=(None, 0)))(jnp.asarray(walls), targets)
    moves = jax.jit(jax.vmap(greedy_moves, in_axes=(None, 0)))(jnp.asarray(walls), dists)
    for t, (dist, mv) in enumerate(zip(np.asarray(dists), np.asarray(moves), strict=True)):
        np.testing.assert_array_equal(dist, _python_bfs(walls, tuple(targets[t].tolist())))
        for r in range(h):
            for c in range(w):
                if walls[r, c] or dist[r, c] in (0, h * w):
                    assert mv[r, c] == -1
                    continue
                # The first move in MOVES order that decreases the distance.
                expected = -1
                for i, (dr, dc) in enumerate(MOVES.tolist()):
                    nr, nc = r + dr, c + dc
                    inside = 0 <= nr < h and 0 <= nc < w
                    if inside and not walls[nr, nc] and dist[nr, nc] < dist[r, c]:
                        expected = i
                        break
                assert mv[r, c] == expected


def _numpy_value_iteration(rewards, next_state, discount, backups):
    q = np.zeros_like(rewards)
    for _ in range(backups):
        new = np.empty_like(q)
        for s in range(rewards.shape[0]):
            for a in range(rewards.shape[1]):
                new[s, a] = rewards[s, a] + discount * q[next_state[s, a]].max()
        q = new
    return q


def test_value_iteration_matches_numpy():
    rng = np.random.default_rng(2)
    vi = jax.jit(value_iteration, static_argnums=(2, 3))
    for backups in (0, 1, 5):
        rewards = rng.normal(size=(9, 3)).astype(np.float32)
        next_state = rng.integers(0, 9, size=(9, 3)).astype(np.int32)
        got = vi(jnp.asarray(rewards), jnp.asarray(next_state), 0.9, backups)
        expected = _numpy_value_iteration(rewards, next_state, 0.9, backups)
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5, atol=1e-5)


def test_value_iteration_vmaps():
    rng = np.random.default_rng(3)
    rewards = jnp.asarray(rng.normal(size=(4, 6, 2)).astype(np.float32))
    next_state = jnp.asarray(rng.integers(0, 6, size=(4, 6, 2)).astype(np.int32))
    batched = jax.jit(jax.vmap(lambda r, n: value_iteration(r, n, 0.5, 3)))(rewards, next_state)
    for i in range(4):
        expected = _numpy_value_iteration(np.asarray(rewards[i]), np.asarray(next_state[i]), 0.5, 3)
        np.testing.assert_allclose(np.asarray(batched[i]), expected, rtol=1e-5, atol=1e-5)


def test_render():
    walls = np.zeros((3, 4), bool)
    walls[0, 0] = True
    img = render(walls, agent=(1, 1), objects=[[2, 3]], object_types=[2], path=[(1, 2)], scale=6)
    assert img.shape == (18, 24, 3) and img.dtype == np.uint8
    assert (img[0, 0] != img[17, 0]).any()  # wall differs from floor
    assert (img[3 + 6, 3 + 6] == 0).all()  # agent centre is black
