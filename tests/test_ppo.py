"""Recurrent PPO (`runs.algorithms.ppo`) on a tiny corridor with a tiny GRU agent."""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest
import rl_toys

import plugins
from runs import algorithms
from runs.algorithms.base import train_chunk
from runs.algorithms.config import PPOConfig
from runs.algorithms.ppo import PPO, make
from runs.config import EvalConfig, RunConfig, TrainConfig
from runs.rl import Rollout
from runs.run import RunError, load, read_metrics, train
from runs.sharding import make_mesh

SMALL = PPOConfig(envs=16, frames=8, recurrence=4, minibatch=32, epochs=4, lr=3e-3)


@pytest.fixture(scope="module", autouse=True)
def toys():
    plugins.register(rl_toys.corridor, dist="zoo-tests")
    plugins.register(rl_toys.tiny_agent, dist="zoo-tests")
    yield
    for name in ("toy-corridor", "toy-corridor-long", "toy-agent", "toy-fast-slow-agent"):
        plugins.unregister(name, dist="zoo-tests")


def algorithm(settings: PPOConfig = SMALL, devices: int = 1) -> PPO:
    config = TrainConfig(task=None, model=None, algorithm=settings)
    return make(config, None, None, make_mesh(devices, settings.envs))  # pyright: ignore


def toy_config(steps: int = 4, settings: PPOConfig = SMALL, **run) -> TrainConfig:
    return TrainConfig(
        task=rl_toys.CorridorConfig(),
        model=rl_toys.TinyAgentConfig(),
        task_name="toy-corridor",
        model_name="toy-agent",
        algorithm=settings,
        eval=EvalConfig(every=2, tasks=8, batch=4),
        run=RunConfig(steps=steps, steps_per_call=2, checkpoint_every=2, keep=5, **run),
    )


