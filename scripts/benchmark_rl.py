"""Recurrent PPO on MiniGrid DoorKey-5x5, side by side: the zoo's PPO with its `lstm-agent` (or
`rims-agent`) against XLand-MiniGrid's single-task recurrent PPO, trained alternately in one
process at the same number of environments, rollout length, recurrent hidden size, epochs,
minibatches and frames.

    python scripts/benchmark_rl.py [--frames 500000] [--envs 64] [--rollout 40]
        [--minibatches 2] [--epochs 4] [--model lstm-agent|rims-agent] [--repeats 2]
        [--zoo-lr 1e-3] [--xland-conv patches|flax] [--cpu-devices 1] [--json out.json]

Needs `xminigrid` beside the zoo (`pip install -e ".[bench]"`, which installs `xminigrid` and flax); without it the
script says so and exits with status 2.

**The zoo side** is the public API: `runs.run.build` / `build_algorithm` of a `TrainConfig`
(task `doorkey-5x5`, PPO with `runs.algorithms.config.PPOConfig`), trained by
`runs.algorithms.base.train_chunk`. Its `recurrence` is set to the rollout length, so a PPO
sequence is one environment's whole rollout, as on the other side, and `minibatch` to
`envs * rollout / minibatches` frames, and the learning rate to XLand's, 1e-3 (`--zoo-lr`; the
zoo's default, BabyAI's 1e-4, learns DoorKey-5x5 more slowly: about 0.8 success after 500k
frames at these settings, against 1.0 at 1e-3). Every other PPO setting is the zoo's default
(BabyAI's).

**The XLand-MiniGrid side** is written here after `training/train_single_task.py`,
`training/nn.py` and `training/utils.py` of github.com/dunnolab/xland-minigrid (the training
scripts are not in the `xminigrid` package): its `ActorCriticRNN` in flax (cells embedded by
tile and colour, three 2x2 convolutions, the one-hot direction, the previous action and reward,
a GRU core, tanh heads), its rollout with `GymAutoResetWrapper` and
`DirectionObservationWrapper` on `xminigrid.make("MiniGrid-DoorKey-5x5")`, its GAE, its PPO
loss (advantages normalized per minibatch, clipped value loss times 0.5), Adam with global-norm
clipping and a learning rate decayed linearly to 0 over the run, minibatches of whole
environments' rollouts permuted every epoch, `jax.pmap` over the devices with the gradients
averaged over them (`pmean`), each device holding `envs / devices` environments and cutting
them into `minibatches` minibatches. Its own settings are kept where they are not set
equal to the zoo's. Differences from its script: no evaluation of 80 episodes after every update (both sides are
timed on training alone and evaluated once at the end, in the same way), the categorical policy
computed from the logits directly instead of through `distrax` (the same numbers), the
previous reward kept strongly typed (their weakly typed reward would compile every chunked call
twice), the finished episodes counted during the rollout (as the zoo does) to report a training
success, and, by default, the 2x2 convolutions computed as one matrix product over the image's
patches (the same parameters and numbers; the zoo's own encoder does the same): inside the
training loop XLA's CPU backend runs `nn.Conv`'s weight gradients about 10x slower, which would
make XLand's side several times slower on a CPU (`--xland-conv flax` measures it as written).

**Devices.** `--cpu-devices N` splits the host's CPU into `N` XLA devices
(`--xla_force_host_platform_device_count`, set before JAX starts) and both sides over them:
the zoo's mesh (`RunConfig(devices=N)`, environments sharded, gradients averaged) and XLand's
`pmap`. Each device then runs its share of every small operation on a core of its own, where one
device leaves most of them on one core; a minibatch is the same frames either way.

**Set equal:** environments, rollout length, recurrent hidden size (the LSTM's memory; the
RIMs' modules times their size), epochs, minibatches per epoch, frames, the width of the
actor and critic heads (64, the zoo's; XLand's script uses 256), the episode limit (250 steps
on both, MiniGrid's 10 S^2), the learning rate (1e-3 by default), gamma 0.99, clip 0.2, entropy
0.01, value coefficient 0.5, global norm 0.5.

**Still different** (printed too): the core (LSTM with `(h, c)`, or RIMs, against a GRU); the
observation and its encoding (zoo: MiniGrid's `7 x 7 x 3` view with occlusion, BabyAI's
`cnn1` on the image alone; XLand: a `7 x 7 x 2` view without occlusion, embedded and convolved,
with direction, previous action and previous reward); 7 actions against 6 (XLand has no
`done`); the memory reset at episode starts (the zoo) or carried over (XLand's script never
resets the GRU state); the learning rate's schedule (constant against decayed linearly to 0), Adam
epsilon (1e-5 against 1e-8), GAE lambda (0.99 against 0.95), the reward scale (20 against 1),
advantage normalization (none against per minibatch), the value loss (0.5 * max of squared
errors against 0.5 * 0.5 * the same), the initializations.

**What is measured.** Every run trains from a fresh initialization (seed = repeat index) for
`--frames` frames (rounded down to whole calls), in compiled calls of `--chunk` iterations,
the metrics brought to the host after each call; sides alternate: zoo, XLand, zoo, XLand, ...
Per side: the compile time (the first call of the first run less the median of its later
calls), frames per second of the training calls after the first of each run (the median and
the best over the repeats), the training success (the fraction of the episodes that finished
in the last 10% of the calls that ended at the goal, actions sampled from the policy, as in
training) and the evaluation success (`--eval-episodes` fresh episodes after training, the
first episode of each, actions sampled, memory from zero), both as the mean over the repeats
(in runs shorter than a few episode limits, 250 steps, the training success counts mostly the
episodes that ended early, at the goal: read the evaluation there);
and the ratio zoo / XLand of the median frames per second. Both sides run in the same process
on the same host, so the ratio holds for this host and its load at the time (`uptime`).
"""

