"""The compositional goals grid world of Schug et al. 2024 (Section 4.3, Appendix C.4).

A goal combines four factors: a quadrant of the grid (4), an interaction (2), a maze (5) and an
object type (5), 200 goals in all (`all_goals`, in `itertools.product` order). A task is one
goal; its data are demonstrations: the agent walks a shortest path through the goal's maze to
the object of the goal's type, placed in the goal's quadrant, and performs the goal's
interaction on it. A learner imitates the demonstrated actions.

Details follow `docs/specs/gridworlds.md` (section A2: the authors' code):

- Mazes (`generate_maze`): the authors' mazelab-style generator, reproduced draw for draw on
  NumPy's PCG64 stream; maze i is generated from `config.seed + i`, so the seed fixes the
  mazes (as the authors' run seed does). Walls are `True`.
- Splits (`make_split`): "compositional" = `jax.random.permutation(PRNGKey(seed), 200)` as in
  the authors' code, its last `int(200 * ood_fraction)` goals OOD; every value of every factor
  must occur in training, else the build fails (as the authors' assertion). "non-compositional"
  = every goal in the last quadrant is OOD. The split comes from `config.seed`, not from the
  build key: a task is built under `eqx.filter_eval_shape`, where the key is abstract and no
  Python-level check of the split could run.
- Demonstrations: the goal cell is uniform over the free cells of the goal's quadrant, the agent
  uniform over the free cells at least `grid_size` shortest-path steps from it; distractors (of
  the other types, with replacement) at distinct free cells, which may coincide with the goal
  or the agent cell (as the authors': a distractor on the goal cell overwrites its object
  channel). Actions: 0-3 moves (`MOVE_DELTAS`, the rows of `gridworld.MOVES`: UP, RIGHT,
  DOWN, LEFT), 4 + i interaction i.
  The demonstrated action at each step is the goal-rooted greedy move (the first move in that
  order that decreases the BFS distance to the goal), then the goal's interaction on the goal
  cell. **Deviation:** the authors follow the Dijkstra predecessor tree rooted at the start,
  which breaks ties between equally short paths differently on < 1% of the steps
  (docs/specs/gridworlds.md, A2.3); the goal-rooted policy is Markov and jittable. Rows after
  the successful interaction repeat it and are masked.
- Observation `[grid, grid, num_objects + 2]`: one-hot object type per object cell, the walls,
  the agent; flattened (847 floats for 11x11). The goal is not marked.
- Support and query: one demonstration each, two independent instances of the same goal, each
  `max_len` rows (120: `grid_size**2 - 1`, as the authors'). `y = {"action": int32, "mask":
  float32}`; `latent` = one-hot of each factor padded to the largest factor (`[4 * 5]`).
- Loss: softmax cross-entropy over the actions, averaged over the valid rows. Metrics:
  `accuracy` (per valid row), `accuracy_all` (1 if every valid row is right), `loss`.
"""

import itertools
from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray

from tasks._base import AbstractTask, Episode, Split
from tasks.config import CompositionalGoalsConfig
from tasks.gridworld import bfs_distances, greedy_moves, move, render, swatches
from zoo.io import IOSpec

SplitKind = Literal["compositional", "non-compositional"]

NUM_QUADRANTS = 4
NUM_MOVES = 4

MOVE_DELTAS: Int[np.ndarray, "4 2"] = np.array([[-1, 0], [0, 1], [1, 0], [0, -1]], np.int32)
"""The rows of `gridworld.MOVES` (UP, RIGHT, DOWN, LEFT) as a NumPy constant: the task is built
under `eqx.filter_eval_shape`, which may be where `tasks.gridworld` is first imported, and a
JAX array made at import time there would be a leaked tracer."""


# --------------------------------------------------------------------------------------------
# Build time: plain NumPy, deterministic, inspectable.
# --------------------------------------------------------------------------------------------


