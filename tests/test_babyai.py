"""The single-room BabyAI levels: start states follow BabyAI's rules, and replaying the same
actions on the same layouts agrees with the Farama `minigrid` package step by step (the oracle,
a test-only dependency: those tests skip without it), including BabyAI's verifier."""

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

from tasks.babyai import GoTo, PickupDist, PickupLoc, objects_reachable
from tasks.minigrid import BALL, DIR_TO_VEC, DONE, EMPTY, GREY, PICKUP, RED, detokenize


def _objects(grid: np.ndarray) -> np.ndarray:
    return np.argwhere(np.isin(grid[..., 0], (5, 6, 7)))  # (y, x) of keys, balls, boxes


@pytest.mark.parametrize(
    ("env", "n"),
    [
        pytest.param(GoTo(8, 8, red_ball=True, grey=True), 8, id="gotoredballgrey"),
        pytest.param(PickupLoc(), 8, id="pickuploc", marks=pytest.mark.slow),
    ],
)
def test_resets_follow_babyai_rules(env, n):
    states, obs = jax.jit(jax.vmap(env.reset))(jr.split(jr.key(0), 128))
    occupied = jnp.isin(states.grid[..., 0], jnp.array([5, 6, 7]))
    reachable = jax.jit(jax.vmap(objects_reachable))(states.grid, states.pos, occupied)
    assert bool(reachable.all())
    states, obs = jax.tree.map(np.asarray, (states, obs))
    for i in range(128):
        grid = states.grid[i]
        x, y = states.pos[i]
        objects = _objects(grid)
        assert len(objects) == n
        assert grid[y, x, 0] == EMPTY
        tracked = np.argwhere(states.tracked[i])
        assert len(tracked) >= 1 and all(grid[ty, tx, 0] in (5, 6, 7) for ty, tx in tracked)
        mission = detokenize(obs["mission"][i])
        dx, dy = DIR_TO_VEC[int(states.direction[i])]
        if isinstance(env, GoTo):
            assert mission == "go to the red ball"
            assert all(abs(ox - x) + abs(oy - y) >= 2 for oy, ox in objects)
            assert (tracked == np.argwhere((grid[..., 0] == BALL) & (grid[..., 1] == RED))).all()
            others = [grid[oy, ox, 1] for oy, ox in objects if (oy, ox) != tuple(tracked[0])]
            assert all(c == GREY for c in others)
        else:
            assert mission.startswith(("pick up the ", "pick up a "))
            assert (mission.startswith("pick up a ")) == (len(tracked) > 1)
            assert all(abs(ox - 4) + abs(oy - 4) >= 2 for oy, ox in objects)
            assert grid[y + dy, x + dx, 0] in (EMPTY, 2)  # not facing an object


def test_pickupdist_resets_follow_babyai_rules():
    """5 objects of distinct (type, colour) away from the centre, the agent not facing one,
    and the described objects tracked: all of one type, one colour, or one kind."""
    env = PickupDist()
    states, obs = jax.jit(jax.vmap(env.reset))(jr.split(jr.key(0), 128))
    states, obs = jax.tree.map(np.asarray, (states, obs))
    words = {"by type": 0, "by colour": 0, "a": 0}
    for i in range(128):
        grid = states.grid[i]
        x, y = states.pos[i]
        objects = _objects(grid)
        kinds = {(grid[oy, ox, 0], grid[oy, ox, 1]) for oy, ox in objects}
        assert len(objects) == 5 and len(kinds) == 5
        assert all(abs(ox - 3) + abs(oy - 3) >= 2 for oy, ox in objects)
        dx, dy = DIR_TO_VEC[int(states.direction[i])]
        assert grid[y + dy, x + dx, 0] in (EMPTY, 2)
        tracked = [tuple(grid[ty, tx, :2]) for ty, tx in np.argwhere(states.tracked[i])]
        mission = detokenize(obs["mission"][i]).split()
        assert mission[:2] == ["pick", "up"] and mission[2] == ("a" if len(tracked) > 1 else "the")
        named_type = mission[-1] != "object"
        named_colour = len(mission) == 5
        assert named_type or named_colour
        words["by type"] += named_type and not named_colour
        words["by colour"] += named_colour and not named_type
        words["a"] += mission[2] == "a"
        types, colours = {t for t, _ in tracked}, {c for _, c in tracked}
        assert len(tracked) >= 1
        assert (len(types) == 1) if named_type else True
        assert (len(colours) == 1) if named_colour else True
        assert len(tracked) == sum(
            (not named_type or t == next(iter(types)))
            and (not named_colour or c == next(iter(colours)))
            for t, c in kinds
        )
    assert 25 < words["by type"] < 60 and 25 < words["by colour"] < 60 and words["a"] > 10


