"""The grid-world core shared by the grid-world tasks: layouts as boolean wall arrays,
deterministic 4-neighbour movement, shortest-path distances, greedy moves, finite-horizon value
iteration (all pure JAX, jittable and vmappable), and a NumPy renderer.

Conventions: a layout is `walls: Bool[h, w]` (True = wall); a position is `Int[2]` = (row,
column), row 0 at the top; moves are the rows of `MOVES` (UP, RIGHT, DOWN, LEFT).
"""

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int

# Concrete even when this module is first imported while JAX traces (a factory called under
# `eqx.filter_eval_shape` imports its task module lazily).
with jax.ensure_compile_time_eval():
    MOVES: Int[Array, "4 2"] = jnp.array([[-1, 0], [0, 1], [1, 0], [0, -1]], dtype=jnp.int32)
"""The four moves, in this order: UP (-1, 0), RIGHT (0, +1), DOWN (+1, 0), LEFT (0, -1)."""

MOVE_NAMES: tuple[str, ...] = ("UP", "RIGHT", "DOWN", "LEFT")
"""Names of the rows of `MOVES`."""


def move(
    walls: Bool[Array, "h w"], pos: Int[Array, "2"], delta: Int[Array, "2"]
) -> Int[Array, "2"]:
    """One deterministic step from `pos` by `delta`.

    **Arguments:**

    - `walls`: the layout, True at walls.
    - `pos`: the current cell (row, column).
    - `delta`: the displacement, e.g. a row of `MOVES`.

    **Returns:**

    `pos + delta`, or `pos` itself when that cell is a wall or outside the grid.
    """
    h, w = walls.shape
    target = pos + delta
    inside = (target[0] >= 0) & (target[0] < h) & (target[1] >= 0) & (target[1] < w)
    r = jnp.clip(target[0], 0, h - 1)
    c = jnp.clip(target[1], 0, w - 1)
    blocked = ~inside | walls[r, c]
    return jnp.where(blocked, pos, target).astype(pos.dtype)


def _neighbour(values: Array, delta: tuple[int, int], fill) -> Array:
    """`out[r, c] = values[r + dr, c + dc]`, `fill` where that cell is outside the grid."""
    dr, dc = delta
    h, w = values.shape
    padded = jnp.pad(values, 1, constant_values=fill)
    return padded[1 + dr : 1 + dr + h, 1 + dc : 1 + dc + w]


_DELTAS: tuple[tuple[int, int], ...] = ((-1, 0), (0, 1), (1, 0), (0, -1))


def bfs_distances(walls: Bool[Array, "h w"], target: Int[Array, "2"]) -> Int[Array, "h w"]:
    """Shortest-path step counts from every cell to `target` over 4-neighbour free cells.

    Computed by iterated relaxation over shifted arrays (`dist <- min(dist, 1 + min over the
    4 neighbours)` at free cells) in a `lax.while_loop` until nothing changes; jittable and
    vmappable over `target`.

    **Arguments:**

    - `walls`: the layout, True at walls.
    - `target`: the goal cell (row, column).

    **Returns:**

    int32 distances `[h, w]`; walls, cells that cannot reach `target`, and every cell when
    `target` is itself a wall hold the sentinel `h * w` (larger than any distance).
    """
    h, w = walls.shape
    far = h * w
    free = ~walls
    dist = jnp.full((h, w), far, jnp.int32)
    dist = dist.at[target[0], target[1]].set(jnp.where(free[target[0], target[1]], 0, far))

    def relax(state):
        dist, _ = state
        best = dist
        for delta in _DELTAS:
            best = jnp.minimum(best, _neighbour(dist, delta, far) + 1)
        new = jnp.where(free, jnp.minimum(best, far), far)
        return new, jnp.any(new != dist)

    # The first relaxation is peeled off so that the loop's carry already has the type of the
    # body's output (under `shard_map`, whether it varies over devices).
    dist, _ = jax.lax.while_loop(lambda s: s[1], relax, relax((dist, None)))
    return dist


def greedy_moves(walls: Bool[Array, "h w"], dist: Int[Array, "h w"]) -> Int[Array, "h w"]:
    """The first move that brings each cell closer, by `dist` (e.g. from `bfs_distances`).

    **Arguments:**

    - `walls`: the layout, True at walls.
    - `dist`: distances `[h, w]` to some target.

    **Returns:**

    int32 `[h, w]`: at each free cell the index into `MOVES` of the first move (in `MOVES`
    order) whose target cell is free, inside the grid and has a smaller `dist`; -1 where no
    move does (the target itself, unreachable cells) and at walls.
    """
    big = jnp.iinfo(jnp.int32).max
    blocked = jnp.where(walls, big, dist)
    better = jnp.stack([_neighbour(blocked, delta, big) < dist for delta in _DELTAS])
    first = jnp.argmax(better, axis=0).astype(jnp.int32)
    return jnp.where(better.any(axis=0) & ~walls, first, -1)


def value_iteration(
    rewards: Float[Array, "s a"],
    next_state: Int[Array, "s a"],
    discount: float,
    backups: int,
) -> Float[Array, "s a"]:
    """Finite-horizon action values of a deterministic MDP by Bellman backups.

    `Q_0 = 0`, `Q_{k+1}(s, a) = r(s, a) + discount * max_a' Q_k(next(s, a), a')`, vectorised
    over all states in a `lax.fori_loop`. Termination is not modelled: an absorbing action is
    a self-loop with its reward.

    **Arguments:**

    - `rewards`: `r(s, a)`.
    - `next_state`: index of the state reached by action `a` from state `s`.
    - `discount`: the discount factor.
    - `backups`: number of backups (a static Python int).

    **Returns:**

    `Q_backups`, `[s, a]`, of the dtype of `rewards`.
    """

    def backup(_, q):
        return rewards + discount * q.max(axis=-1)[next_state]

    q = jnp.zeros_like(rewards)
    if backups == 0:
        return q
    # The first backup is peeled off so that the loop's carry already has the type of the
    # body's output (under `shard_map`, whether it varies over devices).
    return jax.lax.fori_loop(1, backups, backup, backup(0, q))


