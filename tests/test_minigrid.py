"""The pure-JAX MiniGrid core and its DoorKey / FourRooms levels: hand-built layouts, the
distribution of start states, and step-by-step agreement with the Farama `minigrid` package
(the oracle, a test-only dependency: those tests skip without it)."""

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

import plugins.builtin
from plugins import TaskSpec
from tasks import AbstractEnvironment, autoreset_step
from tasks.config import DoorKeyConfig, GoToLocalConfig
from tasks.minigrid import (
    BALL,
    BLUE,
    CLOSED,
    DOOR,
    DROP,
    EMPTY,
    FORWARD,
    GOAL_CELL,
    KEY,
    LAVA,
    LEFT,
    LOCKED,
    OPEN,
    PICKUP,
    RIGHT,
    TOGGLE,
    WALL_CELL,
    YELLOW,
    detokenize,
    new_state,
    tokenize,
    visibility,
)
from tasks.minigrid_levels import DoorKey, FourRooms

# ----------------------------------------------------------------------------- hand-built


def _room(size: int = 7) -> np.ndarray:
    grid = np.zeros((size, size, 3), np.uint8)
    grid[:, :] = (EMPTY, 0, 0)
    grid[[0, -1], :] = WALL_CELL
    grid[:, [0, -1]] = WALL_CELL
    return grid


ENV = DoorKey(7, max_steps=6)  # steps any 7 x 7 state; truncates after 6 steps
STEP = jax.jit(ENV.step)
KEY0 = jr.key(0)


def _run(state, actions):
    out = []
    for a in actions:
        state, obs, reward, terminated, truncated = STEP(state, jnp.int32(a), KEY0)
        out.append((obs, float(reward), bool(terminated), bool(truncated)))
    return state, out


def test_wall_and_locked_door_need_the_matching_key():
    grid = _room()
    grid[1:6, 3] = WALL_CELL
    grid[2, 3] = (DOOR, YELLOW, LOCKED)
    grid[3, 1] = (KEY, BLUE, 0)
    # Agent at (2, 2) facing east, the locked door in front.
    state = new_state(grid, (2, 2), 0, tokenize("reach the goal"))
    state, _ = _run(state, [FORWARD, TOGGLE])
    assert tuple(np.asarray(state.pos)) == (2, 2)  # the locked door blocks
    assert tuple(np.asarray(state.grid[2, 3])) == (DOOR, YELLOW, LOCKED)  # no key: stays locked
    # A blue key does not open a yellow door.
    state = new_state(grid, (2, 2), 0, tokenize("reach the goal"))
    state = eqx.tree_at(lambda s: s.carrying, state, jnp.array([KEY, BLUE, 0], jnp.uint8))
    state, _ = _run(state, [TOGGLE])
    assert tuple(np.asarray(state.grid[2, 3])) == (DOOR, YELLOW, LOCKED)
    # The yellow key does, and toggling again closes it.
    state = eqx.tree_at(lambda s: s.carrying, state, jnp.array([KEY, YELLOW, 0], jnp.uint8))
    state, _ = _run(state, [TOGGLE])
    assert tuple(np.asarray(state.grid[2, 3])) == (DOOR, YELLOW, OPEN)
    state, _ = _run(state, [TOGGLE])
    assert tuple(np.asarray(state.grid[2, 3])) == (DOOR, YELLOW, CLOSED)
    state, _ = _run(state, [TOGGLE, FORWARD])
    assert tuple(np.asarray(state.pos)) == (3, 2)  # through the open door
    # Facing the wall (north, y = 0 is a wall) the agent stays.
    state = new_state(grid, (1, 1), 3, tokenize("reach the goal"))
    state, _ = _run(state, [FORWARD])
    assert tuple(np.asarray(state.pos)) == (1, 1)


def test_pickup_drop_and_the_carried_object_in_view():
    grid = _room()
    grid[2, 3] = (BALL, BLUE, 0)
    state = new_state(grid, (2, 2), 0, tokenize("reach the goal"))
    state, out = _run(state, [PICKUP])
    obs = out[-1][0]
    assert tuple(np.asarray(state.carrying)) == (BALL, BLUE, 0)
    assert tuple(np.asarray(state.grid[2, 3])) == (EMPTY, 0, 0)
    assert tuple(np.asarray(obs["image"][3, 6])) == (BALL, BLUE, 0)  # carried, at the agent
    assert tuple(np.asarray(obs["image"][3, 5])) == (EMPTY, 0, 0)
    state, out = _run(state, [RIGHT, DROP])  # face south, drop at (2, 3)
    assert tuple(np.asarray(state.grid[3, 2])) == (BALL, BLUE, 0)
    assert tuple(np.asarray(out[-1][0]["image"][3, 6])) == (EMPTY, 0, 0)
    state, _ = _run(state, [DROP])  # nothing left to drop: nothing changes
    assert tuple(np.asarray(state.grid[3, 2])) == (BALL, BLUE, 0)


