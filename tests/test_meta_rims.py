"""Madan et al. 2021's fast and slow loops (`plugins.madan2021.meta_rims`) on the test corridor."""

import dataclasses

import equinox as eqx
import jax
import jax.random as jr
import numpy as np
import pytest
import rl_toys

import plugins
from plugins.madan2021.config import MetaRIMsConfig
from plugins.madan2021.meta_rims import MetaRIMs, make
from runs.algorithms.base import train_chunk
from runs.config import EvalConfig, RunConfig, TrainConfig
from runs.rl import on_devices
from runs.run import RunError, load, read_metrics, train
from runs.sharding import make_mesh

SMALL = MetaRIMsConfig(
    envs=8, frames=4, recurrence=2, minibatch=8, epochs=2, lr=3e-2, outer_data="fresh"
)


@pytest.fixture(scope="module", autouse=True)
def toys():
    for spec in (rl_toys.corridor, rl_toys.tiny_agent, rl_toys.fast_slow_agent):
        plugins.register(spec, dist="zoo-tests")
    yield
    for name in ("toy-corridor", "toy-corridor-long", "toy-agent", "toy-fast-slow-agent"):
        plugins.unregister(name, dist="zoo-tests")


def setup(settings: MetaRIMsConfig = SMALL):
    env = rl_toys.Corridor(4)
    model = rl_toys.make_fast_slow_agent(rl_toys.TinyAgentConfig(4), io=env.io, key=jr.key(0))
    config = TrainConfig(task=None, model=None, algorithm=settings)
    algorithm = make(config, env, model, make_mesh(1, settings.envs))
    return env, model, algorithm


def leaves(tree):
    return [np.asarray(x) for x in jax.tree.leaves(eqx.filter(tree, eqx.is_array))]


def test_each_loop_leaves_the_other_loops_leaves_bit_identical():
    env, model, algorithm = setup()
    state = algorithm.init(env, model, jr.key(1))
    run = eqx.filter_jit(on_devices)
    for loop, opt_state, moved, kept in (
        (algorithm.fast, state.opt_state[0], lambda m: m.agent.cell, lambda m: m.agent.value),
        (algorithm.slow, state.opt_state[1], lambda m: m.agent.value, lambda m: m.agent.cell),
    ):
        before = eqx.tree_at(lambda s: s.opt_state, state, opt_state)
        after, _ = run(loop.iteration, algorithm.mesh, env, before)
        for x, y in zip(leaves(kept(before.model)), leaves(kept(after.model)), strict=True):
            assert x.tobytes() == y.tobytes()
        changed = [
            not np.array_equal(x, y)
            for x, y in zip(leaves(moved(before.model)), leaves(moved(after.model)), strict=True)
        ]
        assert any(changed)
        # The policy head is fast too.
        policy = zip(
            leaves(before.model.agent.policy), leaves(after.model.agent.policy), strict=True
        )
        assert all(np.array_equal(x, y) for x, y in policy) == (loop is algorithm.slow)