import argparse
import dataclasses
import json
import math
import os
import statistics
import sys
import time
from typing import Any

TASK = "doorkey-5x5"
AXIS = "devices"  # XLand's pmap axis
XLAND_ENV = "MiniGrid-DoorKey-5x5"

DIFFERENCES = (
    ("core", "LSTM (h, c) or RIMs", "GRU, 1 layer"),
    (
        "observation",
        "7x7x3 (type, colour, state), occluded; cnn1 on the image",
        "7x7x2 (tile, colour), transparent; embedded, 3 convs, direction, prev action and reward",
    ),
    ("actions", "7 (MiniGrid)", "6 (no done)"),
    ("memory at episode start", "reset (mask)", "carried over"),
    ("learning rate", "{zoo_lr:g} constant", "1e-3 decayed linearly to 0"),
    ("adam eps", "1e-5", "1e-8"),
    ("GAE lambda", "0.99", "0.95"),
    ("reward scale", "20", "1"),
    ("advantages", "not normalized", "normalized per minibatch"),
    ("value loss", "0.5 * max(sq errors)", "0.5 * 0.5 * max(sq errors)"),
)


@dataclasses.dataclass(frozen=True)
class Settings:
    """What both sides share."""

    envs: int
    rollout: int
    minibatches: int
    epochs: int
    chunk: int
    calls: int
    hidden: int
    head_hidden: int
    eval_episodes: int
    devices: int = 1

    @property
    def frames_per_iteration(self) -> int:
        return self.envs * self.rollout

    @property
    def iterations(self) -> int:
        return self.chunk * self.calls

    @property
    def frames(self) -> int:
        return self.iterations * self.frames_per_iteration


# ----------------------------------------------------------------------------- the zoo