def test_occlusion_behind_a_wall():
    grid = _room(9)
    grid[1:8, 5] = WALL_CELL  # a wall column at x = 5
    state = new_state(grid, (2, 4), 0, tokenize("reach the goal"))  # facing east
    image = np.asarray(ENV.observe(state)["image"])
    # Ahead: (3, 4), (4, 4) empty, the wall at distance 3, nothing beyond it.
    assert list(image[3, 5:2:-1, 0]) == [EMPTY, EMPTY, 2]
    assert (image[:, :3, 0] == 0).all()  # beyond the wall: unseen
    # Seeing past everything, the view is all seen.
    assert np.asarray(visibility(jnp.ones((7, 7), bool))).all()


def test_goal_lava_rewards_and_truncation():
    grid = _room()
    grid[2, 3] = GOAL_CELL
    grid[4, 3] = (LAVA, 0, 0)
    state = new_state(grid, (2, 2), 0, tokenize("reach the goal"))
    _, out = _run(state, [LEFT, RIGHT, FORWARD])
    assert [o[2] for o in out] == [False, False, True]
    assert out[-1][1] == pytest.approx(1 - 0.9 * 3 / 6)
    state = new_state(grid, (2, 4), 0, tokenize("reach the goal"))
    _, out = _run(state, [FORWARD])
    assert out[-1][1:3] == (0.0, True)
    state = new_state(grid, (1, 1), 3, tokenize("reach the goal"))
    _, out = _run(state, [LEFT] * 6)
    assert [o[3] for o in out] == [False] * 5 + [True]
    assert not any(o[2] for o in out)


def test_tokenizer():
    ids = tokenize("Go to the red ball")
    assert ids.shape == (16,) and ids[5:].sum() == 0
    assert detokenize(ids) == "go to the red ball"
    with pytest.raises(ValueError, match="vocabulary"):
        tokenize("go to the dragon")


def test_bad_sizes_raise_before_compiling():
    with pytest.raises(ValueError, match="size"):
        DoorKeyConfig(size=4)
    with pytest.raises(ValueError, match="size"):
        DoorKey(4)
    with pytest.raises(ValueError, match="fit"):
        GoToLocalConfig(room_size=5, num_dists=8)


# ----------------------------------------------------------------------------- resets


def test_doorkey_resets_follow_minigrid_rules():
    size, n = 8, 512
    env = DoorKey(size)
    states, obs = jax.jit(jax.vmap(env.reset))(jr.split(jr.key(1), n))
    grid, pos = np.asarray(states.grid), np.asarray(states.pos)
    assert obs["image"].shape == (n, *env.io.x_shape) and obs["image"].dtype == jnp.uint8
    assert "mission" not in obs and env.io.mission_len is None  # MiniGrid agents read none
    shown = DoorKey(size, mission=True)
    tokens = jax.jit(jax.vmap(shown.reset))(jr.split(jr.key(1), 2))[1]["mission"]
    assert shown.io.mission_len is not None and tokens.shape == (2, shown.io.mission_len)
    assert detokenize(tokens[0]) == "use the key to open the door and then get to the goal"
    splits = []
    for g, (x, y) in zip(grid, pos, strict=True):
        column = ((g[:, :, 0] == 2) | (g[:, :, 0] == DOOR)).all(axis=0)
        split = int(np.flatnonzero(column[1:-1])[0]) + 1
        splits.append(split)
        doors = np.argwhere(g[:, :, 0] == DOOR)
        assert len(doors) == 1 and doors[0][1] == split and 1 <= doors[0][0] <= size - 3
        assert tuple(g[doors[0][0], split]) == (DOOR, YELLOW, LOCKED)
        keys = np.argwhere(g[:, :, 0] == KEY)
        assert (
            len(keys) == 1 and keys[0][1] < split and tuple(g[tuple(keys[0])]) == (KEY, YELLOW, 0)
        )
        assert g[y, x, 0] == EMPTY and 1 <= x < split  # the agent: left room, free cell
        assert tuple(g[size - 2, size - 2]) == GOAL_CELL
    assert set(splits) == {2, 3, 4, 5}
    assert set(np.asarray(states.direction).tolist()) == {0, 1, 2, 3}
    # Same key, same numbers.
    again, _ = jax.jit(jax.vmap(env.reset))(jr.split(jr.key(1), n))
    assert np.array_equal(np.asarray(again.grid), grid)


