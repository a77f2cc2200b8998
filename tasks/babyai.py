"""Single-room BabyAI levels (Chevalier-Boisvert et al. 2019, as in Farama `minigrid` 3.2.0,
`minigrid/envs/babyai/`) on the pure-JAX core of `tasks.minigrid`.

One `room_size x room_size` room (walls included; BabyAI: 8), `max_steps = room_size ** 2`
(BabyAI: one navigation of one room), reward `1 - 0.9 * step_count / max_steps` on success.

- **GoToObj**: the agent, then one object (type key/ball/box and colour uniform) at
  Manhattan distance >= 2 from it; "go to the {colour} {type}".
- **GoToRedBall**: the agent, a red ball, 7 distractors of random type and colour;
  "go to the red ball" ("go to a red ball" when a distractor is a red ball too: then facing
  any of them succeeds).
- **GoToRedBallGrey**: as GoToRedBall, the distractors grey.
- **GoToLocal**: the agent, 8 random objects, the target one of them at random;
  "go to the/a {colour} {type}".
- **PickupLoc**: 8 random objects first (at distance >= 2 from the room's centre, where
  BabyAI's agent stands while objects are placed), then the agent on a free cell and a
  direction such that it does not face an object; the instruction "pick up the/a [colour]
  {type} [on your left | on your right | in front of you | behind you]" drawn as BabyAI's
  `LevelGen.rand_obj` draws it (colour or none 1/7 each, type 1/3, no location 1/2, each
  location 1/8, redrawn until some object matches; "a" when several do). A location is
  judged from the agent's start (`ObjDesc.find_matching_objs`: `left` means
  `dot(object - agent, (-dy, dx)) < 0` for the direction `(dx, dy)`, and so on).

- **PickupDist**: a 7x7 room, 5 objects of distinct (type, colour) at distance >= 2 from the
  room's centre, then the agent as in PickupLoc; the target one of them at random, described
  by its type, its colour or both (1/3 each); "pick up the/a {colour} {type}" ("object" for
  the type when only the colour is given; "a" when several objects match). Any object of the
  description picked up succeeds (BabyAI's non-strict `PickupInstr`). Its layouts are not
  checked for reachability (BabyAI's `PickupDist` does not check them either).

Objects never overlap each other or the agent and (except GoToObj, whose one object cannot be
blocked) every object must be reachable from the agent without moving another
(`check_objs_reachable`): a layout that fails is drawn again, as BabyAI rejects it.

**Success** (BabyAI's verifier, `use_done_actions` off, its default): `GoToInstr` succeeds
after any step that ends with the agent facing a cell where an object of the description was
at the start (those positions are refreshed only after a `drop` action, as BabyAI's
`update_objs_poss` does, so they go stale when an object is picked up); `PickupInstr` succeeds
when a `pickup` action with an empty hand picks up an object of the description (the objects
matching at the start, followed as they move). `done` does nothing.

**Deliberate differences from BabyAI:** the layout is drawn in a different order of random
numbers but from the same distribution (so a seed does not give BabyAI's layout for that seed;
the fidelity tests copy BabyAI's layouts instead): objects take distinct cells uniformly among
the allowed ones (BabyAI places them one by one by rejection, which is the same distribution;
here the allowed cells with the largest random 31-bit scores, so a tie, of probability below
`cells**2 / 2**31`, favours the lower cell); integers are `word mod n` of random 32-bit words
(bias below `n / 2**32`); the whole layout is redrawn until it is reachable
(`lax.while_loop`), where BabyAI also restarts (15-18% of GoToLocal / PickupLoc layouts are;
under `vmap` a batch waits for its slowest environment, so a reset costs about four draws).
BabyAI's cap of 100 tries of `rand_obj` (then a fresh layout) is not modelled: the instruction
is drawn from the same prior restricted to the descriptions that match something, which is
what the tries sample unless all 100 fail, by the inverse CDF of one float32 uniform
(probabilities exact to about 1e-7). `max_steps` is fixed at construction (BabyAI recomputes
it at each reset from the instruction; for these one-room, one-action levels it is always
`room_size ** 2`).
"""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Int, PRNGKeyArray, UInt32

