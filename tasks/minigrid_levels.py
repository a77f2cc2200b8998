"""MiniGrid's DoorKey and FourRooms levels on the pure-JAX core of `tasks.minigrid`.

Start states are drawn arithmetically (integers over index ranges, the agent's cell skipped
by shifting an index, all from one PRNG call: `tasks.minigrid.randint_from`), never by
rejection or `choice(p=mask)`: `reset` runs at every step under `autoreset_step`, so it must be
cheap. Both give MiniGrid's distribution of start states (up to `jax.random.randint`'s own
bias, below `n / 2**32` for a range of `n`); the random numbers differ, so a seed does not give
MiniGrid's layout for that seed (the fidelity tests copy MiniGrid's layouts instead).

**Deliberate differences from MiniGrid:** none in the rules or the distribution of levels;
every observation also carries the mission as tokens (`tasks.minigrid.tokenize`).

- **DoorKey-S** (`minigrid/envs/doorkey.py`): an S x S grid walled around; a wall column at
  `x = split`, `split` uniform in `[2, S - 3]`; a locked yellow door in it at `y` uniform in
  `[1, S - 3]`; the goal at `(S - 2, S - 2)`; the agent uniform over the cells left of the wall
  (inside the border), its direction uniform; a yellow key uniform over the other cells left
  of the wall. `max_steps = 10 * S * S`. Mission "use the key to open the door and then get
  to the goal".
- **FourRooms** (`minigrid/envs/fourrooms.py`): a 19 x 19 grid, four 8 x 8 rooms between
  walls at `x = 9` and `y = 9`, one gap in each of the four inner walls (uniform along it);
  the agent uniform over the 260 free cells (gaps included), direction uniform; the goal
  uniform over the other 259. `max_steps = 100`. Mission "reach the goal".
"""

import equinox as eqx
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Int, PRNGKeyArray

from .config import DoorKeyConfig, FourRoomsConfig
from .minigrid import (
    DOOR,
    EMPTY_CELL,
    GOAL_CELL,
    KEY,
    LOCKED,
    WALL_CELL,
    YELLOW,
    AbstractMiniGrid,
    MiniGridState,
    new_state,
    randint_from,
    random_words,
    tokenize,
)


def _walled(height: int, width: int) -> np.ndarray:
    """An empty `uint8 [height, width, 3]` grid with walls around."""
    grid = np.zeros((height, width, 3), np.uint8)
    grid[:, :] = EMPTY_CELL
    grid[[0, -1], :] = WALL_CELL
    grid[:, [0, -1]] = WALL_CELL
    return grid


def _put(grid: Array, x: Array, y: Array, cell) -> Array:
    """`grid` with `cell` at `(x, y)` (an elementwise select, cheaper than a scatter under
    `vmap`)."""
    h, w = grid.shape[:2]
    at = (jnp.arange(h)[:, None] == y) & (jnp.arange(w)[None, :] == x)
    return jnp.where(at[..., None], jnp.asarray(cell, jnp.uint8), grid)