def generate_maze(
    size: int, complexity: float = 0.75, density: float = 0.75, seed: int = 0
) -> Bool[np.ndarray, "size size"]:
    """A random maze, as the authors' generator (mazelab-style) makes it.

    The grid is padded by one wall cell on each side. `int(density * (n // 2)**2)` islands (n =
    padded side) each start at a random even cell, made a wall, and take up to
    `int(complexity * 10 n)` random steps of 2 cells: a step to an empty even cell walls it and
    the cell between, and moves there; a step to a wall does nothing. The padding is cropped.
    Random numbers come from `numpy.random.default_rng(seed)` in the authors' order, so the
    mazes are theirs (e.g. `generate_maze(7, seed=2024)` is the layout of their test).

    **Arguments:**

    - `size`: side of the maze, odd.
    - `complexity`: scales the number of steps per island.
    - `density`: scales the number of islands.
    - `seed`: NumPy seed.

    **Returns:**

    A bool array `[size, size]`, `True` at walls.
    """
    if size % 2 == 0 or size < 3:
        raise ValueError(f"Maze size must be odd and >= 3, got {size}.")
    n = size + 2
    rng = np.random.default_rng(seed)
    steps = int(complexity * (5 * (n + n)))
    islands = int(density * ((n // 2) * (n // 2)))
    walls = np.zeros((n, n), bool)
    walls[0, :] = walls[-1, :] = walls[:, 0] = walls[:, -1] = True
    for _ in range(islands):
        col = int(rng.integers(0, n // 2 + 1)) * 2  # the authors draw x (column) first
        row = int(rng.integers(0, n // 2 + 1)) * 2
        walls[row, col] = True
        for _ in range(steps):
            options = []
            if col > 1:
                options.append((row, col - 2))
            if col < n - 2:
                options.append((row, col + 2))
            if row > 1:
                options.append((row - 2, col))
            if row < n - 2:
                options.append((row + 2, col))
            row2, col2 = options[int(rng.integers(0, len(options)))]
            if not walls[row2, col2]:
                walls[row2, col2] = True
                walls[(row + row2) // 2, (col + col2) // 2] = True
                row, col = row2, col2
    return walls[1:-1, 1:-1]


def quadrant_masks(size: int) -> Bool[np.ndarray, "4 size size"]:
    """The 4 quadrants of a `size x size` grid (the authors'): with `hi = size // 2 + size % 2`,
    q0 = rows, cols `< hi`; q1 = rows `< hi`, cols `>= hi`; q2 = rows `>= hi`, cols `< hi`;
    q3 = rows, cols `>= hi` (11x11: rows/cols 0-5 and 6-10)."""
    hi = size // 2 + size % 2
    low = np.arange(size) < hi
    rows = [low, low, ~low, ~low]
    cols = [low, ~low, low, ~low]
    return np.stack([r[:, None] & c[None, :] for r, c in zip(rows, cols, strict=True)])


def all_goals(num_interactions: int, num_mazes: int, num_objects: int) -> Int[np.ndarray, "n 4"]:
    """All goals `(quadrant, interaction, maze, object)`, in `itertools.product` order (int32)."""
    sizes = (NUM_QUADRANTS, num_interactions, num_mazes, num_objects)
    return np.array(list(itertools.product(*map(range, sizes))), np.int32)


def make_split(
    config: CompositionalGoalsConfig,
) -> tuple[Int[np.ndarray, "n_train 4"], Int[np.ndarray, "n_ood 4"]]:
    """Training and OOD goals of `config.split` (see the module docstring).

    **Returns:**

    `(train_goals, ood_goals)`, int32 `[n, 4]`: for "compositional" in the order of the
    authors' permutation, for "non-compositional" in `all_goals` order.

    **Raises:**

    `ValueError` if a pool would be empty, or if some value of some factor never occurs in the
    training goals of the "compositional" split.
    """
    c = config
    goals = all_goals(c.num_interactions, c.num_mazes, c.num_objects)
    n = len(goals)
    if c.split == "non-compositional":
        ood = goals[:, 0] == NUM_QUADRANTS - 1
        return goals[~ood], goals[ood]
    n_ood = int(n * c.ood_fraction)
    if not 1 <= n_ood <= n - 1:
        raise ValueError(
            f"ood_fraction={c.ood_fraction} of {n} goals leaves {n_ood} OOD and {n - n_ood} "
            "training goals; both must be >= 1: move ood_fraction towards 0.5."
        )
    with jax.ensure_compile_time_eval():  # concrete even while the task is built abstractly
        perm = np.asarray(jax.random.permutation(jax.random.PRNGKey(c.seed), n))
    train, ood = goals[perm[: n - n_ood]], goals[perm[n - n_ood :]]
    names = ("quadrant", "interaction", "maze", "object")
    sizes = (NUM_QUADRANTS, c.num_interactions, c.num_mazes, c.num_objects)
    for i, (name, size) in enumerate(zip(names, sizes, strict=True)):
        missing = sorted(set(range(size)) - set(train[:, i].tolist()))
        if missing:
            raise ValueError(
                f"The compositional split of seed={c.seed} never trains {name} {missing}: "
                "the OOD goals would not be compositions of trained values. Try another seed "
                "or lower ood_fraction."
            )
    return train, ood


# --------------------------------------------------------------------------------------------
# The task generator.
# --------------------------------------------------------------------------------------------


class CompositionalGoals(AbstractTask):
    """The compositional goals grid world (build it with `make`).

    Pools: `"train"`, `"test"` (the training goals, fresh instances: sampling is identical)
    and `"ood"`.
    """

    config: CompositionalGoalsConfig = eqx.field(static=True)
    walls: Bool[Array, "mazes h w"]
    """The mazes, `True` at walls."""
    dist: Int[Array, "mazes cells h w"]
    """Shortest-path steps from every cell to target cell `cells = row * w + col` (walls and
    unreachable cells: `h * w`)."""
    moves: Int[Array, "mazes cells h w"]
    """Index in `MOVES` of the greedy move towards the target cell; -1 where none (the target,
    walls)."""
    goal_cells: Bool[Array, "mazes 4 cells"]
    """Where a goal of each maze and quadrant may lie: the free cells of the quadrant (that admit
    a start at least `grid_size` steps away, which all do for the authors' mazes)."""
    train_goals: Int[Array, "n_train 4"]
    """Training goals `(quadrant, interaction, maze, object)` (pools "train" and "test")."""
    ood_goals: Int[Array, "n_ood 4"]
    """OOD goals (pool "ood")."""

    @property
    def io(self) -> IOSpec:
        """Inputs: flattened observations `[grid * grid * (objects + 2)]` float32; targets: an
        action index (int32; `y` also holds the row mask); predictions: logits of the
        `4 + num_interactions` actions."""
        c = self.config
        return IOSpec(
            x_shape=(c.grid_size * c.grid_size * (c.num_objects + 2),),
            x_dtype="float32",
            y_shape=(),
            y_dtype="int32",
            out_features=NUM_MOVES + c.num_interactions,
        )

    def pools(self) -> tuple[str, ...]:
        return ("train", "test", "ood")

    def pool_goals(self, pool: str = "train") -> Int[Array, "n 4"]:
        """The goals `[n, 4]` of `pool`."""
        if pool in ("train", "test"):
            return self.train_goals
        if pool == "ood":
            return self.ood_goals
        raise ValueError(f"Unknown pool {pool!r}; this task has {self.pools()}.")

    def latent(self, goal: Int[Array, "4"]) -> Float[Array, " latent"]:
        """One-hot of each factor of `goal`, padded to the largest factor, concatenated."""
        c = self.config
        width = max(NUM_QUADRANTS, c.num_interactions, c.num_mazes, c.num_objects)
        return jax.nn.one_hot(goal, width).reshape(-1)

    def demonstrate(
        self, key: PRNGKeyArray, goal: Int[Array, "4"]
    ) -> tuple[Float[Array, "rows features"], dict[str, Array]]:
        """One demonstration of `goal` in a fresh random instance.

        **Returns:**

        `(x, y)`: flattened observations before each action `[max_len, features]`, and
        `{"action": int32 [max_len], "mask": float32 [max_len]}` (mask 1 up to and including
        the successful interaction).
        """
        c = self.config
        g = c.grid_size
        quadrant, interaction, maze, obj = goal[0], goal[1], goal[2], goal[3]
        walls = self.walls[maze]
        k_goal, k_agent, k_types, k_places = jax.random.split(key, 4)
        goal_cell = _uniform_cell(k_goal, self.goal_cells[maze, quadrant])
        dist = self.dist[maze, goal_cell]
        start_ok = (dist >= g) & (dist < g * g)
        agent_cell = _uniform_cell(k_agent, start_ok.reshape(-1))
        others = jax.random.randint(k_types, (c.num_distractors,), 0, c.num_objects - 1)
        types = others + (others >= obj)  # uniform over the other types
        free = ~walls.reshape(-1)
        places = jax.random.choice(
            k_places, g * g, (c.num_distractors,), replace=False, p=free / free.sum()
        )

        objects = jnp.zeros((g * g, c.num_objects))
        objects = objects.at[goal_cell].set(jax.nn.one_hot(obj, c.num_objects))
        objects = objects.at[places].set(jax.nn.one_hot(types, c.num_objects))
        base = jnp.concatenate(
            [objects.reshape(g, g, -1), walls[..., None].astype(objects.dtype)], axis=-1
        )

        table = self.moves[maze, goal_cell]
        goal_pos = jnp.stack([goal_cell // g, goal_cell % g])
        act = NUM_MOVES + interaction

        def step(carry, _):
            pos, done = carry
            greedy = table[pos[0], pos[1]]
            action = jnp.where(greedy < 0, act, greedy)
            new_pos = move(walls, pos, jnp.asarray(MOVE_DELTAS)[jnp.maximum(greedy, 0)])
            new_pos = jnp.where(greedy < 0, pos, new_pos)
            success = (action == act) & jnp.all(pos == goal_pos)
            return (new_pos, done | success), (pos, action, ~done)

        start = jnp.stack([agent_cell // g, agent_cell % g])
        not_done = agent_cell < 0  # False, and varying like the key under shard_map
        _, (pos, action, valid) = jax.lax.scan(step, (start, not_done), None, length=c.max_len)
        agent = (jnp.arange(g)[None, :, None] == pos[:, 0, None, None]) & (
            jnp.arange(g)[None, None, :] == pos[:, 1, None, None]
        )
        obs = jnp.concatenate(
            [jnp.broadcast_to(base, (c.max_len, *base.shape)), agent[..., None]], axis=-1
        )
        x = obs.reshape(c.max_len, -1).astype(jnp.float32)
        return x, {"action": action.astype(jnp.int32), "mask": valid.astype(jnp.float32)}

    def sample(self, key: PRNGKeyArray, pool: str = "train") -> Episode:
        """Draw a goal uniformly from `pool` and two independent demonstrations of it.

        `pool` is a static Python string. Support and query: `x [max_len, features]`,
        `y = {"action": [max_len], "mask": [max_len]}`; `latent`: the goal's one-hot factors.
        """
        goals = self.pool_goals(pool)
        k_goal, k_support, k_query = jax.random.split(key, 3)
        goal = goals[jax.random.randint(k_goal, (), 0, goals.shape[0])]
        x_s, y_s = self.demonstrate(k_support, goal)
        x_q, y_q = self.demonstrate(k_query, goal)
        return Episode(
            support=Split(x=x_s, y=y_s), query=Split(x=x_q, y=y_q), latent=self.latent(goal)
        )

    def decode(self, latent: Float[Array, " latent"] | np.ndarray) -> tuple[int, ...]:
        """The goal `(quadrant, interaction, maze, object)` of an episode's `latent`."""
        c = self.config
        width = max(NUM_QUADRANTS, c.num_interactions, c.num_mazes, c.num_objects)
        return tuple(int(v) for v in np.asarray(latent).reshape(4, width).argmax(-1))

    def show(self, episode: Episode, *, scale: int = 16) -> list[tuple[np.ndarray, str]]:
        """Pictures of one (unbatched) episode (NumPy, not jitted): the support and the query
        demonstration (the maze, the objects coloured by type, the agent's start, the cells it
        walks through to the goal, framed), each titled with the goal (quadrant, interaction, maze,
        object), and a key of the object colours with the goal's type framed.

        **Returns:**

        `(uint8 RGB image, title)` panels.
        """
        c = self.config
        g, n = c.grid_size, c.num_objects
        quadrant, interaction, maze, obj = self.decode(episode.latent)
        code = f"quadrant {quadrant}, interaction {interaction},\nmaze {maze}, object {obj}"
        panels = []
        for name, split in (("support", episode.support), ("query", episode.query)):
            grid = np.asarray(split.x, np.float32).reshape(-1, g, g, n + 2)
            valid = np.asarray(split.y["mask"]) > 0
            first = grid[0]
            objects = np.argwhere(first[..., :n].sum(-1) > 0)
            types = first[objects[:, 0], objects[:, 1], :n].argmax(-1)
            agents = np.array(
                [np.argwhere(frame[..., n + 1] > 0)[0] for frame in grid[valid]], int
            ).reshape(-1, 2)
            image = render(
                first[..., n] > 0,
                agent=agents[0] if len(agents) else None,
                objects=objects,
                object_types=types,
                path=agents,
                scale=scale,
            )
            if len(agents):  # frame the goal cell, where the demonstration ends
                r, col = agents[-1] * scale
                image[r : r + scale, col : col + scale][[0, 1, -2, -1], :] = 0
                image[r : r + scale, col : col + scale][:, [0, 1, -2, -1]] = 0
            panels.append((image, f"{name} ({int(valid.sum())} steps)\n{code}"))
        panels.append(
            (swatches(n, marked=obj, scale=scale), f"object types (top=0)\ngoal: type {obj}")
        )
        return panels

    def loss(self, pred: Float[Array, "n actions"], y: dict[str, Array]) -> Float[Array, ""]:
        """Softmax cross-entropy against `y["action"]`, averaged over the rows with
        `y["mask"]` (a split without valid rows has loss 0)."""
        log_p = jax.nn.log_softmax(pred, axis=-1)
        nll = -jnp.take_along_axis(log_p, y["action"][:, None], axis=-1)[:, 0]
        mask = y["mask"]
        return jnp.sum(jnp.where(mask > 0, nll, 0.0)) / jnp.maximum(mask.sum(), 1.0)

    def metrics(
        self, pred: Float[Array, "n actions"], y: dict[str, Array]
    ) -> dict[str, Float[Array, ""]]:
        """`accuracy`: argmax agreement over the valid rows; `accuracy_all`: 1 if every valid
        row agrees (the whole demonstration followed); `loss`."""
        mask = y["mask"] > 0
        hit = jnp.argmax(pred, axis=-1) == y["action"]
        accuracy = jnp.sum(hit & mask) / jnp.maximum(mask.sum(), 1)
        return {
            "accuracy": accuracy.astype(jnp.float32),
            "accuracy_all": jnp.all(hit | ~mask).astype(jnp.float32),
            "loss": self.loss(pred, y),
        }


def _uniform_cell(key: PRNGKeyArray, allowed: Bool[Array, " cells"]) -> Int[Array, ""]:
    """A cell index drawn uniformly from the `True` entries of `allowed` (at least one)."""
    return jax.random.categorical(key, jnp.where(allowed, 0.0, -jnp.inf))


def shortest_path_tables(
    walls: Bool[np.ndarray, "mazes h w"],
) -> tuple[Int[np.ndarray, "mazes cells h w"], Int[np.ndarray, "mazes cells h w"]]:
    """Per maze and target cell, the BFS distances of every cell to the target and the greedy
    moves towards it (`gridworld.bfs_distances`, `gridworld.greedy_moves`), as NumPy arrays."""
    _, h, w = walls.shape
    cells = np.stack(np.unravel_index(np.arange(h * w), (h, w)), axis=-1).astype(np.int32)

    def per_maze(wall: Bool[Array, "h w"], targets: Int[Array, "cells 2"]):
        dist = jax.vmap(bfs_distances, in_axes=(None, 0))(wall, targets)
        return dist, jax.vmap(greedy_moves, in_axes=(None, 0))(wall, dist)

    with jax.ensure_compile_time_eval():  # concrete even while the task is built abstractly
        dist, moves = jax.vmap(per_maze, in_axes=(0, None))(
            jnp.asarray(walls, bool), jnp.asarray(cells)
        )
        return np.asarray(dist, np.int32), np.asarray(moves, np.int32)


def make(config: CompositionalGoalsConfig, *, key: PRNGKeyArray) -> CompositionalGoals:
    """Build the compositional goals grid world: the mazes and the split from `config.seed`, the
    shortest-path tables of every maze. `key` is not used (everything random at build time is
    fixed by `config.seed`, as the authors' run seed fixes it); it is there for the uniform
    factory signature.

    **Raises:**

    `ValueError` if the split fails (see `make_split`), a maze has a quadrant without a goal
    cell, fewer free cells than distractors, or a demonstration longer than `max_len`.
    """
    del key
    c = config
    g = c.grid_size
    walls = np.stack([generate_maze(g, seed=c.seed + i) for i in range(c.num_mazes)])
    dist, moves = shortest_path_tables(walls)
    free = ~walls.reshape(c.num_mazes, -1)
    reachable = dist < g * g  # [mazes, target, h, w]
    admits_start = ((dist >= g) & reachable).reshape(c.num_mazes, g * g, -1).any(-1)
    goal_cells = quadrant_masks(g).reshape(1, NUM_QUADRANTS, -1) & (free & admits_start)[:, None]
    for i in range(c.num_mazes):
        if free[i].sum() < c.num_distractors:
            raise ValueError(
                f"Maze {i} (seed {c.seed + i}) has {free[i].sum()} free cells, fewer than "
                f"num_distractors={c.num_distractors}; lower num_distractors."
            )
        for q in range(NUM_QUADRANTS):
            if not goal_cells[i, q].any():
                raise ValueError(
                    f"Maze {i} (seed {c.seed + i}) has no cell in quadrant {q} with a start "
                    f"at least grid_size={g} steps away; try another seed or grid_size."
                )
    # Longest demonstration: the farthest reachable start from any goal cell, plus the
    # interaction.
    far = np.where(reachable, dist, 0).reshape(c.num_mazes, g * g, -1).max(-1)
    longest = int(np.where(goal_cells.any(1), far, 0).max()) + 1
    if longest > c.max_len:
        raise ValueError(
            f"max_len={c.max_len} cuts demonstrations: the longest one of these mazes "
            f"(seed={c.seed}) has {longest} steps; set max_len >= {longest}."
        )
    train, ood = make_split(c)
    return CompositionalGoals(
        config=c,
        walls=jnp.asarray(walls),
        dist=jnp.asarray(dist),
        moves=jnp.asarray(moves),
        goal_cells=jnp.asarray(goal_cells),
        train_goals=jnp.asarray(train),
        ood_goals=jnp.asarray(ood),
    )