from .config import (
    GoToLocalConfig,
    GoToObjConfig,
    GoToRedBallConfig,
    GoToRedBallGreyConfig,
    PickupDistConfig,
    PickupLocConfig,
)
from .minigrid import (
    BALL,
    BOX,
    COLOR_NAMES,
    DIR_TO_VEC,
    EMPTY,
    GREY,
    KEY,
    PICKUP,
    RED,
    WORD_TO_ID,
    AbstractMiniGrid,
    MiniGridState,
    compact_tokens,
    front_pos,
    new_state,
)
from .minigrid_levels import _walled

OBJECT_TYPES: tuple[int, ...] = (KEY, BALL, BOX)
"""The types of BabyAI's objects (doors aside), as BabyAI draws them."""

_TYPE_WORD = np.zeros(16, np.int32)
_TYPE_WORD[[KEY, BALL, BOX]] = [WORD_TO_ID["key"], WORD_TO_ID["ball"], WORD_TO_ID["box"]]
_COLOUR_WORD = np.array([WORD_TO_ID[c] for c in COLOR_NAMES], np.int32)
_LOCATION_WORDS = np.array(
    [
        [0, 0, 0, 0],
        [WORD_TO_ID["on"], WORD_TO_ID["your"], WORD_TO_ID["left"], 0],
        [WORD_TO_ID["on"], WORD_TO_ID["your"], WORD_TO_ID["right"], 0],
        [WORD_TO_ID["in"], WORD_TO_ID["front"], WORD_TO_ID["of"], WORD_TO_ID["you"]],
        [WORD_TO_ID["behind"], WORD_TO_ID["you"], 0, 0],
    ],
    np.int32,
)
"""Words of no location, then BabyAI's `LOC_NAMES` left, right, front, behind."""


def _interior(room_size: int) -> tuple[np.ndarray, np.ndarray]:
    """`(x, y)` of the room's inner cells, row by row."""
    inner = np.arange(1, room_size - 1)
    y, x = np.meshgrid(inner, inner, indexing="ij")
    return x.reshape(-1).astype(np.int32), y.reshape(-1).astype(np.int32)


def _below(words: UInt32[Array, "..."], span) -> Int[Array, "..."]:
    """Integers uniform in `[0, span)` from random 32-bit words, one word each (`word mod
    span`: bias below `span / 2**32`)."""
    return (words % jnp.asarray(span).astype(jnp.uint32)).astype(jnp.int32)


def _choose(words: UInt32[Array, " cells"], allowed: Bool[Array, " cells"], n: int) -> Array:
    """A uniformly random ordered choice of `n` distinct allowed cells (at least `n`), as
    one-hot rows `bool [n, cells]`: the allowed cells in decreasing order of random 31-bit
    scores (a tie, of probability below `cells**2 / 2**31`, favours the lower cell). `n`
    argmaxes, no sort: cheap under `vmap` on CPU, where `top_k` is not."""
    scores = jnp.where(allowed, (words >> 1).astype(jnp.int32), -1)
    index = jnp.arange(scores.shape[0])
    rows = []
    for _ in range(n):
        hit = index == jnp.argmax(scores)
        rows.append(hit)
        scores = jnp.where(hit, -2, scores)
    return jnp.stack(rows)


def _agent_not_facing_an_object(
    occupied: Bool[Array, "h w"], word: UInt32[Array, ""]
) -> tuple[Int[Array, ""], Int[Array, ""]]:
    """`(inner cell, direction)` of the agent, uniformly among the free inner cells and the
    directions in which it does not face an object (BabyAI's `RoomGrid.place_agent`)."""
    ahead = jnp.stack(
        [
            occupied[1:-1, 2:],  # east
            occupied[2:, 1:-1],  # south
            occupied[1:-1, :-2],  # west
            occupied[:-2, 1:-1],  # north
        ],
        axis=-1,
    )  # [k, k, 4]
    valid = ~occupied[1:-1, 1:-1, None] & ~ahead
    choice = _pick(word, valid.reshape(-1))
    return choice // 4, choice % 4


def _pick(words: UInt32[Array, ""], valid: Bool[Array, " m"]) -> Int[Array, ""]:
    """A uniformly random index among the `valid` ones (at least one)."""
    r = _below(words, valid.sum())
    return jnp.argmax(valid & (jnp.cumsum(valid) - 1 == r))


