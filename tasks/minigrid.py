"""A pure-JAX core of MiniGrid (Chevalier-Boisvert et al., Farama `minigrid` 3.2.0): the
encoding of cells, the state of an episode, the 7 actions, the agent's egocentric view with
occlusion, a mission tokenizer shared by every level, and a NumPy renderer.

The levels (`tasks.minigrid_levels`: DoorKey, FourRooms; `tasks.babyai`: single-room BabyAI
levels) subclass `AbstractMiniGrid`, which implements `reset`, `step` and the observation once;
a level only generates its start states and, where its mission needs one, says when it is
accomplished.

**Conventions.** A grid is `uint8 [height, width, 3]`, indexed `grid[y, x]`, each cell the
MiniGrid encoding `(type, colour, state)` (`OBJECT_TO_IDX`, `COLOR_TO_IDX`, `STATE_TO_IDX`); an
empty cell is `(1, 0, 0)` (MiniGrid's encoding of `None`). Positions are `(x, y)` as in
MiniGrid (x the column, y the row, y = 0 at the top); directions are MiniGrid's: 0 east (+x),
1 south (+y), 2 west, 3 north. The observation `"image"` is MiniGrid's `obs["image"]`
exactly: `uint8 [7, 7, 3]` indexed `[view_x, view_y]`, the agent at `[3, 6]` looking towards
`view_y = 0`, cells it cannot see `(0, 0, 0)`, the carried object (or an empty cell) drawn at
the agent's own cell.

**Semantics** (MiniGrid's `MiniGridEnv.step`): `left`/`right` turn; `forward` moves into an
empty, goal, lava, floor or open-door cell and stays otherwise; moving into a goal terminates
with reward `1 - 0.9 * step_count / max_steps`, into lava terminates with reward 0; `pickup`
takes a key, ball or box in front into an empty hand; `drop` puts the carried object on an
empty cell in front; `toggle` opens a closed door, closes an open one, unlocks (and opens) a
locked door only when carrying a key of the door's colour, and opens a box (a box holds
nothing in these levels, so it disappears, as MiniGrid's `Box(contains=None)` does); `done`
does nothing. Every step counts; `truncated` is `step_count >= max_steps` (also on the step
that terminates, as in MiniGrid).

**Deliberate differences from MiniGrid:** none in the step, the view or the reward (the tests
replay random and scripted actions in both and compare every observation, reward and flag).
Missions are token ids (`tokenize`: lower-case words, one fixed vocabulary `VOCAB` for every
level, `MISSION_LEN` tokens, 0-padded) rather than strings. Boxes are always empty (MiniGrid's
`Box.contains` could hold an object, none of the levels here uses that). `step` takes a key
and ignores it (no level here moves anything at random). Only the default
`agent_view_size = 7` and `see_through_walls = False` are implemented.
"""

import abc
import re

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, ArrayLike, Bool, Float, Int, PRNGKeyArray, UInt8, UInt32

from zoo.io import IOSpec

from ._base import AbstractEnvironment

# ----------------------------------------------------------------------------- encodings

OBJECT_TO_IDX: dict[str, int] = {
    "unseen": 0,
    "empty": 1,
    "wall": 2,
    "floor": 3,
    "door": 4,
    "key": 5,
    "ball": 6,
    "box": 7,
    "goal": 8,
    "lava": 9,
    "agent": 10,
}
"""MiniGrid's object types (`minigrid.core.constants.OBJECT_TO_IDX`)."""

COLOR_TO_IDX: dict[str, int] = {
    "red": 0,
    "green": 1,
    "blue": 2,
    "purple": 3,
    "yellow": 4,
    "grey": 5,
}
"""MiniGrid's colours (`minigrid.core.constants.COLOR_TO_IDX`)."""

STATE_TO_IDX: dict[str, int] = {"open": 0, "closed": 1, "locked": 2}
"""MiniGrid's door states (the third channel of a door cell)."""

COLOR_NAMES: tuple[str, ...] = tuple(COLOR_TO_IDX)
"""Colour names in index order."""

UNSEEN, EMPTY, WALL, FLOOR, DOOR, KEY, BALL, BOX, GOAL, LAVA = range(10)
RED, GREEN, BLUE, PURPLE, YELLOW, GREY = range(6)
OPEN, CLOSED, LOCKED = range(3)

