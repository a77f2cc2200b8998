"""Speed of the Meta-RIMs agents (`lstm-agent`, `rims-agent`) at their default sizes: a sanity
figure for PPO's targets (>= 20,000 frames/s for the LSTM agent, >= 8,000 for RIMs, for the
whole training loop on 2 CPU cores).

For each agent, on a batch of environments (BabyAI's 64) and a recurrence of BabyAI's 20 steps:

- `update`: one forward and backward pass of a PPO-like loss over `envs x steps` frames
  (`lax.scan` over the steps of the agent vmapped over the environments, the memory multiplied
  by an episode mask at every step, gradient of every parameter), compiled once and timed over
  several calls; reported as frames per second and calls per second. One PPO epoch over a
  rollout of `envs x 40` frames is 2 such calls.
- `act`: one step of the agent for every environment (what a rollout calls per step), as
  frames per second.
- `PPO estimate`: frames per second of BabyAI's PPO iteration from these two alone (a rollout
  of `envs x 40` frames, then 4 epochs over it: `4 * 40 / steps` update calls), without the
  environment's own time.

RIMs runs with dropout (a key per environment and step), as in training. Observations carry a
mission of `--mission-len` tokens (0: none, as MiniGrid's DoorKey).

    python scripts/benchmark_agents.py [--envs 64] [--steps 20] [--mission-len 0] [--calls 5]
"""

import argparse
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu

from zoo import IOSpec, count_params
from zoo.agents import make_lstm, make_rims
from zoo.config import LSTMAgentConfig, RIMsAgentConfig


def observations(key, shape: tuple[int, ...], mission_len: int, vocab: int) -> dict:
    """Random observations of the given batch shape."""
    k_image, k_mission = jr.split(key)
    obs = {
        "image": jr.randint(k_image, (*shape, 7, 7, 3), 0, 11).astype(jnp.uint8),
        "direction": jnp.zeros(shape, jnp.int32),
    }
    if mission_len:
        obs["mission"] = jr.randint(k_mission, (*shape, mission_len), 0, vocab)
    return obs


def update_fn(agent_static):
    """Loss and gradient of a PPO-like objective over `[steps, envs]` frames."""

    def loss(params, obs, actions, masks, memory, key):
        agent = eqx.combine(params, agent_static)
        envs = actions.shape[1]

        def step(memory, inputs):
            obs_t, action_t, mask_t, key_t = inputs
            memory = jtu.tree_map(lambda m: m * mask_t.reshape(-1, *([1] * (m.ndim - 1))), memory)
            logits, value, memory = jax.vmap(lambda o, m, k: agent(o, m, key=k))(
                obs_t, memory, jr.split(key_t, envs)
            )
            log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action_t[:, None], 1)
            return memory, jnp.mean(-log_prob[:, 0] + 0.5 * value**2)

        keys = jr.split(key, actions.shape[0])
        _, losses = jax.lax.scan(step, memory, (obs, actions, masks, keys))
        return jnp.mean(losses)

    return jax.jit(jax.value_and_grad(loss))


def timed(fn, args, calls: int) -> float:
    """The fastest of `calls` calls of `fn(*args)`, in seconds, after one compiling call (the
    fastest, not the median: on a machine shared with other jobs the slower calls measure the
    other jobs)."""
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--mission-len", type=int, default=0)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--agents", nargs="+", default=["lstm", "rims"])
    args = parser.parse_args()

    vocab = 100
    io = IOSpec.environment(
        view=(7, 7, 3),
        actions=7,
        mission_len=args.mission_len or None,
        mission_vocab=vocab if args.mission_len else None,
    )
    makers = {
        "lstm": lambda key: make_lstm(LSTMAgentConfig(), io=io, key=key),
        "rims": lambda key: make_rims(RIMsAgentConfig(), io=io, key=key),
    }
    print(
        f"{jax.device_count()} {jax.devices()[0].platform} device(s); envs {args.envs}, "
        f"steps {args.steps}, mission_len {args.mission_len}"
    )
    for name in args.agents:
        agent = makers[name](jr.key(0))
        params, static = eqx.partition(agent, eqx.is_inexact_array)
        k_obs, k_act, k_mask = jr.split(jr.key(1), 3)
        shape = (args.steps, args.envs)
        obs = observations(k_obs, shape, args.mission_len, vocab)
        actions = jr.randint(k_act, shape, 0, 7)
        masks = (jr.uniform(k_mask, shape) > 0.02).astype(jnp.float32)
        memory = jtu.tree_map(lambda m: jnp.stack([m] * args.envs), agent.initial_memory())
        update = update_fn(static)
        seconds = timed(update, (params, obs, actions, masks, memory, jr.key(2)), args.calls)
        frames = args.envs * args.steps

        @eqx.filter_jit
        def act(agent, obs, memory, key):
            keys = jr.split(key, args.envs)
            return jax.vmap(lambda o, m, k: agent(o, m, key=k))(obs, memory, keys)

        obs_1 = jtu.tree_map(lambda x: x[0], obs)
        act_seconds = timed(act, (agent, obs_1, memory, jr.key(3)), 10 * args.calls)
        rollout = args.envs * 40
        ppo = rollout / (40 * act_seconds + 4 * 40 / args.steps * seconds)
        print(
            f"{name}-agent: {count_params(agent):,} parameters; update (fwd+bwd) "
            f"{frames / seconds:,.0f} frames/s ({1 / seconds:.1f} calls/s of {frames} frames); "
            f"act {args.envs / act_seconds:,.0f} frames/s; PPO estimate {ppo:,.0f} frames/s"
        )


if __name__ == "__main__":
    main()