# ----------------------------------------------------------------------------- oracle


@pytest.fixture(scope="module")
def gym():
    pytest.importorskip("minigrid")
    import gymnasium
    import minigrid  # noqa: F401  (registers the environments)

    return gymnasium


LEVELS = [
    ("BabyAI-GoToObj-v0", GoTo(8, 1)),
    ("BabyAI-GoToRedBall-v0", GoTo(8, 8, red_ball=True)),
    ("BabyAI-GoToRedBallGrey-v0", GoTo(8, 8, red_ball=True, grey=True)),
    ("BabyAI-GoToLocal-v0", GoTo(8, 8)),
    ("BabyAI-PickupLoc-v0", PickupLoc()),
    ("BabyAI-PickupDist-v0", PickupDist()),
]


@pytest.mark.parametrize(("level", "ours"), LEVELS, ids=[name for name, _ in LEVELS])
def test_agrees_with_babyai(gym, level, ours):
    """Random actions (pickups, drops, toggles of boxes, timeouts), then scripted solutions
    (walk to face the instruction's object; `done`, which does nothing, then pick it up for
    PickupLoc), on the same layouts: identical observations, rewards
    and termination at every step."""
    from _minigrid_oracle import Replay, face_actions, random_actions

    replay = Replay(gym.make(level), ours)
    rng = np.random.default_rng(0)
    for seed in range(12):
        replay.reset(seed)
        replay.run(random_actions(rng, 80))
    random_steps = replay.steps
    solved = 0
    for seed in range(100, 106):
        replay.reset(seed)
        u = replay.env.unwrapped
        targets = [tuple(int(v) for v in obj.cur_pos) for obj in u.instrs.desc.obj_set]
        path = face_actions(replay.env, targets[0])
        if "Pickup" in level:
            replay.run([*path, DONE, PICKUP])
        else:
            replay.run(path or [DONE])
        solved += replay.successes > 0
        replay.successes = 0
    print(f"{level}: {replay.steps} steps compared, {solved} scripted successes")
    assert solved >= 5  # a path can be blocked by other objects
    assert random_steps > 400 and replay.steps > random_steps


@pytest.mark.parametrize(
    ("level", "ours"),
    [
        pytest.param(*LEVELS[1], id="GoToRedBall"),
        pytest.param(*LEVELS[4], id="PickupLoc", marks=pytest.mark.slow),
        pytest.param(*LEVELS[5], id="PickupDist"),
    ],
)
def test_mission_statistics_match_babyai(gym, level, ours):
    """How often missions say "a" (several objects match), name a colour and a location:
    ours against BabyAI's own resets, within 4.5 standard errors."""
    n = 600
    _, obs = jax.jit(jax.vmap(ours.reset))(jr.split(jr.key(5), n))
    mine = [detokenize(m) for m in np.asarray(obs["mission"])]
    env = gym.make(level)
    theirs = [env.reset(seed=seed)[0]["mission"] for seed in range(n)]
    colours = ("red", "green", "blue", "purple", "yellow", "grey")
    features = {
        "a": lambda m: " a " in f" {m} ",
        "object": lambda m: "object" in m.split(),
        "colour": lambda m: any(c in m.split() for c in colours),
        "location": lambda m: any(w in m.split() for w in ("left", "right", "front", "behind")),
    }
    for name, feature in features.items():
        p, q = np.mean([feature(m) for m in mine]), np.mean([feature(m) for m in theirs])
        se = np.sqrt(max(p * (1 - p) + q * (1 - q), 1e-4) / n)
        assert abs(p - q) < 4.5 * se, (name, p, q)