def _rows(mask: Bool[Array, "k k"]) -> Int[Array, " k"]:
    """Each row of a square mask as the bits of an int (bit x = column x)."""
    k = mask.shape[1]
    return jnp.sum(mask.astype(jnp.int32) << jnp.arange(k, dtype=jnp.int32), axis=1)


def _dilate_rows(rows: Int[Array, " k"], k: int) -> Int[Array, " k"]:
    """Bit rows of a mask or any of its 4 neighbours (within `k x k`)."""
    full = (1 << k) - 1
    zero = jnp.zeros(1, rows.dtype)
    above = jnp.concatenate([zero, rows[:-1]])
    below = jnp.concatenate([rows[1:], zero])
    return (rows | (rows << 1) | (rows >> 1) | above | below) & full


def reachable_in_room(objects: Bool[Array, "k k"], agent: Bool[Array, "k k"]) -> Bool[Array, ""]:
    """BabyAI's `check_objs_reachable` in one walled room (its inner `k x k` cells): whether
    every object is reached from the agent's cell by a walk through free cells (an object is
    reached but not walked through; walls surround the room). Bit rows, iterated to the fixed
    point."""
    k = objects.shape[0]
    free, start, targets = _rows(~objects), _rows(agent), _rows(objects)

    def grow(carry):
        walked, _ = carry
        new = start | (_dilate_rows(walked, k) & free)
        return new, jnp.any(new != walked)

    walked, _ = jax.lax.while_loop(lambda c: c[1], grow, grow((start, jnp.array(True))))
    return ~jnp.any(targets & ~_dilate_rows(walked, k))


def objects_reachable(grid: Array, pos: Array, objects: Bool[Array, "h w"]) -> Bool[Array, ""]:
    """`reachable_in_room` on a whole single-room grid (walls around): whether every cell of
    `objects` is reached from the agent's cell `pos = (x, y)`."""
    h, w = grid.shape[:2]
    agent = (jnp.arange(h)[:, None] == pos[1]) & (jnp.arange(w)[None, :] == pos[0])
    return reachable_in_room(objects[1:-1, 1:-1], agent[1:-1, 1:-1])


def _redraw_until(draw, key: PRNGKeyArray):
    """`draw(key) -> (result, ok)` again with fresh keys until `ok`; the first ok result."""

    def again(carry):
        key, _, _ = carry
        key, sub = jax.random.split(key)
        result, ok = draw(sub)
        return key, result, ok

    key, sub = jax.random.split(key)
    result, ok = draw(sub)
    _, result, _ = jax.lax.while_loop(lambda c: ~c[2], again, (key, result, ok))
    return result


def _room_grid(room_size: int, chosen: Array, types: Array, colours: Array) -> Array:
    """The walled room with object `i` (`types[i]`, `colours[i]`) at the inner cell of
    `chosen[i]` (one-hot rows over the inner cells, row by row)."""
    k = room_size - 2
    kind = EMPTY + jnp.sum(chosen * (types - EMPTY)[:, None], axis=0)
    colour = jnp.sum(chosen * colours[:, None], axis=0)
    inner = jnp.stack([kind, colour, jnp.zeros_like(kind)], axis=-1).reshape(k, k, 3)
    return jnp.asarray(_walled(room_size, room_size)).at[1:-1, 1:-1].set(inner.astype(jnp.uint8))


def _on_grid(room_size: int, cells: Bool[Array, " cells"]) -> Bool[Array, "h w"]:
    """A mask over the inner cells (row by row) as a mask of the whole room."""
    k = room_size - 2
    return jnp.pad(cells.reshape(k, k), 1)