PALETTE: np.ndarray = np.array(
    [
        [230, 25, 75],
        [60, 180, 75],
        [255, 225, 25],
        [0, 130, 200],
        [245, 130, 48],
        [145, 30, 180],
        [70, 240, 240],
        [240, 50, 230],
        [210, 245, 60],
        [170, 110, 40],
        [0, 128, 128],
        [128, 128, 0],
    ],
    dtype=np.uint8,
)
"""Colours of object types/features, cycled when there are more types."""

_WALL = np.array([60, 60, 60], np.uint8)
_FLOOR = np.array([245, 245, 245], np.uint8)
_PATH = np.array([190, 190, 230], np.uint8)
_AGENT = np.array([0, 0, 0], np.uint8)


def render(
    walls: Bool[ArrayLike, "h w"],
    *,
    agent: Sequence[int] | Int[ArrayLike, "2"] | None = None,
    objects: Sequence[Sequence[int]] | Int[ArrayLike, "n 2"] | None = None,
    object_types: Sequence[int] | Int[ArrayLike, " n"] | None = None,
    path: Sequence[Sequence[int]] | Int[ArrayLike, "t 2"] | None = None,
    scale: int = 16,
) -> np.ndarray:
    """An RGB picture of a grid (NumPy, not jitted), for inspection and `zoo show`.

    **Arguments:**

    - `walls`: the layout, True at walls.
    - `agent`: the agent's cell, drawn as a black disc.
    - `objects`: cells of objects, drawn as squares inset in their cell.
    - `object_types`: the type/feature of each object (its colour, from `PALETTE`); all of the
        first colour if omitted.
    - `path`: cells to shade (e.g. a demonstrated trajectory), drawn under objects and agent.
    - `scale`: pixels per cell side.

    **Returns:**

    A `uint8` array `[h * scale, w * scale, 3]`.
    """
    walls = np.asarray(walls, bool)
    img = np.where(walls[..., None], _WALL, _FLOOR).astype(np.uint8)
    img = np.repeat(np.repeat(img, scale, axis=0), scale, axis=1)

    def cell(r: int, c: int) -> tuple[slice, slice]:
        return slice(r * scale, (r + 1) * scale), slice(c * scale, (c + 1) * scale)

    if path is not None:
        for r, c in np.asarray(path, int).reshape(-1, 2).tolist():
            img[cell(r, c)] = _PATH
    if objects is not None:
        objects = np.asarray(objects, int).reshape(-1, 2)
        types = np.zeros(len(objects), int) if object_types is None else np.asarray(object_types)
        inset = max(scale // 6, 1)
        for (r, c), t in zip(objects, types, strict=True):
            img[
                r * scale + inset : (r + 1) * scale - inset,
                c * scale + inset : (c + 1) * scale - inset,
            ] = PALETTE[int(t) % len(PALETTE)]
    if agent is not None:
        r, c = (int(v) for v in np.asarray(agent).reshape(2))
        yy, xx = np.mgrid[:scale, :scale]
        centre = (scale - 1) / 2
        disc = (yy - centre) ** 2 + (xx - centre) ** 2 <= (scale * 0.3) ** 2
        patch = img[cell(r, c)]
        patch[disc] = _AGENT
    return img


_POSITIVE = np.array([40, 160, 60], np.uint8)
_NEGATIVE = np.array([210, 50, 50], np.uint8)


def swatches(
    count: int,
    *,
    values: Sequence[float] | Float[ArrayLike, " n"] | None = None,
    marked: int | None = None,
    scale: int = 16,
) -> np.ndarray:
    """A colour key (NumPy, not jitted): one row per type/feature `0..count-1`, top to bottom,
    a square of its `PALETTE` colour, then, with `values`, a bar from a centre line (right and
    green for positive, left and red for negative, the largest magnitude filling half the
    width); row `marked` gets a black frame.

    **Returns:**

    A `uint8` array `[count * scale, 7 * scale, 3]` (`[count * scale, scale, 3]` without
    `values`).
    """
    width = scale if values is None else 7 * scale
    img = np.full((count * scale, width, 3), _FLOOR, np.uint8)
    inset = max(scale // 6, 1)
    for i in range(count):
        top = i * scale
        img[top + inset : top + scale - inset, inset : scale - inset] = PALETTE[i % len(PALETTE)]
        if i == marked:
            img[top : top + scale, :scale][[0, -1], :] = _AGENT
            img[top : top + scale, :scale][:, [0, -1]] = _AGENT
    if values is not None:
        values = np.asarray(values, float).reshape(-1)
        if len(values) != count:
            raise ValueError(f"swatches: {len(values)} values for {count} rows.")
        centre, half = 4 * scale, 3 * scale
        img[:, centre - 1 : centre + 1] = _WALL
        top_value = max(float(np.abs(values).max()), 1e-12)
        for i, v in enumerate(values):
            length = round(float(abs(v)) / top_value * (half - 1))
            rows = slice(i * scale + inset, (i + 1) * scale - inset)
            if v >= 0:
                img[rows, centre + 1 : centre + 1 + length] = _POSITIVE
            else:
                img[rows, centre - 1 - length : centre - 1] = _NEGATIVE
    return img