ACTIONS: tuple[str, ...] = ("left", "right", "forward", "pickup", "drop", "toggle", "done")
"""MiniGrid's 7 actions, in id order."""
LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE, DONE = range(7)

DIR_TO_VEC: np.ndarray = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]], np.int32)
"""`(dx, dy)` of directions 0 east, 1 south, 2 west, 3 north."""

VIEW_SIZE = 7
"""Side of the agent's egocentric view (MiniGrid's default `agent_view_size`)."""

EMPTY_CELL: tuple[int, int, int] = (EMPTY, 0, 0)
WALL_CELL: tuple[int, int, int] = (WALL, GREY, 0)
GOAL_CELL: tuple[int, int, int] = (GOAL, GREEN, 0)

# ----------------------------------------------------------------------------- missions

VOCAB: tuple[str, ...] = (
    "<pad>",
    # MiniGrid missions
    "use", "key", "to", "open", "door", "and", "then", "get", "goal", "reach",
    # BabyAI
    "go", "the", "a", "pick", "up", "put", "next", "after", "you", "before", "object",
    "red", "green", "blue", "purple", "yellow", "grey", "ball", "box",
    "on", "your", "left", "right", "in", "front", "of", "behind",
)  # fmt: skip
"""The mission vocabulary shared by every level: token id = index, 0 the padding."""

WORD_TO_ID: dict[str, int] = {word: i for i, word in enumerate(VOCAB)}
"""Token id of each word of `VOCAB`."""

MISSION_LEN = 16
"""Tokens per mission (every level), padded with 0."""


def tokenize(mission: str) -> np.ndarray:
    """Token ids of a mission string: its lower-case words (`[a-z]+`, as BabyAI splits them)
    looked up in `VOCAB`, padded with 0 to `MISSION_LEN`. NumPy, not jitted.

    **Raises:**

    `ValueError` for a word outside `VOCAB` or a mission longer than `MISSION_LEN` words.
    """
    words = re.findall("[a-z]+", mission.lower())
    unknown = [w for w in words if w not in WORD_TO_ID or w == "<pad>"]
    if unknown:
        raise ValueError(f"tokenize: words {unknown} of {mission!r} are not in the vocabulary.")
    if len(words) > MISSION_LEN:
        raise ValueError(f"tokenize: {mission!r} has {len(words)} > {MISSION_LEN} words.")
    ids = np.zeros(MISSION_LEN, np.int32)
    ids[: len(words)] = [WORD_TO_ID[w] for w in words]
    return ids


def detokenize(ids) -> str:
    """The mission string of token ids (padding dropped)."""
    return " ".join(VOCAB[int(i)] for i in np.asarray(ids).reshape(-1) if int(i) != 0)


def compact_tokens(tokens: Int[Array, " n"]) -> Int[Array, " mission"]:
    """Token ids `tokens` with their zeros removed (the rest in order), padded with 0 to
    `MISSION_LEN`: how a level assembles a mission from optional parts inside `jit`."""
    keep = tokens != 0
    slot = jnp.where(keep, jnp.cumsum(keep) - 1, MISSION_LEN)
    return jnp.zeros(MISSION_LEN, jnp.int32).at[slot].set(tokens.astype(jnp.int32), mode="drop")


# ----------------------------------------------------------------------------- randomness


def random_words(key: PRNGKeyArray, n: int) -> UInt32[Array, "2 n"]:
    """Random bits for `n` integers (`randint_from`): one draw of the PRNG for all of them.

    A reset runs at every step under `autoreset_step`, and on CPU the PRNG's hash dominates
    it when each integer is drawn with its own `jax.random.split` and `randint`."""
    return jax.random.bits(key, (2, n), jnp.uint32)