def test_the_spans_are_what_the_flags_say():
    env, model, algorithm = setup(dataclasses.replace(SMALL, slow_factor=3, inner_updates=2))
    assert isinstance(algorithm, MetaRIMs)
    state = algorithm.init(env, model, jr.key(1))
    for loop, frames, recurrence in ((algorithm.fast, 4, 2), (algorithm.slow, 12, 6)):
        _, rollout, _ = eqx.filter_jit(loop.collect)(env, model, state.extra, jr.key(2))
        assert rollout.mask.shape == (frames, 8)
        data = loop.sequences(rollout, rollout.value, rollout.value)
        assert data["mask"].shape == (8 * frames // recurrence, recurrence)
        assert loop.settings.minibatch == 8 * recurrence // 2
    state, metrics = train_chunk(algorithm, env, state, 2)
    assert int(metrics["frames"][-1]) == 2 * 8 * 4 * (2 + 3)
    assert {"fast_loss", "slow_loss", "fast_entropy", "slow_value_loss"} <= set(metrics)


def test_an_agent_without_slow_leaves_is_refused():
    env = rl_toys.Corridor(4)
    model = rl_toys.TinyAgent(env.io, 4, key=jr.key(0))
    config = TrainConfig(task=None, model=None, algorithm=SMALL)
    with pytest.raises(ValueError, match="labels no leaf 'fast'"):
        make(config, env, model, make_mesh(1, 8))


def _config(steps: int, model_name: str = "toy-fast-slow-agent") -> TrainConfig:
    return TrainConfig(
        task=rl_toys.CorridorConfig(length=4),
        model=rl_toys.TinyAgentConfig(hidden=4),
        task_name="toy-corridor",
        model_name=model_name,
        algorithm_name="meta-rims",
        algorithm=SMALL,
        eval=EvalConfig(every=0, tasks=4, batch=4),
        run=RunConfig(steps=steps, steps_per_call=1, checkpoint_every=1),
    )


def test_train_refuses_an_agent_without_the_split(tmp_path):
    with pytest.raises(RunError, match="labels no leaf"):
        train(_config(1, model_name="toy-agent"), tmp_path / "c")
    assert not (tmp_path / "c").exists()


@pytest.mark.slow  # three compilations of both loops; PPO's resume test covers the engine's path
def test_a_meta_rims_run_resumes_exactly(tmp_path):
    straight = train(_config(2), tmp_path / "a", progress=False)
    part = train(_config(1), tmp_path / "b", progress=False)
    train(_config(2), part, resume=True, progress=False)
    for x, y in zip(leaves(load(straight).model), leaves(load(part).model), strict=True):
        assert x.tobytes() == y.tobytes()
    assert read_metrics(straight)[-2]["frames"] == 2 * 8 * 4 * 5


# ------------------------------------------------------------------ outer data: reuse


def test_reuse_defaults_to_slow_factor_fast_iterations_and_acts_no_new_frame():
    settings = dataclasses.replace(SMALL, outer_data="reuse", slow_factor=2)
    assert settings.fast_updates == 2 and dataclasses.replace(SMALL).fast_updates == 1
    assert settings.frames_per_step == 8 * 4 * 2  # the fast iterations' frames only
    env, model, algorithm = setup(settings)
    assert algorithm.inner_updates == 2 and algorithm.slow.settings.frames == 8
    state = algorithm.init(env, model, jr.key(1))
    parts = (lambda m: m.agent.cell, lambda m: m.agent.value)
    before = [leaves(part(state.model)) for part in parts]  # the chunk donates `state`
    after, metrics = train_chunk(algorithm, env, state, 2)
    assert int(metrics["frames"][-1]) == 2 * 8 * 4 * 2
    # Both groups moved; the slow loop's loss is a number (it learned on the reused frames).
    for part, was in zip(parts, before, strict=True):
        moved = zip(was, leaves(part(after.model)), strict=True)
        assert any(not np.array_equal(x, y) for x, y in moved)
    assert np.all(np.isfinite(metrics["slow_loss"]))


def test_replay_under_the_acting_parameters_gives_back_the_rollout():
    """With the parameters that acted, the replay recomputes the memories, values and
    log-probabilities the rollout recorded (the recomputation is the same computation)."""
    from runs.rl import concatenate, replay

    env, model, algorithm = setup()
    state = algorithm.init(env, model, jr.key(1))
    collect = eqx.filter_jit(algorithm.fast.collect)
    actors, first, _ = collect(env, model, state.extra, jr.key(2))
    actors, second, _ = collect(env, model, actors, jr.key(3))
    both = concatenate([first, second])
    assert both.mask.shape == (8, 8)
    again, last = eqx.filter_jit(replay)(model, both, None)
    for name in ("value", "log_prob"):
        np.testing.assert_allclose(getattr(again, name), getattr(both, name), rtol=1e-5, atol=1e-6)
    for x, y in zip(jax.tree.leaves(again.memory), jax.tree.leaves(both.memory), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
    for x, y in zip(jax.tree.leaves(last), jax.tree.leaves(actors.memory), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def test_reuse_spans_that_do_not_divide_are_refused():
    with pytest.raises(ValueError, match=r"--algorithm.outer-data reuse cuts .* 4 frames"):
        dataclasses.replace(SMALL, outer_data="reuse", inner_updates=1, slow_factor=4)
    with pytest.raises(ValueError, match="'fresh' or 'reuse'"):
        dataclasses.replace(SMALL, outer_data="both")  # pyright: ignore[reportArgumentType]


def test_the_fast_loop_can_leave_the_value_loss_to_the_slow_one():
    _, _, algorithm = setup(dataclasses.replace(SMALL, fast_value_loss=False))
    assert isinstance(algorithm, MetaRIMs)
    assert algorithm.fast.settings.value_coef == 0.0
    assert algorithm.slow.settings.value_coef == SMALL.value_coef > 0
    _, _, default = setup()
    assert isinstance(default, MetaRIMs)
    assert default.fast.settings.value_coef == SMALL.value_coef


def test_reuse_is_the_default_and_runs_saved_before_it_read_as_fresh():
    """`outer_data` defaults to `reuse`; a committed run saved before the field existed (and so
    trained `fresh`) reads as `fresh`, equal to the first reading's run of it."""
    import pathlib

    from plugins.madan2021.presets import SWEEPS
    from runs.experiments import get_preset
    from runs.run import read_config

    assert MetaRIMsConfig().outer_data == "reuse"
    committed = pathlib.Path(__file__).parents[1] / "docs/figures/madan2021-doorkey-cpu"
    directory = committed / "doorkey-5x5-meta-rims" / "seed_0"
    assert "outer_data" not in (directory / "config.json").read_text()
    saved = read_config(directory)
    assert isinstance(saved.algorithm, MetaRIMsConfig)
    assert saved.algorithm.outer_data == "fresh" and saved.algorithm.fast_updates == 1
    # It is a run of the sweep of the first reading, not of the (faithful) preset.
    first = SWEEPS["madan2021/doorkey-cpu"].runs[2]
    assert first.label == "doorkey-5x5-meta-rims"
    assert saved.algorithm == first.config.algorithm
    assert get_preset("madan2021/doorkey-5x5-meta-rims").algorithm.outer_data == "reuse"