def test_fourrooms_resets():
    env = FourRooms()
    states, _ = jax.jit(jax.vmap(env.reset))(jr.split(jr.key(2), 256))
    grid, pos = np.asarray(states.grid), np.asarray(states.pos)
    walls = grid[..., 0] == 2
    assert walls.sum(axis=(1, 2)).tolist() == [4 * 18 + 2 * 17 - 1 - 4] * 256
    assert ((grid[..., 0] == 8).sum(axis=(1, 2)) == 1).all()
    assert (grid[np.arange(256), pos[:, 1], pos[:, 0], 0] == EMPTY).all()
    # Some agents start in the gaps (4 of 260 cells) over enough draws: not checked; every
    # room is used.
    rooms = set(zip((pos[:, 0] > 9).tolist(), (pos[:, 1] > 9).tolist(), strict=True))
    assert len(rooms) == 4


def test_autoreset_starts_a_fresh_episode():
    env = DoorKey(5, max_steps=3)
    state, _ = env.reset(jr.key(0))
    step = jax.jit(lambda s, a, k: autoreset_step(env, s, a, k))
    for i in range(3):
        state, obs, _, done, success = step(state, jnp.int32(LEFT), jr.key(i))
    assert bool(done) and not bool(success) and int(state.step_count) == 0
    # Observing only the kept state (`observe`) gives what `reset` itself returns.
    fresh_state, fresh_obs = env.reset(jr.split(jr.key(2))[1])
    assert all(
        np.array_equal(a, b)
        for a, b in zip(
            jax.tree.leaves((state, obs)), jax.tree.leaves((fresh_state, fresh_obs)), strict=True
        )
    )


# ----------------------------------------------------------------------------- registry


ENV_SPECS = [
    s
    for s in vars(plugins.builtin).values()
    if isinstance(s, TaskSpec) and s.factory.startswith(("tasks.minigrid_levels", "tasks.babyai"))
]
CI_ENVS = {"doorkey-5x5", "babyai-pickuploc"}


@pytest.mark.parametrize(
    "spec",
    [s if s.name in CI_ENVS else pytest.param(s, marks=pytest.mark.slow) for s in ENV_SPECS],
    ids=lambda s: s.name,
)
def test_environment_contract(spec: TaskSpec):
    """Every registered environment: built from its default config, `reset`/`step` jit and
    vmap, shapes and dtypes match `io`, same key same numbers."""
    env = spec.load()(spec.config(), key=jr.key(0))
    assert isinstance(env, AbstractEnvironment)
    io = env.io
    keys = jr.split(jr.key(3), 4)
    reset = jax.jit(jax.vmap(env.reset))
    state, obs = reset(keys)
    assert obs["image"].shape == (4, *io.x_shape) and obs["image"].dtype == jnp.uint8
    assert obs["direction"].shape == (4,) and obs["direction"].dtype == jnp.int32
    if io.mission_len is None:
        assert "mission" not in obs
    else:
        assert obs["mission"].shape == (4, io.mission_len) and io.mission_vocab is not None
        assert int(obs["mission"].max()) < io.mission_vocab and (obs["mission"][:, 0] > 0).all()
    step = jax.jit(jax.vmap(env.step))
    actions = jnp.arange(4) % io.actions
    state, obs2, reward, terminated, truncated = step(state, actions, keys)
    assert obs2["image"].shape == obs["image"].shape and reward.dtype == jnp.float32
    assert terminated.dtype == jnp.bool_ and truncated.shape == (4,)
    again = reset(keys)
    assert all(
        np.array_equal(a, b)
        for a, b in zip(jax.tree.leaves(again[1]), jax.tree.leaves(obs), strict=True)
    )
    assert env.show(jax.tree.map(lambda a: a[0], state)).dtype == np.uint8


