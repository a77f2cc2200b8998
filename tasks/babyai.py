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
numbers but from the same distribution: objects take distinct cells uniformly among the
allowed ones (BabyAI places them one by one by rejection, which is the same distribution; here
the allowed cells with the largest random 31-bit scores, so a tie, of probability below
`cells**2 / 2**31`, favours the lower cell);
the whole layout is redrawn until it is reachable (`lax.while_loop`), where BabyAI also
restarts. BabyAI's cap of 100 tries of `rand_obj` (then a fresh layout) is not modelled: the
instruction is drawn from the same prior restricted to the descriptions that match something,
which is what the tries sample unless all 100 fail.
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
    PickupLocConfig,
)
from .minigrid import (
    BALL,
    BOX,
    COLOR_NAMES,
    DIR_TO_VEC,
    DOOR,
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
    randint_from,
    random_words,
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


def _distinct_cells(
    words: UInt32[Array, " cells"], allowed: Bool[Array, " cells"], n: int
) -> Array:
    """Indices of `n` distinct allowed cells, uniformly (a uniformly random ordered subset):
    the allowed cells of the `n` largest random words (ties, of probability below
    `cells**2 / 2**32`, go to the lower index)."""
    scores = jnp.where(allowed, (words >> 1).astype(jnp.int32), -1)
    return jax.lax.top_k(scores, n)[1]


def _place(grid: Array, xs: Array, ys: Array, cells: Array) -> Array:
    """`grid` with `cells[i]` at `(xs[i], ys[i])` (distinct cells)."""
    return grid.at[ys, xs].set(cells.astype(jnp.uint8))


def _dilate(mask: Bool[Array, "h w"]) -> Bool[Array, "h w"]:
    """`mask` or any of its 4 neighbours."""
    padded = jnp.pad(mask, 1)
    return mask | padded[:-2, 1:-1] | padded[2:, 1:-1] | padded[1:-1, :-2] | padded[1:-1, 2:]


def objects_reachable(grid: Array, pos: Array, objects: Bool[Array, "h w"]) -> Bool[Array, ""]:
    """BabyAI's `check_objs_reachable`: whether every cell of `objects` is reached from the
    agent's cell `pos = (x, y)` by a walk through empty cells and doors (an object or wall is
    reached but not walked through)."""
    h, w = grid.shape[:2]
    passable = (grid[..., 0] == EMPTY) | (grid[..., 0] == DOOR)
    start = (jnp.arange(h)[:, None] == pos[1]) & (jnp.arange(w)[None, :] == pos[0])

    def grow(carry):
        walked, _ = carry
        new = start | (_dilate(walked) & passable)
        return new, jnp.any(new != walked)

    walked, _ = jax.lax.while_loop(lambda c: c[1], grow, grow((start, jnp.array(True))))
    return ~jnp.any(objects & ~_dilate(walked))


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


def _tracked_grid(h: int, w: int, xs: Array, ys: Array, match: Array) -> Array:
    return jnp.zeros((h, w), bool).at[ys, xs].set(match)


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
        cx, cy = _interior(rs)
        base = jnp.asarray(_walled(rs, rs))
        k_layout, k_target = jax.random.split(key)

        def draw(key):
            words = random_words(key, 2 + 2 * n + len(cx))
            agent = randint_from(words[:, 0], 0, len(cx))
            ax, ay = jnp.asarray(cx)[agent], jnp.asarray(cy)[agent]
            allowed = jnp.abs(cx - ax) + jnp.abs(cy - ay) >= 2
            cells = _distinct_cells(words[0, 2 + 2 * n :], allowed, n)
            xs, ys = jnp.asarray(cx)[cells], jnp.asarray(cy)[cells]
            types = jnp.asarray(OBJECT_TYPES)[randint_from(words[:, 2 : 2 + n], 0, 3)]
            colours = randint_from(words[:, 2 + n : 2 + 2 * n], 0, len(COLOR_NAMES))
            if self.red_ball:
                types = types.at[0].set(BALL)
                colours = colours.at[0].set(RED)
            if self.grey:
                colours = jnp.where(jnp.arange(n) == 0, colours, GREY)
            objects = jnp.stack([types, colours, jnp.zeros_like(types)], axis=-1)
            grid = _place(base, xs, ys, objects)
            pos = jnp.stack([ax, ay])
            direction = randint_from(words[:, 1], 0, 4)
            if n == 1:
                ok = jnp.array(True)
            else:
                ok = objects_reachable(grid, pos, _tracked_grid(rs, rs, xs, ys, jnp.ones(n, bool)))
            return (grid, pos, direction, xs, ys, types, colours), ok

        grid, pos, direction, xs, ys, types, colours = _redraw_until(draw, k_layout)
        target = 0 if self.red_ball else randint_from(random_words(k_target, 1)[:, 0], 0, n)
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
        tracked = _tracked_grid(rs, rs, xs, ys, match)
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
        cx, cy = _interior(rs)
        base = jnp.asarray(_walled(rs, rs))
        centre = rs // 2
        allowed = np.abs(cx - centre) + np.abs(cy - centre) >= 2
        vec = jnp.asarray(DIR_TO_VEC)
        k_layout, k_instr = jax.random.split(key)

        def draw(key):
            words = random_words(key, 2 * n + 5 * len(cx))
            cells = _distinct_cells(words[0, 2 * n : 2 * n + len(cx)], jnp.asarray(allowed), n)
            xs, ys = jnp.asarray(cx)[cells], jnp.asarray(cy)[cells]
            types = jnp.asarray(OBJECT_TYPES)[randint_from(words[:, :n], 0, 3)]
            colours = randint_from(words[:, n : 2 * n], 0, len(COLOR_NAMES))
            objects = jnp.stack([types, colours, jnp.zeros_like(types)], axis=-1)
            grid = _place(base, xs, ys, objects)
            occupied = _tracked_grid(rs, rs, xs, ys, jnp.ones(n, bool))
            # The agent: a free cell and a direction not facing an object, uniformly.
            free = ~occupied[cy, cx]  # [cells]
            fx = cx[:, None] + DIR_TO_VEC[None, :, 0]
            fy = cy[:, None] + DIR_TO_VEC[None, :, 1]
            valid = free[:, None] & ~occupied[fy, fx]  # [cells, 4]
            scores = (words[0, 2 * n + len(cx) :] >> 1).astype(jnp.int32)
            choice = jnp.argmax(jnp.where(valid.reshape(-1), scores, -1))
            cell, direction = choice // 4, choice % 4
            pos = jnp.stack([jnp.asarray(cx)[cell], jnp.asarray(cy)[cell]])
            ok = objects_reachable(grid, pos, occupied)
            return (grid, pos, direction, xs, ys, types, colours), ok

        grid, pos, direction, xs, ys, types, colours = _redraw_until(draw, k_layout)

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
        choice = jax.random.categorical(k_instr, logits.reshape(-1))
        c, t, loc = choice // 15, (choice // 5) % 3, choice % 5
        chosen = match[c, t, loc]
        article = jnp.where(chosen.sum() > 1, WORD_TO_ID["a"], WORD_TO_ID["the"])
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
        tracked = _tracked_grid(rs, rs, xs, ys, chosen)
        return new_state(grid, pos, direction, compact_tokens(words), tracked)

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