class GoTo(AbstractMiniGrid):
    """BabyAI's single-room GoTo levels (module docstring): GoToObj (`num_objs=1`),
    GoToRedBall (`num_objs=8, red_ball=True`), GoToRedBallGrey (also `grey=True`), GoToLocal
    (`num_objs=8`)."""

    room_size: int = eqx.field(static=True)
    """Side of the room, walls included."""
    num_objs: int = eqx.field(static=True)
    """Objects in the room, the target included."""
    red_ball: bool = eqx.field(static=True)
    """The target is a red ball placed first (GoToRedBall*); else a random one of the
    objects."""
    grey: bool = eqx.field(static=True)
    """The objects other than the red ball are grey (GoToRedBallGrey)."""
    steps: int = eqx.field(static=True)
    """Steps after which an episode is truncated (BabyAI: room_size ** 2)."""
    mission: bool = eqx.field(static=True, default=True)
    """Observations carry the instruction (always, for a BabyAI level)."""

    def __init__(
        self,
        room_size: int = 8,
        num_objs: int = 8,
        red_ball: bool = False,
        grey: bool = False,
        max_steps: int | None = None,
    ):
        """**Raises:** `ValueError` if the objects do not fit in the room or `grey` is given
        without `red_ball`."""
        if room_size < 5 or not 1 <= num_objs <= (room_size - 2) ** 2 - 5:
            raise ValueError(
                f"GoTo: {num_objs} objects do not fit a room of size {room_size}; use "
                "room_size >= 5 and 1 <= num_objs <= (room_size - 2) ** 2 - 5."
            )
        if grey and not red_ball:
            raise ValueError("GoTo: grey distractors need red_ball=True (GoToRedBallGrey).")
        if max_steps is not None and max_steps < 1:
            raise ValueError(f"GoTo: max_steps={max_steps} must be >= 1 (or None).")
        self.room_size = room_size
        self.num_objs = num_objs
        self.red_ball = red_ball
        self.grey = grey
        self.steps = room_size**2 if max_steps is None else max_steps

    @property
    def max_steps(self) -> int:
        """Steps after which an episode is truncated."""
        return self.steps

    def generate(self, key: PRNGKeyArray) -> MiniGridState:
        """A start state (module docstring). Jittable and vmappable."""
        rs, n = self.room_size, self.num_objs
        cx_np, cy_np = _interior(rs)
        c = len(cx_np)
        cx, cy = jnp.asarray(cx_np), jnp.asarray(cy_np)
        k_layout, k_target = jax.random.split(key)

        def draw(key):
            words = jax.random.bits(key, (2 + n + c,), jnp.uint32)
            agent = _below(words[0], c)
            allowed = jnp.abs(cx - cx[agent]) + jnp.abs(cy - cy[agent]) >= 2
            chosen = _choose(words[2 + n :], allowed, n)  # [n, cells]
            kinds = _below(words[2 : 2 + n], 3 * len(COLOR_NAMES))
            types = jnp.asarray(OBJECT_TYPES)[kinds // len(COLOR_NAMES)]
            colours = kinds % len(COLOR_NAMES)
            if self.red_ball:
                types = types.at[0].set(BALL)
                colours = colours.at[0].set(RED)
            if self.grey:
                colours = jnp.where(jnp.arange(n) == 0, colours, GREY)
            at_agent = jnp.arange(c) == agent
            if n == 1:
                ok = jnp.array(True)
            else:
                k = rs - 2
                ok = reachable_in_room(chosen.any(0).reshape(k, k), at_agent.reshape(k, k))
            return (chosen, types, colours, agent, _below(words[1], 4)), ok

        chosen, types, colours, agent, direction = _redraw_until(draw, k_layout)
        grid = _room_grid(rs, chosen, types, colours)
        pos = jnp.stack([cx[agent], cy[agent]])
        target = 0 if self.red_ball else _below(jax.random.bits(k_target, (), jnp.uint32), n)
        match = (types == types[target]) & (colours == colours[target])
        article = jnp.where(match.sum() > 1, WORD_TO_ID["a"], WORD_TO_ID["the"])
        words = jnp.stack(
            [
                jnp.int32(WORD_TO_ID["go"]),
                jnp.int32(WORD_TO_ID["to"]),
                article,
                jnp.asarray(_COLOUR_WORD)[colours[target]],
                jnp.asarray(_TYPE_WORD)[types[target]],
            ]
        )
        tracked = _on_grid(rs, (chosen & match[:, None]).any(0))
        return new_state(grid, pos, direction, compact_tokens(words), tracked, tracked)

    def verify(
        self, before: MiniGridState, after: MiniGridState, action: Int[Array, ""]
    ) -> Bool[Array, ""]:
        """`GoToInstr`: the agent faces a cell where an object of the description was."""
        del before, action
        fx, fy = front_pos(after)
        h, w = after.goal_cells.shape
        return after.goal_cells[jnp.clip(fy, 0, h - 1), jnp.clip(fx, 0, w - 1)]


class PickupLoc(AbstractMiniGrid):
    """BabyAI's PickupLoc (module docstring): pick up an object described by type, maybe
    colour, maybe location relative to the agent's start."""

    room_size: int = eqx.field(static=True)
    """Side of the room, walls included."""
    num_objs: int = eqx.field(static=True)
    """Objects in the room."""
    steps: int = eqx.field(static=True)
    """Steps after which an episode is truncated (BabyAI: room_size ** 2)."""
    mission: bool = eqx.field(static=True, default=True)
    """Observations carry the instruction (always, for a BabyAI level)."""

    def __init__(self, room_size: int = 8, num_objs: int = 8, max_steps: int | None = None):
        """**Raises:** `ValueError` if the objects do not fit in the room."""
        if room_size < 5 or not 1 <= num_objs <= (room_size - 2) ** 2 - 5:
            raise ValueError(
                f"PickupLoc: {num_objs} objects do not fit a room of size {room_size}; use "
                "room_size >= 5 and 1 <= num_objs <= (room_size - 2) ** 2 - 5."
            )
        if max_steps is not None and max_steps < 1:
            raise ValueError(f"PickupLoc: max_steps={max_steps} must be >= 1 (or None).")
        self.room_size = room_size
        self.num_objs = num_objs
        self.steps = room_size**2 if max_steps is None else max_steps

    @property
    def max_steps(self) -> int:
        """Steps after which an episode is truncated."""
        return self.steps

    def generate(self, key: PRNGKeyArray) -> MiniGridState:
        """A start state (module docstring). Jittable and vmappable."""
        rs, n = self.room_size, self.num_objs
        k = rs - 2
        cx, cy = _interior(rs)
        cells = len(cx)
        centre = rs // 2
        allowed = jnp.asarray(np.abs(cx - centre) + np.abs(cy - centre) >= 2)
        vec = jnp.asarray(DIR_TO_VEC)
        k_layout, k_instr = jax.random.split(key)

        def draw(key):
            words = jax.random.bits(key, (1 + n + cells,), jnp.uint32)
            chosen = _choose(words[1 + n :], allowed, n)  # [n, cells]
            kinds = _below(words[1 : 1 + n], 3 * len(COLOR_NAMES))
            types = jnp.asarray(OBJECT_TYPES)[kinds // len(COLOR_NAMES)]
            colours = kinds % len(COLOR_NAMES)
            occupied = jnp.pad(chosen.any(0).reshape(k, k), 1)  # [h, w]
            agent, direction = _agent_not_facing_an_object(occupied, words[0])
            ok = reachable_in_room(occupied[1:-1, 1:-1], (jnp.arange(cells) == agent).reshape(k, k))
            return (chosen, types, colours, agent, direction), ok

        chosen, types, colours, agent, direction = _redraw_until(draw, k_layout)
        grid = _room_grid(rs, chosen, types, colours)
        pos = jnp.stack([jnp.asarray(cx)[agent], jnp.asarray(cy)[agent]])
        xs = jnp.sum(chosen * jnp.asarray(cx), axis=1)
        ys = jnp.sum(chosen * jnp.asarray(cy), axis=1)

        # Every description (colour or none) x type x (location or none), its prior weight,
        # and the objects it matches.
        d1 = vec[direction]
        d2 = jnp.stack([-d1[1], d1[0]])
        vx, vy = xs - pos[0], ys - pos[1]
        ahead = vx * d1[0] + vy * d1[1]
        side = vx * d2[0] + vy * d2[1]
        at_loc = jnp.stack([jnp.ones(n, bool), side < 0, side > 0, ahead > 0, ahead < 0])  # [5, n]
        colour_ok = jnp.concatenate(
            [jnp.ones((1, n), bool), colours[None, :] == jnp.arange(len(COLOR_NAMES))[:, None]]
        )  # [7, n]
        type_ok = types[None, :] == jnp.asarray(OBJECT_TYPES)[:, None]  # [3, n]
        match = colour_ok[:, None, None, :] & type_ok[None, :, None, :] & at_loc[None, None]
        loc_prior = np.log(np.array([1 / 2, 1 / 8, 1 / 8, 1 / 8, 1 / 8]))
        logits = jnp.where(match.any(-1), jnp.asarray(loc_prior)[None, None, :], -jnp.inf)
        # Inverse CDF of one uniform draw (float32: probabilities exact to about 1e-7).
        probs = jax.nn.softmax(logits.reshape(-1))
        u = jax.random.uniform(k_instr)
        choice = jnp.minimum(jnp.sum(jnp.cumsum(probs) <= u), probs.shape[0] - 1)
        choice = jnp.where(probs[choice] > 0, choice, jnp.argmax(probs))
        c, t, loc = choice // 15, (choice // 5) % 3, choice % 5
        described = match[c, t, loc]  # [n]: the objects of the description
        article = jnp.where(described.sum() > 1, WORD_TO_ID["a"], WORD_TO_ID["the"])
        colour_word = jnp.where(c == 0, 0, jnp.asarray(_COLOUR_WORD)[jnp.maximum(c - 1, 0)])
        words = jnp.concatenate(
            [
                jnp.stack(
                    [
                        jnp.int32(WORD_TO_ID["pick"]),
                        jnp.int32(WORD_TO_ID["up"]),
                        article,
                        colour_word,
                        jnp.asarray(_TYPE_WORD)[jnp.asarray(OBJECT_TYPES)[t]],
                    ]
                ),
                jnp.asarray(_LOCATION_WORDS)[loc],
            ]
        )
        tracked = _on_grid(rs, (chosen & described[:, None]).any(0))
        return new_state(grid, pos, direction, compact_tokens(words), tracked)

    def verify(
        self, before: MiniGridState, after: MiniGridState, action: Int[Array, ""]
    ) -> Bool[Array, ""]:
        """`PickupInstr`: a `pickup` with an empty hand picked up an object of the
        description."""
        return (action == PICKUP) & (before.carrying[0] == EMPTY) & after.carrying_tracked


class PickupDist(AbstractMiniGrid):
    """BabyAI's PickupDist (module docstring): pick up an object described by its type, its
    colour or both, among distractors of distinct types and colours."""

    room_size: int = eqx.field(static=True)
    """Side of the room, walls included (BabyAI: 7)."""
    num_objs: int = eqx.field(static=True)
    """Objects in the room, of distinct (type, colour) (BabyAI: 5)."""
    steps: int = eqx.field(static=True)
    """Steps after which an episode is truncated (BabyAI: room_size ** 2)."""
    mission: bool = eqx.field(static=True, default=True)
    """Observations carry the instruction (always, for a BabyAI level)."""

    def __init__(self, room_size: int = 7, num_objs: int = 5, max_steps: int | None = None):
        """**Raises:** `ValueError` if the objects do not fit in the room or there are more
        than the 18 kinds of object."""
        kinds = len(OBJECT_TYPES) * len(COLOR_NAMES)
        if room_size < 5 or not 1 <= num_objs <= min((room_size - 2) ** 2 - 5, kinds):
            raise ValueError(
                f"PickupDist: {num_objs} objects of distinct kinds do not fit a room of size "
                f"{room_size}; use room_size >= 5 and 1 <= num_objs <= "
                f"min((room_size - 2) ** 2 - 5, {kinds})."
            )
        if max_steps is not None and max_steps < 1:
            raise ValueError(f"PickupDist: max_steps={max_steps} must be >= 1 (or None).")
        self.room_size = room_size
        self.num_objs = num_objs
        self.steps = room_size**2 if max_steps is None else max_steps

    @property
    def max_steps(self) -> int:
        """Steps after which an episode is truncated."""
        return self.steps

    def generate(self, key: PRNGKeyArray) -> MiniGridState:
        """A start state (module docstring). Jittable and vmappable."""
        rs, n = self.room_size, self.num_objs
        k = rs - 2
        cx, cy = _interior(rs)
        cells = len(cx)
        centre = rs // 2
        allowed = jnp.asarray(np.abs(cx - centre) + np.abs(cy - centre) >= 2)
        kinds = len(OBJECT_TYPES) * len(COLOR_NAMES)
        words = jax.random.bits(key, (3 + kinds + cells,), jnp.uint32)
        # Distinct kinds in a uniformly random order (BabyAI: redraw a repeated kind), on
        # distinct allowed cells.
        kind = jnp.argmax(_choose(words[3 : 3 + kinds], jnp.ones(kinds, bool), n), axis=1)
        types = jnp.asarray(OBJECT_TYPES)[kind // len(COLOR_NAMES)]
        colours = kind % len(COLOR_NAMES)
        chosen = _choose(words[3 + kinds :], allowed, n)  # [n, cells]
        occupied = jnp.pad(chosen.any(0).reshape(k, k), 1)
        agent, direction = _agent_not_facing_an_object(occupied, words[0])
        grid = _room_grid(rs, chosen, types, colours)
        pos = jnp.stack([jnp.asarray(cx)[agent], jnp.asarray(cy)[agent]])

        target = _below(words[1], n)
        select_by = _below(words[2], 3)  # BabyAI's order: type, colour, both
        by_type, by_colour = select_by != 1, select_by != 0
        described = (~by_type | (types == types[target])) & (
            ~by_colour | (colours == colours[target])
        )
        article = jnp.where(described.sum() > 1, WORD_TO_ID["a"], WORD_TO_ID["the"])
        colour_word = jnp.where(by_colour, jnp.asarray(_COLOUR_WORD)[colours[target]], 0)
        type_word = jnp.where(by_type, jnp.asarray(_TYPE_WORD)[types[target]], WORD_TO_ID["object"])
        tokens = jnp.stack(
            [
                jnp.int32(WORD_TO_ID["pick"]),
                jnp.int32(WORD_TO_ID["up"]),
                article,
                colour_word,
                type_word,
            ]
        )
        tracked = _on_grid(rs, (chosen & described[:, None]).any(0))
        return new_state(grid, pos, direction, compact_tokens(tokens), tracked)

    def verify(
        self, before: MiniGridState, after: MiniGridState, action: Int[Array, ""]
    ) -> Bool[Array, ""]:
        """`PickupInstr`: a `pickup` with an empty hand picked up an object of the
        description."""
        return (action == PICKUP) & (before.carrying[0] == EMPTY) & after.carrying_tracked


def make_gotoobj(config: GoToObjConfig, *, key: PRNGKeyArray) -> GoTo:
    """BabyAI GoToObj from its config (`key` unused)."""
    del key
    return GoTo(config.room_size, 1, max_steps=config.max_steps)


def make_gotoredball(config: GoToRedBallConfig, *, key: PRNGKeyArray) -> GoTo:
    """BabyAI GoToRedBall from its config (`key` unused)."""
    del key
    return GoTo(config.room_size, config.num_dists + 1, red_ball=True, max_steps=config.max_steps)


def make_gotoredballgrey(config: GoToRedBallGreyConfig, *, key: PRNGKeyArray) -> GoTo:
    """BabyAI GoToRedBallGrey from its config (`key` unused)."""
    del key
    return GoTo(
        config.room_size, config.num_dists + 1, red_ball=True, grey=True, max_steps=config.max_steps
    )


def make_gotolocal(config: GoToLocalConfig, *, key: PRNGKeyArray) -> GoTo:
    """BabyAI GoToLocal from its config (`key` unused)."""
    del key
    return GoTo(config.room_size, config.num_dists, max_steps=config.max_steps)


def make_pickuploc(config: PickupLocConfig, *, key: PRNGKeyArray) -> PickupLoc:
    """BabyAI PickupLoc from its config (`key` unused)."""
    del key
    return PickupLoc(config.room_size, config.num_dists, max_steps=config.max_steps)


def make_pickupdist(config: PickupDistConfig, *, key: PRNGKeyArray) -> PickupDist:
    """BabyAI PickupDist from its config (`key` unused)."""
    del key
    return PickupDist(config.room_size, config.num_dists, max_steps=config.max_steps)