def test_gae_matches_the_babyai_loop():
    ppo = algorithm(dataclasses.replace(SMALL, gamma=0.9, lam=0.8))
    frames, envs = 7, 3
    k = iter(jr.split(jr.key(0), 4))
    value = jr.normal(next(k), (frames, envs))
    reward = jr.normal(next(k), (frames, envs))
    mask = (jr.uniform(next(k), (frames, envs)) > 0.3).astype(jnp.float32)
    last_value, last_mask = jr.normal(next(k), (envs,)), jnp.array([1.0, 0.0, 1.0])
    zeros = jnp.zeros((frames, envs))
    rollout = Rollout(
        obs={},
        memory=None,
        mask=mask,
        action=zeros.astype(int),
        value=value,
        reward=reward,
        log_prob=zeros,
    )
    advantage, returns = ppo.advantages(rollout, last_value, last_mask)

    v, r, m = np.asarray(value), np.asarray(reward), np.asarray(mask)
    expected = np.zeros((frames, envs))
    for i in reversed(range(frames)):  # babyai/rl/algos/base.py
        next_mask = m[i + 1] if i < frames - 1 else np.asarray(last_mask)
        next_value = v[i + 1] if i < frames - 1 else np.asarray(last_value)
        next_adv = expected[i + 1] if i < frames - 1 else 0
        delta = r[i] + 0.9 * next_value * next_mask - v[i]
        expected[i] = delta + 0.9 * 0.8 * next_adv * next_mask
    np.testing.assert_allclose(advantage, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(returns, expected + v, rtol=1e-5, atol=1e-6)


def test_memory_is_reset_where_an_episode_starts():
    env = rl_toys.Corridor(4)
    model = rl_toys.TinyAgent(env.io, 4, key=jr.key(0))
    ppo = algorithm(dataclasses.replace(SMALL, frames=12))
    state = ppo.init(env, model, jr.key(1))
    _, rollout, finished = eqx.filter_jit(ppo.collect)(env, model, state.extra, jr.key(2))
    count = np.asarray(rollout.memory["count"]) * np.asarray(rollout.mask)
    mask = np.asarray(rollout.mask)
    assert finished["episodes"] > 0 and (mask == 0).any()
    np.testing.assert_array_equal(count[1:], (count[:-1] + 1) * mask[1:])
    # The sequences start at every `recurrence` frames with the memory stored there.
    data = ppo.sequences(rollout, rollout.value, rollout.value)
    assert data["mask"].shape == (16 * 12 // 4, 4)
    np.testing.assert_array_equal(
        data["memory"]["count"][1], np.asarray(rollout.memory["count"])[4, 0]
    )


def test_ppo_learns_the_corridor():
    env = rl_toys.Corridor(6)
    model = rl_toys.TinyAgent(env.io, 8, key=jr.key(0))
    ppo = algorithm()
    before = ppo.evaluate(env, model, jr.key(5), EvalConfig(tasks=32, batch=32))["eval"]
    state, metrics = train_chunk(ppo, env, ppo.init(env, model, jr.key(1)), 40)
    after = ppo.evaluate(env, state.model, jr.key(5), EvalConfig(tasks=32, batch=32))["eval"]
    summary = ppo.summarize({k: np.asarray(v) for k, v in metrics.items()})
    assert summary["frames"] == 40 * 16 * 8
    assert after["success"] >= 0.9 > before["success"]
    assert after["return"] > before["return"]
    assert np.all(np.asarray(metrics["grad_finite"]) == 1)


def test_ppo_is_chosen_for_an_environment_and_refused_elsewhere():
    env = rl_toys.Corridor(4)
    model = rl_toys.TinyAgent(env.io, 4, key=jr.key(0))
    assert algorithms.choose(env, model).name == "ppo"
    with pytest.raises(
        algorithms.AlgorithmError, match="must be an instance of AbstractTask, not Corridor"
    ):
        algorithms.choose(env, model, "bilevel")


def test_bad_settings_fail_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match=r"multiple of algorithm\.recurrence"):
        PPOConfig(frames=30, recurrence=20)
    with pytest.raises(ValueError, match="whole minibatches"):
        PPOConfig(envs=3, frames=20, recurrence=20, minibatch=40)
    for settings, message in (
        (
            dataclasses.replace(SMALL, envs=5, minibatch=8),
            r"algorithm.envs \(5\) must be divisible",
        ),
        (dataclasses.replace(SMALL, envs=6, minibatch=12), "3 sequences.*divisible by the number"),
    ):
        with pytest.raises(RunError, match=message):
            train(toy_config(settings=settings, devices=2), tmp_path / "run", progress=False)
        assert not (tmp_path / "run").exists()


def test_a_run_resumes_exactly_and_loads(tmp_path):
    straight = train(toy_config(steps=4), tmp_path / "straight", progress=False)
    part = train(toy_config(steps=2), tmp_path / "part", progress=False)
    train(toy_config(steps=4), part, resume=True, progress=False)
    a, b = load(straight), load(part)
    assert a.step == b.step == 4
    for x, y in zip(
        jax.tree.leaves(eqx.filter(a.model, eqx.is_array)),
        jax.tree.leaves(eqx.filter(b.model, eqx.is_array)),
        strict=True,
    ):
        np.testing.assert_array_equal(x, y)
    rows, resumed = read_metrics(straight), read_metrics(part)
    assert [r["pool"] for r in rows] == [r["pool"] for r in resumed]
    for r, s in zip(rows, resumed, strict=True):
        assert {k: v for k, v in r.items() if k not in ("time", "fps")} == {
            k: v for k, v in s.items() if k not in ("time", "fps")
        }
    train_rows = [r for r in rows if r["pool"] == "train"]
    assert train_rows[-1]["frames"] == 4 * SMALL.frames_per_step
    evals = [r for r in rows if r["pool"] == "eval"]
    assert [r["step"] for r in evals] == [2, 4]
    assert {"return", "success", "length"} <= set(evals[-1])


def test_the_cli_trains_an_agent_and_evaluates_it_zero_shot(tmp_path, capsys):
    from runs.cli import main

    out = tmp_path / "run"
    flags = ["--algorithm.envs", "16", "--algorithm.frames", "8", "--algorithm.recurrence", "4"]
    flags += ["--algorithm.minibatch", "32", "--steps", "2", "--steps-per-call", "2"]
    flags += ["--checkpoint-every", "2", "--eval.tasks", "4", "--eval.batch", "4"]
    flags += ["--no-progress", "--out", str(out)]
    with pytest.raises(SystemExit):  # PPO has no outer optimizer: its flags are not offered
        main(["train", "toy-corridor", "toy-agent", "--algorithm.outer.lr", "0.1", *flags])
    assert "outer.lr" in capsys.readouterr().err
    # 0.1's alias of it is refused too, naming PPO's own --algorithm.* flags.
    assert main(["train", "toy-corridor", "toy-agent", "--outer.lr", "0.1", *flags]) == 2
    error = capsys.readouterr().err
    assert "--outer.lr" in error and "'ppo' has none" in error and "--algorithm." in error
    assert not out.exists()
    assert main(["train", "toy-corridor", "toy-agent", *flags]) == 0
    assert load(out).config.algorithm_name == "ppo"
    assert main(["eval", str(out), "--task", "toy-corridor", "--tasks", "8"]) == 0
    assert (out / "eval-toy-corridor.json").exists()
    longer = dataclasses.replace(rl_toys.corridor, name="toy-corridor-long", config=LongCorridor)
    plugins.register(longer, dist="zoo-tests")
    assert main(["eval", str(out), "--task", "toy-corridor-long"]) == 2
    assert "do not look like" in capsys.readouterr().err


@dataclasses.dataclass(frozen=True)
class LongCorridor(rl_toys.CorridorConfig):
    length: int = 9


def test_settings_of_another_algorithm_are_refused(tmp_path):
    """An outer optimizer (the in-context algorithm's config) for an agent: PPO does not read
    it, and the in-context algorithm does not train agents."""
    from runs import InContextConfig
    from runs.config import OuterConfig

    settings = InContextConfig(outer=OuterConfig(lr=0.5))
    config = dataclasses.replace(toy_config(), algorithm_name="ppo", algorithm=settings)
    with pytest.raises(
        RunError, match=r"is a InContextConfig, but algorithm 'ppo' takes a PPOConfig"
    ):
        train(config, tmp_path / "run", progress=False)
    config = dataclasses.replace(config, algorithm_name="")  # named from its config's class
    with pytest.raises(RunError, match=r"Algorithm 'in-context' cannot train"):
        train(config, tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


def test_the_madan_presets_prepare(tmp_path):
    """Every Madan et al. 2021 preset passes every check made before compiling, with the
    algorithm its agent calls for, and trains for about its frame budget."""
    from plugins.madan2021.presets import (
        MADAN_ABLATIONS,
        MADAN_AGENTS,
        MADAN_CPU_FRAMES,
        MADAN_LEVELS,
        get_preset,
        madan_preset,
    )
    from runs.run import prepare

    configs = [
        (get_preset(madan_preset(level, agent)), model, algorithm)
        for level in MADAN_LEVELS
        for agent, (model, algorithm) in MADAN_AGENTS.items()
    ]
    configs += [(config, config.model_name, None) for _, config in MADAN_ABLATIONS.values()]
    for preset, model, algorithm in configs:
        config = prepare(preset, tmp_path / "x", False)
        assert config.model_name == model
        assert algorithm is None or config.algorithm_name == algorithm
        frames = config.run.steps * config.algorithm.frames_per_step
        assert abs(frames - MADAN_CPU_FRAMES) < 0.1 * MADAN_CPU_FRAMES
    slowlr = MADAN_ABLATIONS["slowlr"][1]
    assert slowlr.algorithm.slow_lr_factor == 0.25 and slowlr.model.split == "attention"


def test_slow_leaves_move_at_a_fraction_of_the_rate():
    """The slowLR ablation: with `slow_lr_factor` the leaves labelled slow take steps that
    factor the size of those at the full rate (one Adam step: linear in the rate), the others
    the same steps."""
    from runs.rl import on_devices

    env = rl_toys.Corridor(4)
    model = rl_toys.make_fast_slow_agent(rl_toys.TinyAgentConfig(4), io=env.io, key=jr.key(0))
    one_step = dataclasses.replace(SMALL, epochs=1, minibatch=SMALL.envs * SMALL.frames)
    moved = {}
    for factor in (1.0, 0.25):
        settings = dataclasses.replace(one_step, slow_lr_factor=factor)
        config = TrainConfig(task=None, model=None, algorithm=settings)
        ppo = make(config, env, model, make_mesh(1, settings.envs))  # pyright: ignore
        state = ppo.init(env, model, jr.key(1))
        after, _ = eqx.filter_jit(on_devices)(ppo.iteration, ppo.mesh, env, state)
        moved[factor] = jax.tree.map(
            lambda a, b: np.asarray(a) - np.asarray(b),
            eqx.filter(after.model, eqx.is_array),
            eqx.filter(model, eqx.is_array),
        )
    for full, slow in zip(
        jax.tree.leaves(moved[1.0].agent.value),
        jax.tree.leaves(moved[0.25].agent.value),
        strict=True,
    ):
        assert np.abs(full).max() > 0
        np.testing.assert_allclose(slow, 0.25 * full, rtol=1e-3, atol=1e-9)
    for full, same in zip(
        jax.tree.leaves(moved[1.0].agent.cell),
        jax.tree.leaves(moved[0.25].agent.cell),
        strict=True,
    ):
        np.testing.assert_allclose(same, full, rtol=1e-5, atol=1e-9)


def _whole_batch(data: dict) -> dict:
    """Every sequence of `data` as one minibatch, time-major as `PPO.loss` takes it."""
    swap = lambda x: jnp.swapaxes(x, 0, 1)  # noqa: E731
    return {k: v if k == "memory" else jax.tree.map(swap, v) for k, v in data.items()}


def _first_epoch_kl(dropout_keys: str) -> float:
    """The PPO loss's approximate KL on a whole rollout, before any update, for an agent
    whose policy takes noise from its key."""
    env = rl_toys.Corridor(4)
    model = rl_toys.NoisyAgent(env.io, 4, key=jr.key(0))
    ppo = algorithm(dataclasses.replace(SMALL, dropout_keys=dropout_keys))
    state = ppo.init(env, model, jr.key(1))
    _, rollout, _ = eqx.filter_jit(ppo.collect)(env, model, state.extra, jr.key(2))
    assert (rollout.key is not None) == (dropout_keys == "acting")
    batch = _whole_batch(ppo.sequences(rollout, rollout.value, rollout.value))
    _, metrics = eqx.filter_jit(ppo.loss)(model, batch, jr.key(3))
    return float(metrics["approx_kl"])


def test_with_the_acting_keys_the_loss_recomputes_the_acting_policy():
    """`dropout_keys="acting"`: the loss sees the noise the agent acted with (ratio 1 before
    any update); fresh keys draw other noise."""
    assert abs(_first_epoch_kl("acting")) < 1e-6
    assert abs(_first_epoch_kl("fresh")) > 1e-3


def test_a_learned_initial_memory_is_where_episodes_start():
    env = rl_toys.Corridor(4)
    model = rl_toys.NoisyAgent(env.io, 4, key=jr.key(0))
    ppo = algorithm(dataclasses.replace(SMALL, frames=12))
    state = ppo.init(env, model, jr.key(1))
    _, rollout, finished = eqx.filter_jit(ppo.collect)(env, model, state.extra, jr.key(2))
    assert finished["episodes"] > 0
    # The step after an episode ended ran from the learned start: its memory's count is 1.
    mask = np.asarray(rollout.mask)
    count = np.asarray(rollout.memory["count"])
    starts = np.argwhere(mask[:-1] == 0)
    assert len(starts) and all(count[t + 1, e] == 1 for t, e in starts)
    # And the gradient of the loss reaches it.
    batch = _whole_batch(ppo.sequences(rollout, rollout.value + 1.0, rollout.value + 1.0))
    grads = eqx.filter_grad(lambda m: ppo.loss(m, batch, jr.key(3))[0])(model)
    assert float(jnp.max(jnp.abs(grads.start))) > 0


def test_bad_dropout_keys_are_refused():
    with pytest.raises(ValueError, match="dropout_keys"):
        PPOConfig(dropout_keys="same")  # pyright: ignore[reportArgumentType]


def test_a_placed_state_is_placed_as_a_step_leaves_it():
    """`PPO.place` splits the environments over the devices as a step returns them, so the
    second call of a two-device run compiles nothing (it used to compile the step again)."""
    env = rl_toys.Corridor(6)
    model = rl_toys.TinyAgent(env.io, 8, key=jr.key(0))
    ppo = algorithm(devices=2)
    state = ppo.place(ppo.init(env, model, jr.key(1)))
    placed = jax.tree.leaves(eqx.filter(state, eqx.is_array))
    assert any(not x.sharding.is_fully_replicated for x in placed)  # the actors are split
    shardings = [(x.sharding, x.ndim) for x in placed]
    state, _ = train_chunk(ppo, env, state, 1)
    after = [x.sharding for x in jax.tree.leaves(eqx.filter(state, eqx.is_array))]
    assert len(after) == len(shardings)
    for (sharding, ndim), out in zip(shardings, after, strict=True):
        assert sharding.is_equivalent_to(out, ndim)

    compiles = []

    def listen(event: str, duration: float, **kwargs) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        state, _ = train_chunk(ppo, env, state, 1)
        jax.block_until_ready(state)
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert compiles == []