class Zoo:
    """The zoo's recurrent PPO on `doorkey-5x5`, through the public API."""

    name = "zoo"

    def __init__(self, model: str, settings: Settings, lr: float | None = None):
        import plugins
        from runs.algorithms.config import PPOConfig
        from runs.config import RunConfig, TrainConfig
        from runs.run import build, build_algorithm, resolve

        self.settings = settings
        self.ppo = dataclasses.replace(
            PPOConfig(),
            envs=settings.envs,
            frames=settings.rollout,
            recurrence=settings.rollout,
            minibatch=settings.frames_per_iteration // settings.minibatches,
            epochs=settings.epochs,
        )
        if lr is not None:
            self.ppo = dataclasses.replace(self.ppo, lr=lr)
        model_config = plugins.model_spec(model).config()
        if model == "lstm-agent":
            model_config = dataclasses.replace(
                model_config, memory=settings.hidden, head_hidden=settings.head_hidden
            )
        else:
            model_config = dataclasses.replace(model_config, head_hidden=settings.head_hidden)
        self.config = resolve(
            TrainConfig(
                task=plugins.task_spec(TASK).config(),
                model=model_config,
                task_name=TASK,
                model_name=model,
                algorithm_name="ppo",
                algorithm=self.ppo,
                run=RunConfig(devices=settings.devices),
            )
        )
        self._build = build
        # One algorithm and environment for every run: the compiled call is cached on them.
        self.env, agent = build(self.config)
        self.algorithm = build_algorithm(self.config, self.env, agent)

    def init(self, seed: int) -> Any:
        import jax.random as jr

        config = dataclasses.replace(
            self.config, run=dataclasses.replace(self.config.run, seed=seed)
        )
        _, agent = self._build(config)
        return self.algorithm.place(self.algorithm.init(self.env, agent, jr.key(seed)))

    def chunk(self, state: Any) -> tuple[Any, dict[str, float]]:
        import jax

        from runs.algorithms.base import train_chunk

        state, metrics = train_chunk(self.algorithm, self.env, state, self.settings.chunk)
        metrics = jax.device_get(metrics)
        return state, {
            "episodes": float(metrics["episodes"].sum()),
            "successes": float(metrics["success_sum"].sum()),
        }

    def evaluate(self, state: Any, seed: int) -> dict[str, float]:
        import jax.random as jr

        from runs.config import EvalConfig

        n = self.settings.eval_episodes
        eval_settings = EvalConfig(tasks=n, batch=n)
        out = self.algorithm.evaluate(self.env, state.model, jr.key(10_000 + seed), eval_settings)
        return {"success": out["eval"]["success"], "return": out["eval"]["return"]}


# ----------------------------------------------------------------------------- XLand-MiniGrid


def _xland_network(num_actions: int, hidden: int, head_hidden: int, conv: str = "flax") -> Any:
    """XLand-MiniGrid's `ActorCriticRNN` (`training/nn.py`, symbolic observations, one GRU
    layer), returning logits instead of a `distrax.Categorical`. `conv="patches"` computes its
    2x2 convolutions as one matrix product over the image's patches (the same parameters and
    numbers), which XLA runs faster on a CPU inside a training loop than `nn.Conv`."""
    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    from flax.linen.initializers import glorot_normal, orthogonal, zeros_init
    from xminigrid.core.constants import NUM_COLORS, NUM_TILES

    class GRUCore(nn.Module):
        """One GRU layer over a sequence `[time, features]` (their `GRU`): the input
        projection inside the step, reset gate applied to the recurrent candidate plus `bn`."""

        hidden_dim: int

        @nn.compact
        def __call__(self, xs, state):
            h3 = 3 * self.hidden_dim
            w_in = self.param("Wi", glorot_normal(in_axis=1, out_axis=0), (h3, xs.shape[-1]))
            w_h = self.param("Wh", orthogonal(column_axis=0), (h3, self.hidden_dim))
            b_in = self.param("bi", zeros_init(), (h3,))
            b_n = self.param("bn", zeros_init(), (self.hidden_dim,))

            def step(h, x):
                xr, xz, xn = jnp.split(w_in @ x + b_in, 3)
                hr, hz, hn = jnp.split(w_h @ h, 3)
                r = jax.nn.sigmoid(xr + hr)
                z = jax.nn.sigmoid(xz + hz)
                n = jnp.tanh(xn + r * (hn + b_n))
                h = (1 - z) * n + z * h
                return h, h

            last, outs = jax.lax.scan(step, state, xs)
            return outs, last

    class Core(nn.Module):
        """Their `RNNModel` with one layer: state `[layers=1, hidden]`."""

        hidden_dim: int

        @nn.compact
        def __call__(self, xs, state):
            outs, last = GRUCore(self.hidden_dim)(xs, state[0])
            return outs, last[None]

    class PatchConv(nn.Module):
        """`nn.Conv(features, (2, 2), padding="VALID")` as a matrix product over patches."""

        features: int
        kernel_init: Any

        @nn.compact
        def __call__(self, x):
            kernel = self.param("kernel", self.kernel_init, (2, 2, x.shape[-1], self.features))
            bias = self.param("bias", zeros_init(), (self.features,))
            height, width = x.shape[-3] - 1, x.shape[-2] - 1
            patches = jnp.concatenate(
                [x[..., i : i + height, j : j + width, :] for i in range(2) for j in range(2)],
                axis=-1,
            )
            return patches @ kernel.reshape(-1, self.features) + bias

    batched_core = nn.vmap(
        Core, variable_axes={"params": None}, split_rngs={"params": False}, axis_name="batch"
    )

    class ActorCriticRNN(nn.Module):
        num_actions: int
        hidden_dim: int
        head_hidden_dim: int
        obs_emb_dim: int = 16
        action_emb_dim: int = 16

        @nn.compact
        def __call__(self, inputs, hidden):
            batch, time_ = inputs["obs_img"].shape[:2]
            img = inputs["obs_img"].astype(jnp.int32)
            cells = jnp.concatenate(
                [
                    nn.Embed(NUM_TILES, self.obs_emb_dim)(img[..., 0]),
                    nn.Embed(NUM_COLORS, self.obs_emb_dim)(img[..., 1]),
                ],
                axis=-1,
            )
            x = cells
            for channels in (16, 32, 64):
                init = orthogonal(2**0.5)
                if conv == "patches":
                    layer = PatchConv(channels, init)
                else:
                    layer = nn.Conv(channels, (2, 2), padding="VALID", kernel_init=init)
                x = nn.relu(layer(x))
            obs_emb = x.reshape(batch, time_, -1)
            dir_emb = nn.Dense(self.action_emb_dim)(inputs["obs_dir"])
            act_emb = nn.Embed(self.num_actions, self.action_emb_dim)(inputs["prev_action"])
            out = jnp.concatenate(
                [obs_emb, dir_emb, act_emb, inputs["prev_reward"][..., None]], axis=-1
            )
            out, new_hidden = batched_core(self.hidden_dim)(out, hidden)

            def head(out_dim: int, scale: float):
                return nn.Sequential(
                    [
                        nn.Dense(self.head_hidden_dim, kernel_init=orthogonal(2)),
                        nn.tanh,
                        nn.Dense(out_dim, kernel_init=orthogonal(scale)),
                    ]
                )

            logits = head(self.num_actions, 0.01)(out).astype(jnp.float32)
            values = head(1, 1.0)(out)
            return logits, jnp.squeeze(values, axis=-1), new_hidden

    return ActorCriticRNN(num_actions=num_actions, hidden_dim=hidden, head_hidden_dim=head_hidden)