def test_zoo_list_shows_the_environments():
    """`zoo list` with the environments registered (as the `zoo.tasks` entry points do once
    the package is installed) lists each with its description, and builds them by name."""
    from runs.cli import main

    # Under the built-in distribution's name, so that they coincide with the entry points once
    # the package is reinstalled (as tests/test_preference_grid.py does).
    try:
        for spec in ENV_SPECS:
            plugins.register(spec, dist=plugins.own_distribution())
        listing = plugins.format_listing()
        assert all(spec.name in listing for spec in ENV_SPECS)
        assert main(["list"]) == 0
        env = plugins.task_spec("doorkey-8x8").load()(DoorKeyConfig(), key=jr.key(0))
        assert isinstance(env, DoorKey) and env.max_steps == 640
    finally:
        plugins.reset()


def test_every_environment_is_registered_in_pyproject():
    import pathlib
    import tomllib

    pyproject = pathlib.Path(__file__).resolve().parents[1] / "pyproject.toml"
    entries = tomllib.loads(pyproject.read_text())["project"]["entry-points"]["zoo.tasks"]
    for spec in ENV_SPECS:
        assert entries[spec.name] == f"plugins.builtin:{spec.name.replace('-', '_')}"
    assert len(ENV_SPECS) == 11  # 5 MiniGrid levels (DoorKey x 4, FourRooms), 6 BabyAI levels


# ----------------------------------------------------------------------------- oracle


@pytest.fixture(scope="module")
def gym():
    pytest.importorskip("minigrid")
    import gymnasium
    import minigrid  # noqa: F401  (registers the environments)

    return gymnasium


@pytest.mark.parametrize(
    ("level", "ours", "seeds"),
    [
        ("MiniGrid-DoorKey-5x5-v0", DoorKey(5), 6),
        ("MiniGrid-DoorKey-6x6-v0", DoorKey(6), 4),
        ("MiniGrid-DoorKey-8x8-v0", DoorKey(8), 4),
        ("MiniGrid-DoorKey-16x16-v0", DoorKey(16), 2),
        ("MiniGrid-FourRooms-v0", FourRooms(), 6),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_agrees_with_minigrid(gym, level, ours, seeds):
    """Random actions (with pickups, drops, toggles, walls and timeouts), then a scripted
    solution, on the same layouts in both: identical observations, rewards, termination."""
    from _minigrid_oracle import Replay, face_actions, random_actions

    replay = Replay(gym.make(level), ours)
    rng = np.random.default_rng(0)
    for seed in range(seeds):
        replay.reset(seed)
        replay.run(random_actions(rng, 400))
    solved = 0
    for seed in range(100, 100 + seeds):
        replay.reset(seed)
        u = replay.env.unwrapped
        grid = u.grid
        cells = [(x, y) for x in range(u.width) for y in range(u.height)]
        kind = {c: (grid.get(*c).type if grid.get(*c) else None) for c in cells}
        if "DoorKey" in level:
            key = next(c for c in cells if kind[c] == "key")
            door = next(c for c in cells if kind[c] == "door")
            replay.run([*face_actions(replay.env, key), PICKUP])
            replay.run([*face_actions(replay.env, door), TOGGLE, FORWARD])
        goal = next(c for c in cells if kind[c] == "goal")
        replay.run([*face_actions(replay.env, goal), FORWARD])
        solved += replay.successes > 0
        replay.successes = 0
        assert replay.done
    print(f"{level}: {replay.steps} steps compared, {solved} scripted successes")
    assert solved == seeds
    assert replay.steps > 100 * seeds


def test_zoo_show_draws_an_environment(tmp_path):
    from runs.show import show

    out = show(DoorKey(5), "doorkey-5x5", episodes=1, out=tmp_path / "show.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 1000


def test_visibility_is_minigrids_process_vis(gym):
    """On random 7 x 7 views (walls where the agent cannot see past), our occlusion equals
    `minigrid.core.grid.Grid.process_vis` itself."""
    from minigrid.core.grid import Grid
    from minigrid.core.world_object import Wall

    rng = np.random.default_rng(0)
    see = rng.random((300, 7, 7)) < rng.uniform(0.4, 0.95, (300, 1, 1))
    ours = np.asarray(jax.jit(jax.vmap(visibility))(jnp.asarray(see)))
    for i in range(300):
        grid = Grid(7, 7)
        for x, y in zip(*np.nonzero(~see[i]), strict=True):
            grid.set(int(x), int(y), Wall())
        np.testing.assert_array_equal(ours[i], grid.process_vis((3, 6)), err_msg=f"view {i}")