def randint_from(words: UInt32[Array, "2 ..."], low, high) -> Int[Array, "..."]:
    """Integers uniform in `[low, high)` (traced bounds allowed, `high - low < 2**16`) from
    `random_words`, by `jax.random.randint`'s own method (two 32-bit words per integer,
    `(hi mod n) * (2**32 mod n) + lo mod n`, bias below `n / 2**32`)."""
    low = jnp.asarray(low, jnp.int32)
    span = (jnp.asarray(high, jnp.int32) - low).astype(jnp.uint32)
    multiplier = (jnp.uint32(1 << 16) % span) ** 2 % span
    offset = ((words[0] % span) * multiplier + words[1] % span) % span
    return low + offset.astype(jnp.int32)


# ----------------------------------------------------------------------------- state


class MiniGridState(eqx.Module):
    """One episode of a MiniGrid level, as arrays (conventions in the module docstring).

    The last three fields serve BabyAI's instruction verifier (`tasks.babyai`): the objects an
    instruction refers to are followed as they are picked up and dropped; other levels leave
    them False.
    """

    grid: UInt8[Array, "height width 3"]
    """The cells, `grid[y, x] = (type, colour, state)`; the agent is not drawn in it."""
    pos: Int[Array, "2"]
    """The agent's cell `(x, y)`."""
    direction: Int[Array, ""]
    """The agent's direction, 0 east, 1 south, 2 west, 3 north."""
    carrying: UInt8[Array, "3"]
    """The carried object's encoding; `(1, 0, 0)` (empty) when the hand is empty."""
    step_count: Int[Array, ""]
    """Steps taken in this episode."""
    mission: Int[Array, " mission"]
    """The mission's token ids (`tokenize`)."""
    tracked: Bool[Array, "height width"]
    """Cells holding an object of the instruction's object set (they move with the objects)."""
    carrying_tracked: Bool[Array, ""]
    """Whether the carried object belongs to the instruction's object set."""
    goal_cells: Bool[Array, "height width"]
    """BabyAI `GoToInstr`'s positions of its objects: set at reset, refreshed from `tracked`
    after every `drop` action (MiniGrid's `update_objs_poss`), stale in between."""


def new_state(
    grid: ArrayLike,
    pos: ArrayLike | tuple[int, int],
    direction: ArrayLike,
    mission: ArrayLike,
    tracked: ArrayLike | None = None,
    goal_cells: ArrayLike | None = None,
) -> MiniGridState:
    """A state at step 0 with an empty hand (`tracked`/`goal_cells` default to all False)."""
    grid = jnp.asarray(grid, jnp.uint8)
    h, w = grid.shape[:2]
    none = jnp.zeros((h, w), bool)
    return MiniGridState(
        grid=grid,
        pos=jnp.asarray(pos, jnp.int32),
        direction=jnp.asarray(direction, jnp.int32),
        carrying=jnp.array(EMPTY_CELL, jnp.uint8),
        step_count=jnp.array(0, jnp.int32),
        mission=jnp.asarray(mission, jnp.int32),
        tracked=none if tracked is None else jnp.asarray(tracked, bool),
        carrying_tracked=jnp.array(False),
        goal_cells=none if goal_cells is None else jnp.asarray(goal_cells, bool),
    )


# ----------------------------------------------------------------------------- view


def _view_coords(pos: Array, direction: Array) -> tuple[Array, Array]:
    """World `(x, y)` of each view cell, both `int32 [7 (view_x), 7 (view_y)]`."""
    vec = jnp.asarray(DIR_TO_VEC)
    fwd = vec[direction]
    right = vec[(direction + 1) % 4]
    vx = jnp.arange(VIEW_SIZE)[:, None]
    vy = jnp.arange(VIEW_SIZE)[None, :]
    ahead = VIEW_SIZE - 1 - vy
    side = vx - VIEW_SIZE // 2
    x = pos[0] + ahead * fwd[0] + side * right[0]
    y = pos[1] + ahead * fwd[1] + side * right[1]
    return x, y