class DoorKey(AbstractMiniGrid):
    """MiniGrid's DoorKey-SxS (module docstring): fetch the yellow key, unlock the door in the
    wall, reach the goal in the bottom-right corner."""

    size: int = eqx.field(static=True)
    """Side S of the grid, walls included (MiniGrid registers 5, 6, 8, 16)."""
    steps: int = eqx.field(static=True)
    """Steps after which an episode is truncated (MiniGrid: 10 * S * S)."""
    mission: bool = eqx.field(static=True)
    """Whether observations carry the mission ("use the key to open the door and then get to
    the goal")."""

    def __init__(self, size: int = 8, max_steps: int | None = None, mission: bool = False):
        """**Raises:** `ValueError` if `size < 5` (no room for a wall, a door and a key)."""
        if size < 5:
            raise ValueError(f"DoorKey: size={size} is too small; set size >= 5.")
        if max_steps is not None and max_steps < 1:
            raise ValueError(f"DoorKey: max_steps={max_steps} must be >= 1 (or None).")
        self.size = size
        self.steps = 10 * size * size if max_steps is None else max_steps
        self.mission = mission

    @property
    def max_steps(self) -> int:
        """Steps after which an episode is truncated."""
        return self.steps

    def generate(self, key: PRNGKeyArray) -> MiniGridState:
        """A start state (module docstring). Jittable and vmappable."""
        s = self.size
        words = random_words(key, 5)
        split = randint_from(words[:, 0], 2, s - 2)
        room_w = split - 1  # free columns 1 .. split - 1
        cells = room_w * (s - 2)
        agent = randint_from(words[:, 1], 0, cells)
        key_idx = randint_from(words[:, 2], 0, cells - 1)
        key_idx = key_idx + (key_idx >= agent)
        door_y = randint_from(words[:, 3], 1, s - 2)

        base = _walled(s, s)
        base[s - 2, s - 2] = GOAL_CELL
        grid = jnp.asarray(base)
        column = jnp.arange(s)[None, :, None] == split
        grid = jnp.where(column, jnp.asarray(WALL_CELL, jnp.uint8), grid)
        grid = _put(grid, split, door_y, (DOOR, YELLOW, LOCKED))
        grid = _put(grid, 1 + key_idx % room_w, 1 + key_idx // room_w, (KEY, YELLOW, 0))
        pos = jnp.stack([1 + agent % room_w, 1 + agent // room_w])
        direction = randint_from(words[:, 4], 0, 4)
        mission = tokenize("use the key to open the door and then get to the goal")
        return new_state(grid, pos, direction, mission)

    def verify(
        self, before: MiniGridState, after: MiniGridState, action: Int[Array, ""]
    ) -> Bool[Array, ""]:
        """No instruction to verify: the goal cell ends the episode."""
        del before, after, action
        return jnp.array(False)


class FourRooms(AbstractMiniGrid):
    """MiniGrid's FourRooms (module docstring): reach the goal somewhere in four rooms."""

    steps: int = eqx.field(static=True)
    """Steps after which an episode is truncated (MiniGrid: 100)."""
    mission: bool = eqx.field(static=True)
    """Whether observations carry the mission ("reach the goal")."""

    def __init__(self, max_steps: int = 100, mission: bool = False):
        """**Raises:** `ValueError` if `max_steps < 1`."""
        if max_steps < 1:
            raise ValueError(f"FourRooms: max_steps={max_steps} must be >= 1.")
        self.steps = max_steps
        self.mission = mission

    @property
    def max_steps(self) -> int:
        """Steps after which an episode is truncated."""
        return self.steps

    def generate(self, key: PRNGKeyArray) -> MiniGridState:
        """A start state (module docstring). Jittable and vmappable."""
        size, half = 19, 9
        words = random_words(key, 7)
        # The gaps: in x = 9 above and below y = 9, in y = 9 left and right of x = 9.
        offsets = randint_from(words[:, :4], 1, half)
        gap_x = jnp.stack([jnp.int32(half), offsets[1], half + offsets[2], jnp.int32(half)])
        gap_y = jnp.stack([offsets[0], jnp.int32(half), jnp.int32(half), half + offsets[3]])

        base = _walled(size, size)
        base[half, :] = WALL_CELL
        base[:, half] = WALL_CELL
        grid = jnp.asarray(base)
        for i in range(4):
            grid = _put(grid, gap_x[i], gap_y[i], EMPTY_CELL)

        free = 4 * 64 + 4

        def cell(index: Array) -> tuple[Array, Array]:
            room, offset = index // 64, index % 64
            x = (room % 2) * half + 1 + offset % 8
            y = (room // 2) * half + 1 + offset // 8
            gap = jnp.clip(index - 256, 0, 3)
            in_gap = index >= 256
            return jnp.where(in_gap, gap_x[gap], x), jnp.where(in_gap, gap_y[gap], y)

        agent = randint_from(words[:, 4], 0, free)
        goal = randint_from(words[:, 5], 0, free - 1)
        goal = goal + (goal >= agent)
        gx, gy = cell(goal)
        grid = _put(grid, gx, gy, GOAL_CELL)
        pos = jnp.stack(cell(agent))
        direction = randint_from(words[:, 6], 0, 4)
        return new_state(grid, pos, direction, tokenize("reach the goal"))

    def verify(
        self, before: MiniGridState, after: MiniGridState, action: Int[Array, ""]
    ) -> Bool[Array, ""]:
        """No instruction to verify: the goal cell ends the episode."""
        del before, after, action
        return jnp.array(False)


def make_doorkey(config: DoorKeyConfig, *, key: PRNGKeyArray) -> DoorKey:
    """DoorKey-SxS from its config (`key` unused: the level has no fixed random parts)."""
    del key
    return DoorKey(config.size, config.max_steps, config.mission)


def make_fourrooms(config: FourRoomsConfig, *, key: PRNGKeyArray) -> FourRooms:
    """FourRooms from its config (`key` unused)."""
    del key
    return FourRooms(config.max_steps, config.mission)