class XLand:
    """XLand-MiniGrid's single-task recurrent PPO (module docstring) on its DoorKey-5x5."""

    name = "xland"

    # Their TrainConfig's values where the zoo's are not imposed.
    lr = 1e-3
    adam_eps = 1e-8
    gamma = 0.99
    gae_lambda = 0.95
    clip_eps = 0.2
    ent_coef = 0.01
    vf_coef = 0.5
    max_grad_norm = 0.5

    def __init__(self, settings: Settings, conv: str = "flax"):
        import jax
        import xminigrid
        from xminigrid.wrappers import DirectionObservationWrapper, GymAutoResetWrapper

        self.settings = settings
        base, self.params = xminigrid.make(XLAND_ENV)
        self.max_steps = int(self.params.max_steps)
        self.env = DirectionObservationWrapper(GymAutoResetWrapper(base))
        self.eval_env = DirectionObservationWrapper(base)
        self.num_actions = self.env.num_actions(self.params)
        self.network = _xland_network(self.num_actions, settings.hidden, settings.head_hidden, conv)
        devices = jax.devices()[: settings.devices]
        self._init = jax.pmap(self._init_fn, AXIS, devices=devices)
        self._chunk = jax.pmap(self._chunk_fn, AXIS, donate_argnums=0, devices=devices)
        self._evaluate = jax.jit(self._evaluate_fn)

    # -- state

    def _optimizer(self):
        import optax

        s = self.settings
        per_update = s.minibatches * s.epochs

        def linear_schedule(count):
            return self.lr * (1.0 - (count // per_update) / s.iterations)

        return optax.chain(
            optax.clip_by_global_norm(self.max_grad_norm),
            optax.inject_hyperparams(optax.adam)(learning_rate=linear_schedule, eps=self.adam_eps),
        )

    def _inputs(self, img, direction, prev_action, prev_reward) -> dict:
        """The network's inputs `[batch, time=1, ...]` from one step's batch."""
        return {
            "obs_img": img[:, None],
            "obs_dir": direction[:, None],
            "prev_action": prev_action[:, None],
            "prev_reward": prev_reward[:, None],
        }

    @property
    def _envs_per_device(self) -> int:
        return self.settings.envs // self.settings.devices

    def _init_fn(self, key):
        """One device's runner: the same network on every device, its own environments."""
        import jax
        import jax.numpy as jnp
        from flax.training.train_state import TrainState

        n = self._envs_per_device
        key, net_key = jax.random.split(key)
        if self.settings.devices > 1:
            key = jax.random.fold_in(key, jax.lax.axis_index(AXIS))
        shapes = self.env.observation_shape(self.params)
        obs = {
            "obs_img": jnp.zeros((n, 1, *shapes["img"])),
            "obs_dir": jnp.zeros((n, 1, shapes["direction"])),
            "prev_action": jnp.zeros((n, 1), dtype=jnp.int32),
            "prev_reward": jnp.zeros((n, 1)),
        }
        hidden = jnp.zeros((n, 1, self.settings.hidden))
        variables = self.network.init(net_key, obs, hidden)
        train_state = TrainState.create(
            apply_fn=self.network.apply, params=variables, tx=self._optimizer()
        )
        key, reset_key = jax.random.split(key)
        timestep = jax.vmap(self.env.reset, in_axes=(None, 0))(
            self.params, jax.random.split(reset_key, n)
        )
        prev_action = jnp.zeros(n, dtype=jnp.int32)
        prev_reward = jnp.zeros(n)
        return (key, train_state, timestep, prev_action, prev_reward, hidden)

    def init(self, seed: int) -> Any:
        import jax
        import jax.numpy as jnp

        # The same key on every device: the same network; each folds in its index for its
        # environments.
        data = jax.random.key_data(jax.random.key(seed))
        return self._init(jax.random.wrap_key_data(jnp.stack([data] * self.settings.devices)))

    # -- one update (their `_update_step`)

    def _update(self, runner, _):
        import jax
        import jax.numpy as jnp
        import jax.tree_util as jtu

        s = self.settings

        def env_step(runner, _):
            key, train_state, timestep, prev_action, prev_reward, hidden = runner
            key, action_key = jax.random.split(key)
            obs = timestep.observation
            logits, value, hidden = train_state.apply_fn(
                train_state.params,
                self._inputs(obs["img"], obs["direction"], prev_action, prev_reward),
                hidden,
            )
            action = jax.random.categorical(action_key, logits)
            log_prob = _log_prob(logits, action)
            action, value, log_prob = action[:, 0], value[:, 0], log_prob[:, 0]
            next_timestep = jax.vmap(self.env.step, in_axes=(None, 0, 0))(
                self.params, timestep, action
            )
            last = next_timestep.last()
            transition = {
                "done": last,
                "action": action,
                "value": value,
                "reward": next_timestep.reward,
                "log_prob": log_prob,
                "obs": obs["img"],
                "dir": obs["direction"],
                "prev_action": prev_action,
                "prev_reward": prev_reward,
            }
            counts = {
                "episodes": last.sum(),
                "successes": (last & (next_timestep.discount == 0)).sum(),
            }
            # (Strongly typed, as the first one: a weakly typed reward would compile again.)
            reward = next_timestep.reward.astype(jnp.float32)
            runner = (key, train_state, next_timestep, action, reward, hidden)
            return runner, (transition, counts)

        first_hidden = runner[-1]
        runner, (transitions, counts) = jax.lax.scan(env_step, runner, None, s.rollout)
        key, train_state, timestep, prev_action, prev_reward, hidden = runner
        obs = timestep.observation
        _, last_value, _ = train_state.apply_fn(
            train_state.params,
            self._inputs(obs["img"], obs["direction"], prev_action, prev_reward),
            hidden,
        )
        advantages, targets = self._gae(transitions, last_value[:, 0])

        def epoch(update_state, _):
            key, train_state = update_state
            key, perm_key = jax.random.split(key)
            permutation = jax.random.permutation(perm_key, self._envs_per_device)
            # [time, envs, ...] -> [envs, time, ...]; the first hidden state is [envs, 1, h].
            batch = (
                *jtu.tree_map(lambda x: x.swapaxes(0, 1), (transitions, advantages, targets)),
                first_hidden,
            )
            batch = jtu.tree_map(lambda x: jnp.take(x, permutation, axis=0), batch)
            minibatches = jtu.tree_map(lambda x: x.reshape(s.minibatches, -1, *x.shape[1:]), batch)
            train_state, info = jax.lax.scan(self._minibatch, train_state, minibatches)
            return (key, train_state), info

        (key, train_state), info = jax.lax.scan(epoch, (key, train_state), None, s.epochs)
        info = jtu.tree_map(jnp.mean, info) | jtu.tree_map(jnp.sum, counts)
        runner = (key, train_state, timestep, prev_action, prev_reward, hidden)
        return runner, info

    def _gae(self, transitions, last_value):
        """Their `calculate_gae`: `(advantages, targets)`, `[time, envs]`."""
        import jax
        import jax.numpy as jnp

        def body(carry, t):
            gae, next_value = carry
            not_done = 1 - t["done"]
            delta = t["reward"] + self.gamma * next_value * not_done - t["value"]
            gae = delta + self.gamma * self.gae_lambda * not_done * gae
            return (gae, t["value"]), gae

        _, advantages = jax.lax.scan(
            body, (jnp.zeros_like(last_value), last_value), transitions, reverse=True
        )
        return advantages, advantages + transitions["value"]

    def _minibatch(self, train_state, batch):
        """Their `ppo_update_networks` on one minibatch `[envs, time, ...]`."""
        import jax
        import jax.numpy as jnp

        transitions, advantages, targets, first_hidden = batch
        advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        eps = self.clip_eps

        def loss_fn(params):
            logits, value, _ = train_state.apply_fn(
                params,
                {
                    "obs_img": transitions["obs"],
                    "obs_dir": transitions["dir"],
                    "prev_action": transitions["prev_action"],
                    "prev_reward": transitions["prev_reward"],
                },
                first_hidden,
            )
            log_prob = _log_prob(logits, transitions["action"])
            old_value = transitions["value"]
            clipped = old_value + (value - old_value).clip(-eps, eps)
            value_loss = (
                0.5 * jnp.maximum(jnp.square(value - targets), jnp.square(clipped - targets)).mean()
            )
            ratio = jnp.exp(log_prob - transitions["log_prob"])
            actor_loss = -jnp.minimum(
                advantages * ratio, advantages * jnp.clip(ratio, 1.0 - eps, 1.0 + eps)
            ).mean()
            entropy = _entropy(logits).mean()
            total = actor_loss + self.vf_coef * value_loss - self.ent_coef * entropy
            return total, (value_loss, actor_loss, entropy)

        (loss, (value_loss, actor_loss, entropy)), grads = jax.value_and_grad(
            loss_fn, has_aux=True
        )(train_state.params)
        grads = jax.lax.pmean(grads, AXIS)
        train_state = train_state.apply_gradients(grads=grads)
        return train_state, {
            "total_loss": loss,
            "value_loss": value_loss,
            "actor_loss": actor_loss,
            "entropy": entropy,
        }

    def _chunk_fn(self, runner):
        import jax

        return jax.lax.scan(self._update, runner, None, self.settings.chunk)

    def chunk(self, state: Any) -> tuple[Any, dict[str, float]]:
        import jax

        state, info = self._chunk(state)
        info = jax.device_get(info)
        return state, {
            "episodes": float(info["episodes"].sum()),
            "successes": float(info["successes"].sum()),
        }

    # -- evaluation (the same measure as the zoo's `PPO.evaluate`)

    def _evaluate_fn(self, params, key):
        import jax
        import jax.numpy as jnp

        n = self.settings.eval_episodes
        reset_key, run_key = jax.random.split(key)
        timestep = jax.vmap(self.eval_env.reset, in_axes=(None, 0))(
            self.params, jax.random.split(reset_key, n)
        )
        zeros = jnp.zeros(n)
        carry = (
            timestep,
            jnp.zeros(n, jnp.int32),
            zeros,
            jnp.zeros((n, 1, self.settings.hidden)),
            jnp.zeros(n, bool),
            zeros,
            zeros,
        )

        def body(carry, key):
            timestep, prev_action, prev_reward, hidden, over, ret, success = carry
            obs = timestep.observation
            logits, _, hidden = self.network.apply(
                params, self._inputs(obs["img"], obs["direction"], prev_action, prev_reward), hidden
            )
            action = jax.random.categorical(key, logits)[:, 0]
            timestep = jax.vmap(self.eval_env.step, in_axes=(None, 0, 0))(
                self.params, timestep, action
            )
            running = ~over
            ret = ret + jnp.where(running, timestep.reward, 0.0)
            reached = running & timestep.last() & (timestep.discount == 0)
            success = jnp.where(reached, 1.0, success)
            over = over | timestep.last()
            return (timestep, action, timestep.reward, hidden, over, ret, success), None

        carry, _ = jax.lax.scan(body, carry, jax.random.split(run_key, self.max_steps))
        return {"success": carry[-1].mean(), "return": carry[-2].mean()}

    def evaluate(self, state: Any, seed: int) -> dict[str, float]:
        import jax

        params = jax.tree_util.tree_map(lambda x: x[0], state[1].params)  # the same on each
        out = self._evaluate(params, jax.random.key(10_000 + seed))
        return {k: float(v) for k, v in out.items()}


def _log_prob(logits, action):
    import jax
    import jax.numpy as jnp

    logp = jax.nn.log_softmax(logits)
    return jnp.take_along_axis(logp, action[..., None], axis=-1)[..., 0]


def _entropy(logits):
    import jax
    import jax.numpy as jnp

    logp = jax.nn.log_softmax(logits)
    return -jnp.sum(jnp.exp(logp) * logp, axis=-1)


# ----------------------------------------------------------------------------- the runs


def run_once(side: Any, seed: int, settings: Settings) -> dict[str, Any]:
    """Train `side` from seed `seed` for `settings.calls` calls; its figures."""
    state = side.init(seed)
    times, episodes, successes = [], [], []
    for _ in range(settings.calls):
        start = time.perf_counter()
        state, counts = side.chunk(state)  # on the host: the call is finished
        times.append(time.perf_counter() - start)
        episodes.append(counts["episodes"])
        successes.append(counts["successes"])
    last = max(1, math.ceil(settings.calls / 10))
    finished = sum(episodes[-last:])
    evaluation = side.evaluate(state, seed)
    later = times[1:] or times
    return {
        "seed": seed,
        "first_call_s": times[0],
        "median_call_s": statistics.median(later),
        "frames_per_s": len(later) * settings.chunk * settings.frames_per_iteration / sum(later),
        "train_success": sum(successes[-last:]) / finished if finished else 0.0,
        "train_episodes_last": finished,
        "eval_success": evaluation["success"],
        "eval_return": evaluation["return"],
        "train_s": sum(times),
    }


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    fps = [r["frames_per_s"] for r in runs]
    return {
        "compile_s": runs[0]["first_call_s"] - runs[0]["median_call_s"],
        "frames_per_s_median": statistics.median(fps),
        "frames_per_s_best": max(fps),
        "train_success": statistics.mean(r["train_success"] for r in runs),
        "eval_success": statistics.mean(r["eval_success"] for r in runs),
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--model", default="lstm-agent", choices=["lstm-agent", "rims-agent"])
    parser.add_argument("--frames", type=float, default=5e5, help="frames per training run")
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--rollout", type=int, default=40, help="steps per environment and update")
    parser.add_argument("--minibatches", type=int, default=2, help="minibatches per epoch")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument(
        "--hidden",
        type=int,
        default=None,
        help="recurrent hidden size (default: the zoo agent's, 128 for the LSTM, 5 x 32 for RIMs)",
    )
    parser.add_argument("--chunk", type=int, default=10, help="iterations per compiled call")
    parser.add_argument("--repeats", type=int, default=2, help="training runs per side")
    parser.add_argument("--eval-episodes", type=int, default=1000)
    parser.add_argument(
        "--xland-conv",
        default="patches",
        choices=["patches", "flax"],
        help="XLand's 2x2 convolutions as a matrix product over patches (default: the same "
        "numbers, about 10x faster on a CPU) or as flax's nn.Conv, as its nn.py writes them",
    )
    parser.add_argument(
        "--zoo-lr",
        type=float,
        default=1e-3,
        help="the zoo's PPO learning rate (default 1e-3, XLand's; PPOConfig's own is 1e-4)",
    )
    parser.add_argument(
        "--cpu-devices",
        type=int,
        default=1,
        help="split the host's CPU into this many XLA devices (one per core) and both sides' "
        "environments over them",
    )
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    if args.cpu_devices < 1 or args.envs % (args.cpu_devices * args.minibatches):
        parser.error(
            f"--envs ({args.envs}) must be a multiple of --cpu-devices x --minibatches "
            f"({args.cpu_devices} x {args.minibatches})"
        )
    if args.cpu_devices > 1:  # before JAX starts
        flag = f"--xla_force_host_platform_device_count={args.cpu_devices}"
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flag}".strip()

    try:
        import xminigrid  # pyright: ignore[reportMissingImports]
    except ImportError:
        print(
            "benchmark_rl.py compares against XLand-MiniGrid, which is not installed: "
            "pip install -e '.[bench]' (or pip install xminigrid)",
            file=sys.stderr,
        )
        sys.exit(2)
    import jax

    import plugins

    hidden = args.hidden
    if hidden is None:
        agent = plugins.model_spec(args.model).config()
        hidden = agent.memory if args.model == "lstm-agent" else agent.num_modules * agent.hidden
    elif args.model != "lstm-agent":
        parser.error("--hidden sets the LSTM's memory; the RIMs' size is num_modules x hidden")
    per_call = args.chunk * args.envs * args.rollout
    calls = max(2, int(args.frames) // per_call)
    settings = Settings(
        envs=args.envs,
        rollout=args.rollout,
        minibatches=args.minibatches,
        epochs=args.epochs,
        chunk=args.chunk,
        calls=calls,
        hidden=hidden,
        head_hidden=64,
        eval_episodes=args.eval_episodes,
        devices=args.cpu_devices,
    )
    if len(jax.devices()) < settings.devices:
        parser.error(f"--cpu-devices {settings.devices}: JAX sees only {jax.devices()}")
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(
        f"host: {os.cpu_count()} CPU cores, load {load}, JAX {jax.__version__}, "
        f"xminigrid {xminigrid.__version__}, {jax.devices()}"
    )
    print(
        f"settings: {args.model}, {settings.envs} envs x {settings.rollout} steps, "
        f"{settings.epochs} epochs x {settings.minibatches} minibatches, hidden {hidden}, "
        f"{settings.devices} device(s), "
        f"{settings.frames:,} frames per run ({calls} calls of {settings.chunk} iterations), "
        f"{args.repeats} runs per side, alternating; xland convolutions: {args.xland_conv}"
    )
    print("settings that differ (zoo | xland):")
    zoo_lr = args.zoo_lr
    differences = [(w, z.format(zoo_lr=zoo_lr), x) for w, z, x in DIFFERENCES]
    for what, zoo, xland in differences:
        print(f"  {what:>24}: {zoo} | {xland}")

    sides = [Zoo(args.model, settings, args.zoo_lr), XLand(settings, args.xland_conv)]
    runs: dict[str, list[dict[str, Any]]] = {side.name: [] for side in sides}
    for repeat in range(args.repeats):
        for side in sides:
            figures = run_once(side, repeat, settings)
            runs[side.name].append(figures)
            print(
                f"  run {repeat} {side.name:>5}: {figures['frames_per_s']:,.0f} frames/s, "
                f"first call {figures['first_call_s']:.1f} s, train success "
                f"{figures['train_success']:.3f}, eval success {figures['eval_success']:.3f}",
                flush=True,
            )
    results = {name: summarize(r) for name, r in runs.items()}
    ratio = results["zoo"]["frames_per_s_median"] / results["xland"]["frames_per_s_median"]
    print(f"== {args.model} on {TASK} (zoo) vs {XLAND_ENV} (xland)")
    for name, figures in results.items():
        print(
            f"{name:>6}: compile {figures['compile_s']:.1f} s, "
            f"{figures['frames_per_s_median']:,.0f} frames/s median "
            f"({figures['frames_per_s_best']:,.0f} best), "
            f"train success {figures['train_success']:.3f} (last 10% of calls, sampled), "
            f"eval success {figures['eval_success']:.3f} "
            f"({settings.eval_episodes} episodes, sampled)"
        )
    print(f" ratio: zoo / xland frames/s = {ratio:.2f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "model": args.model,
                    "xland_conv": args.xland_conv,
                    "settings": dataclasses.asdict(settings) | {"frames": settings.frames},
                    "load": load,
                    "differences": [list(d) for d in differences],
                    "results": results,
                    "ratio_frames_per_s": ratio,
                },
                f,
                indent=2,
            )


if __name__ == "__main__":
    main()