def row_table(n: int) -> np.ndarray:
    """MiniGrid's `process_vis` on one row of `n` cells, for every case (`visibility` looks
    rows up in it): for the cells lit on entry (`m`, bits) and
    the cells that can be seen past (`t`, bits), the lit cells after the row (low `n` bits) and
    the cells of the next row it lights (high `n` bits), at `table[m << n | t]`. The loops
    are MiniGrid's."""
    table = np.zeros(1 << (2 * n), np.int32)
    for m_bits in range(1 << n):
        for t_bits in range(1 << n):
            m = [bool(m_bits >> i & 1) for i in range(n)]
            t = [bool(t_bits >> i & 1) for i in range(n)]
            up = [False] * n
            for i in range(n - 1):
                if m[i] and t[i]:
                    m[i + 1] = up[i + 1] = up[i] = True
            for i in reversed(range(1, n)):
                if m[i] and t[i]:
                    m[i - 1] = up[i - 1] = up[i] = True
            lit = sum(1 << i for i in range(n) if m[i])
            above = sum(1 << i for i in range(n) if up[i])
            table[m_bits << n | t_bits] = lit | above << n
    return table


_ROW_TABLE: np.ndarray = row_table(VIEW_SIZE)


def visibility(see: Bool[Array, "n n"]) -> Bool[Array, "n n"]:
    """MiniGrid's occlusion (`Grid.process_vis`, `see_through_walls=False`) on a view indexed
    `[view_x, view_y]` with the agent at `[n // 2, n - 1]`: which cells the agent sees, given
    which cells it can see past (`see`; False at walls and closed or locked doors).

    Row by row from the agent's row away from it, light spreads left to right then right to
    left along the row through cells it can see past, and from each such lit cell to the cells
    beyond it and beside those. Each row is one lookup in a table of MiniGrid's own loops over
    a row (`row_table`, all 2^7 x 2^7 cases), so the whole view costs 7 small gathers and no
    data-dependent control flow.
    """
    n = see.shape[0]
    table = jnp.asarray(_ROW_TABLE if n == VIEW_SIZE else row_table(n))
    weights = jnp.left_shift(1, jnp.arange(n, dtype=jnp.int32))
    see_bits = jnp.sum(see.astype(jnp.int32) * weights[:, None], axis=0)  # [view_y]
    entering = jnp.int32(1 << (n // 2))
    lit_rows = [jnp.int32(0)] * n
    for j in reversed(range(n)):
        out = table[(entering << n) | see_bits[j]]
        lit_rows[j] = out & ((1 << n) - 1)
        entering = out >> n
    lit = jnp.stack(lit_rows)  # [view_y]
    return ((lit[None, :] >> jnp.arange(n, dtype=jnp.int32)[:, None]) & 1).astype(bool)


def view(state: MiniGridState) -> tuple[UInt8[Array, "7 7 3"], Bool[Array, "7 7"]]:
    """The agent's egocentric view and visibility mask, both indexed `[view_x, view_y]`: the
    encoded cells (walls outside the grid; the carried object or an empty cell at the agent's
    own cell `[3, 6]`; unseen cells `(0, 0, 0)`) and which cells it sees."""
    h, w = state.grid.shape[:2]
    x, y = _view_coords(state.pos, state.direction)
    inside = (x >= 0) & (x < w) & (y >= 0) & (y < h)
    cells = state.grid[jnp.clip(y, 0, h - 1), jnp.clip(x, 0, w - 1)]
    cells = jnp.where(inside[..., None], cells, jnp.array(WALL_CELL, jnp.uint8))
    kind, door_state = cells[..., 0], cells[..., 2]
    opaque = (kind == WALL) | ((kind == DOOR) & (door_state != OPEN))
    seen = visibility(~opaque)
    agent = (jnp.arange(VIEW_SIZE)[:, None] == VIEW_SIZE // 2) & (
        jnp.arange(VIEW_SIZE)[None, :] == VIEW_SIZE - 1
    )
    cells = jnp.where(agent[..., None], state.carrying, cells)
    return jnp.where(seen[..., None], cells, jnp.uint8(0)), seen


# ----------------------------------------------------------------------------- environment


class AbstractMiniGrid(AbstractEnvironment):
    """A MiniGrid level: MiniGrid's step, view and reward written once; a level says how its
    episodes start (`generate`) and, for an instruction, when it is accomplished (`verify`).

    Observations: `{"image": uint8 [7, 7, 3], "direction": int32 [], "mission": int32
    [MISSION_LEN]}`; `"mission"` only where the level shows it (`mission`): BabyAI levels
    always, MiniGrid levels on request (their agents, as RIMs' and rl-starter-files', read no
    mission; `docs/specs/meta-rims.md`, B3). Every mission has `MISSION_LEN` tokens over
    one vocabulary, so that one agent can act in every level that shows one.
    """

    mission: eqx.AbstractVar[bool]
    """Whether observations carry the mission's tokens."""

    @property
    @abc.abstractmethod
    def max_steps(self) -> int:
        """Steps after which an episode is truncated."""

    @abc.abstractmethod
    def generate(self, key: PRNGKeyArray) -> MiniGridState:
        """A start state of the level (step 0, empty hand). Jittable and vmappable."""

    @abc.abstractmethod
    def verify(
        self, before: MiniGridState, after: MiniGridState, action: Int[Array, ""]
    ) -> Bool[Array, ""]:
        """Whether the step `before -> after` by `action` accomplishes the level's
        instruction (BabyAI's verifier); False for levels without one (their goal cell ends
        them instead)."""

    @property
    def io(self) -> IOSpec:
        """`IOSpec.environment(view=(7, 7, 3), actions=7, mission_len=MISSION_LEN,
        mission_vocab=len(VOCAB))`, without the mission where the level shows none."""
        return IOSpec.environment(
            view=(VIEW_SIZE, VIEW_SIZE, 3),
            actions=len(ACTIONS),
            mission_len=MISSION_LEN if self.mission else None,
            mission_vocab=len(VOCAB) if self.mission else None,
        )

    def observe(self, state: MiniGridState) -> dict[str, Array]:
        """The observation of `state` (MiniGrid's `gen_obs`): a function of the state alone,
        so `autoreset_step` observes only the state it keeps."""
        image, _ = view(state)
        obs = {"image": image, "direction": state.direction}
        return obs | {"mission": state.mission} if self.mission else obs

    def reset(self, key: PRNGKeyArray) -> tuple[MiniGridState, dict[str, Array]]:
        """A fresh episode `(state, observation)`. Jittable and vmappable over `key`."""
        state = self.generate(key)
        return state, self.observe(state)

    def step(
        self, state: MiniGridState, action: Int[Array, ""], key: PRNGKeyArray
    ) -> tuple[MiniGridState, dict[str, Array], Float[Array, ""], Bool[Array, ""], Bool[Array, ""]]:
        """MiniGrid's step (module docstring), then the level's `verify`: `(state,
        observation, reward, terminated, truncated)`. `key` is unused (the levels here move
        nothing at random)."""
        del key
        after, reached_goal, lava = _core_step(state, action)
        success = self.verify(state, after, action)
        terminated = reached_goal | lava | success
        reward = 1.0 - 0.9 * after.step_count.astype(jnp.float32) / self.max_steps
        reward = jnp.where(reached_goal | success, reward, 0.0).astype(jnp.float32)
        truncated = after.step_count >= self.max_steps
        return after, self.observe(after), reward, terminated, truncated

    def mission_text(self, state: MiniGridState) -> str:
        """The mission of one (unbatched, concrete) state as words."""
        return detokenize(state.mission)

    def show(self, state: MiniGridState) -> np.ndarray:
        """An RGB picture of `state` (NumPy): the grid, the agent as a red triangle pointing
        its way, the cells it sees shaded, the carried object in the bottom-right corner of
        the agent's cell."""
        return render(state)


def _core_step(
    state: MiniGridState, action: Int[Array, ""]
) -> tuple[MiniGridState, Bool[Array, ""], Bool[Array, ""]]:
    """MiniGrid's `MiniGridEnv.step` on arrays: `(state, reached_goal, lava)`."""
    grid = state.grid
    h, w = grid.shape[:2]
    vec = jnp.asarray(DIR_TO_VEC)
    front = state.pos + vec[state.direction]
    fx = jnp.clip(front[0], 0, w - 1)
    fy = jnp.clip(front[1], 0, h - 1)
    cell = grid[fy, fx]
    kind, colour, door_state = cell[0], cell[1], cell[2]
    empty = kind == EMPTY
    overlap = (
        empty
        | (kind == GOAL)
        | (kind == LAVA)
        | (kind == FLOOR)
        | ((kind == DOOR) & (door_state == OPEN))
    )
    forward = action == FORWARD
    pos = jnp.where(forward & overlap, front, state.pos)
    reached_goal = forward & (kind == GOAL)
    lava = forward & (kind == LAVA)
    direction = jnp.where(
        action == LEFT,
        (state.direction + 3) % 4,
        jnp.where(action == RIGHT, (state.direction + 1) % 4, state.direction),
    )

    hand_empty = state.carrying[0] == EMPTY
    pick = (action == PICKUP) & hand_empty & ((kind == KEY) | (kind == BALL) | (kind == BOX))
    drop = (action == DROP) & empty & ~hand_empty
    toggle = action == TOGGLE
    has_key = (state.carrying[0] == KEY) & (state.carrying[1] == colour)
    door_next = jnp.where(
        door_state == LOCKED,
        jnp.where(has_key, OPEN, LOCKED),
        jnp.where(door_state == OPEN, CLOSED, OPEN),
    ).astype(jnp.uint8)
    toggle_door = toggle & (kind == DOOR)
    open_box = toggle & (kind == BOX)

    empty_cell = jnp.array(EMPTY_CELL, jnp.uint8)
    new_cell = jnp.where(pick | open_box, empty_cell, cell)
    new_cell = jnp.where(drop, state.carrying, new_cell)
    new_cell = jnp.where(toggle_door, jnp.stack([kind, colour, door_next]), new_cell)
    at_front = (jnp.arange(h)[:, None] == fy) & (jnp.arange(w)[None, :] == fx)
    grid = jnp.where(at_front[..., None], new_cell, grid)
    carrying = jnp.where(pick, cell, jnp.where(drop, empty_cell, state.carrying))

    tracked_front = state.tracked[fy, fx]
    tracked_cell = jnp.where(
        pick | open_box, False, jnp.where(drop, state.carrying_tracked, tracked_front)
    )
    tracked = jnp.where(at_front, tracked_cell, state.tracked)
    carrying_tracked = jnp.where(
        pick, tracked_front, jnp.where(drop, False, state.carrying_tracked)
    )
    # BabyAI refreshes GoTo's object positions after every drop action, dropped or not.
    goal_cells = jnp.where(action == DROP, tracked, state.goal_cells)

    after = MiniGridState(
        grid=grid,
        pos=pos.astype(jnp.int32),
        direction=direction.astype(jnp.int32),
        carrying=carrying,
        step_count=state.step_count + 1,
        mission=state.mission,
        tracked=tracked,
        carrying_tracked=carrying_tracked,
        goal_cells=goal_cells,
    )
    return after, reached_goal, lava


def front_pos(state: MiniGridState) -> Int[Array, "2"]:
    """The cell `(x, y)` in front of the agent."""
    return state.pos + jnp.asarray(DIR_TO_VEC)[state.direction]


# ----------------------------------------------------------------------------- rendering

COLORS: np.ndarray = np.array(
    [[255, 0, 0], [0, 255, 0], [0, 0, 255], [112, 39, 195], [255, 255, 0], [100, 100, 100]],
    np.uint8,
)
"""RGB of the colours, in `COLOR_TO_IDX` order (MiniGrid's `COLORS`)."""

_BACKGROUND = np.array([0, 0, 0], np.uint8)
_GRID_LINE = np.array([60, 60, 60], np.uint8)
_LAVA = np.array([255, 128, 0], np.uint8)
_AGENT = np.array([255, 0, 0], np.uint8)


def _tile(cell: np.ndarray, scale: int) -> np.ndarray:
    """One cell's picture, MiniGrid's look (black floor, grey walls, coloured objects)."""
    kind, colour, door_state = (int(v) for v in cell)
    img = np.zeros((scale, scale, 3), np.uint8)
    img[:, :] = _BACKGROUND
    img[0, :] = _GRID_LINE
    img[:, 0] = _GRID_LINE
    c = COLORS[colour % len(COLORS)]
    yy, xx = (np.mgrid[:scale, :scale] + 0.5) / scale
    if kind == WALL:
        img[:, :] = c
    elif kind == GOAL:
        img[1:, 1:] = c
    elif kind == LAVA:
        img[1:, 1:] = _LAVA
    elif kind == FLOOR:
        img[1:, 1:] = c // 2
    elif kind == DOOR:
        if door_state == OPEN:
            img[:, int(0.88 * scale) :] = c
        elif door_state == LOCKED:
            img[:, :] = c
            inner = (yy > 0.06) & (yy < 0.94) & (xx > 0.06) & (xx < 0.94)
            img[inner] = (0.45 * c).astype(np.uint8)
            img[(yy > 0.5) & (yy < 0.56) & (xx > 0.52) & (xx < 0.75)] = c
        else:
            img[:, :] = c
            inner = (yy > 0.08) & (yy < 0.92) & (xx > 0.08) & (xx < 0.92)
            img[inner] = _BACKGROUND
            img[(yy - 0.5) ** 2 + (xx - 0.75) ** 2 < 0.08**2] = c
    elif kind == KEY:
        img[((yy - 0.31) ** 2 + (xx - 0.5) ** 2 < 0.19**2)] = c
        img[((yy - 0.31) ** 2 + (xx - 0.5) ** 2 < 0.064**2)] = _BACKGROUND
        img[(yy > 0.5) & (yy < 0.9) & (xx > 0.44) & (xx < 0.56)] = c
        img[(yy > 0.76) & (yy < 0.84) & (xx > 0.38) & (xx < 0.62)] = c
    elif kind == BALL:
        img[(yy - 0.5) ** 2 + (xx - 0.5) ** 2 < 0.31**2] = c
    elif kind == BOX:
        outer = (yy > 0.12) & (yy < 0.88) & (xx > 0.12) & (xx < 0.88)
        inner = (yy > 0.18) & (yy < 0.82) & (xx > 0.18) & (xx < 0.82)
        img[outer & ~inner] = c
        img[(yy > 0.47) & (yy < 0.53) & (xx > 0.16) & (xx < 0.84)] = c
    return img


def _triangle(direction: int, scale: int) -> np.ndarray:
    """Mask of the agent's triangle, its tip pointing in `direction`."""
    yy, xx = (np.mgrid[:scale, :scale] + 0.5) / scale
    # Pointing east: tip at (0.88, 0.5), base from (0.12, 0.19) to (0.12, 0.81).
    for _ in range(direction):  # rotate the coordinates: east -> south -> west -> north
        yy, xx = 1 - xx, yy
    return (xx >= 0.12) & (xx <= 0.88) & (np.abs(yy - 0.5) <= 0.31 * (0.88 - xx) / 0.76)


def render(state: MiniGridState, scale: int = 24) -> np.ndarray:
    """An RGB picture of one (unbatched, concrete) state (NumPy, not jitted).

    **Returns:**

    A `uint8` array `[height * scale, width * scale, 3]`.
    """
    state = jax.tree.map(jnp.asarray, state)
    grid = np.asarray(state.grid)
    h, w = grid.shape[:2]
    img = np.zeros((h * scale, w * scale, 3), np.uint8)
    x_view, y_view = (np.asarray(a) for a in _view_coords(state.pos, state.direction))
    _, seen = view(state)
    seen = np.asarray(seen)
    lit = np.zeros((h, w), bool)
    inside = (x_view >= 0) & (x_view < w) & (y_view >= 0) & (y_view < h)
    lit[y_view[inside & seen], x_view[inside & seen]] = True
    ax, ay = (int(v) for v in np.asarray(state.pos))
    direction = int(state.direction)
    for y in range(h):
        for x in range(w):
            tile = _tile(grid[y, x], scale)
            if x == ax and y == ay:
                tile[_triangle(direction, scale)] = _AGENT
                carrying = np.asarray(state.carrying)
                if int(carrying[0]) != EMPTY:
                    small = _tile(carrying, scale // 2)
                    tile[scale // 2 :, scale // 2 :] = np.maximum(
                        tile[scale // 2 :, scale // 2 :],
                        small[: scale - scale // 2, : scale - scale // 2],
                    )
            if lit[y, x]:
                tile = (tile.astype(np.int32) + (255 - tile.astype(np.int32)) * 0.3).astype(
                    np.uint8
                )
            img[y * scale : (y + 1) * scale, x * scale : (x + 1) * scale] = tile
    return img
