"""Where the time of one iteration of the zoo's recurrent PPO goes: environment stepping,
the agent's forward pass while acting, GAE, the PPO epochs' forward and backward passes and
optimizer updates, and the calls' host overhead.

    python scripts/profile_ppo.py [--task doorkey-5x5] [--model lstm-agent|rims-agent]
        [--envs 64] [--frames 40] [--recurrence 20] [--minibatch 1280] [--epochs 4]
        [--iterations 10] [--repeats 5] [--json out.json]

**How it measures.** The pieces of `runs.algorithms.ppo.PPO.iteration` are compiled
separately (`eqx.filter_jit` of each inside the algorithm's one-device `shard_map`, as the
training step runs them) on the arrays of a real iteration, and each is timed with
`jax.block_until_ready` as the best of `--repeats` calls after one that compiles:

- `env`: the rollout's environment steps alone, `frames` vmapped `tasks.autoreset_step`s of
  every environment with uniformly random actions (a trivial policy);
- `collect`: the rollout as PPO acts it (`runs.rl.collect`: agent, sampling, environment,
  episode statistics); the agent's share is `collect - env`, and `agent` times the agent alone
  (encoder, core, heads, sampling) over the recorded observations for comparison;
- `gae`: the bootstrap value, GAE and the rollout cut into sequences (`PPO.update` before
  `learn`);
- `loss`: the PPO epochs' forward passes alone (`PPO.loss` on every minibatch of every epoch,
  minibatches gathered as `PPO.learn` gathers them, no gradient);
- `grad`: the same with the gradient (`jax.value_and_grad`); backward = `grad - loss`;
  `grad_core`: the gradient of every trained leaf but the observation encoders' (the core and
  the heads), so that the backward splits into `grad_core - loss` (core and heads) and
  `grad - grad_core` (the encoders' backward, and the core's gradient with respect to their
  output, which `grad_core` need not compute);
- `optimizer`: the epochs' optimizer updates alone (`PPO.optimizer.update` and
  `eqx.apply_updates` with a fixed gradient, once per minibatch);
- `learn`: `PPO.learn` whole (gather, gradient, update, metrics), for comparison;
- `iteration`: a whole iteration as training runs it, `train_chunk` of `--iterations`
  iterations in one call, divided by the iterations; `call1`: `train_chunk` of one
  iteration, so `call1 - iteration` is what a call costs beyond its work (dispatch, buffer
  donation, metrics back to the host); `host` times bringing one call's metrics to the host
  (`jax.device_get`).

Separately compiled pieces are not fused with their neighbours, so their sum differs from
the whole iteration a little (the table shows both). The host's other load changes every
figure; run it on an idle machine (`uptime`) for figures worth quoting.
"""

import argparse
import dataclasses
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any


def best_time(fn: Callable[..., Any], *args: Any, repeats: int) -> float:
    """Seconds of the fastest of `repeats` calls of `fn(*args)`, after one that compiles."""
    import jax

    jax.block_until_ready(fn(*args))
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn(*args))
        best = min(best, time.perf_counter() - start)
    return best


def profile(args: argparse.Namespace) -> dict[str, Any]:
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import jax.random as jr
    import jax.tree_util as jtu
    from jax.sharding import PartitionSpec

    import plugins
    from runs import rl
    from runs.algorithms.base import train_chunk
    from runs.algorithms.config import PPOConfig
    from runs.config import RunConfig, TrainConfig
    from runs.run import build, build_algorithm, resolve
    from tasks import autoreset_step

    settings = dataclasses.replace(
        PPOConfig(),
        envs=args.envs,
        frames=args.frames,
        recurrence=args.recurrence,
        minibatch=args.minibatch,
        epochs=args.epochs,
    )
    config = resolve(
        TrainConfig(
            task=plugins.task_spec(args.task).config(),
            model=plugins.model_spec(args.model).config(),
            task_name=args.task,
            model_name=args.model,
            algorithm_name="ppo",
            algorithm=settings,
            run=RunConfig(devices=1),
        )
    )
    env, agent = build(config)
    ppo = build_algorithm(config, env, agent)
    mesh = ppo.mesh
    state = ppo.place(ppo.init(env, agent, jr.key(0)))
    # A few iterations first, so that the episodes and the weights are those of training.
    state, _ = train_chunk(ppo, env, state, 2)
    jax.block_until_ready(state)

    def piece(fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn(*trees)` compiled inside the algorithm's one-device `shard_map` (every input
        replicated, as `runs.rl.on_devices` runs an iteration on one device); returns the
        array leaves of its output."""

        @eqx.filter_jit
        def run(*trees):
            arrays, statics = zip(*(eqx.partition(t, eqx.is_array) for t in trees), strict=True)

            def local(*arrays):
                out = fn(*(eqx.combine(a, s) for a, s in zip(arrays, statics, strict=True)))
                return eqx.filter(out, eqx.is_array)

            return jax.shard_map(
                local,
                mesh=mesh,
                in_specs=tuple(PartitionSpec() for _ in arrays),
                out_specs=PartitionSpec(),
                check_vma=False,
            )(*arrays)

        return run

    model, opt_state, actors = state.model, state.opt_state, state.extra
    key = jr.key(1)
    act_key, learn_key, last_key = jr.split(key, 3)
    n, frames = settings.envs, settings.frames

    def env_only(env, actors, key):
        def body(carry, key):
            env_state, total = carry
            action_key, env_key = jr.split(key)
            action = jr.randint(action_key, (n,), 0, env.io.actions)
            env_state, obs, reward, done, success = jax.vmap(
                autoreset_step, in_axes=(None, 0, 0, 0)
            )(env, env_state, action, jr.split(env_key, n))
            # Read what the rollout keeps, so that nothing is optimized away.
            image = jtu.tree_map(lambda x: x.astype(jnp.float32).sum(), obs)
            total = total + sum(jtu.tree_leaves(image)) + reward.sum() + done.sum() + success.sum()
            return (env_state, total), None

        (env_state, total), _ = jax.lax.scan(body, (actors.env_state, 0.0), jr.split(key, frames))
        return env_state, total

    def collect(env, model, actors, key):
        return ppo.collect(env, model, actors, key)

    new_actors, rollout, _ = piece(collect)(env, model, actors, act_key)

    def agent_only(model, rollout, key):
        def body(memory, inputs):
            obs, mask, key = inputs
            policy_key, action_key = jr.split(key)
            logits, value, memory = rl.act(model, obs, rl.reset(model, memory, mask), policy_key)
            action = jr.categorical(action_key, logits)
            return memory, (action, value, rl.log_prob(logits, action))

        first = jtu.tree_map(lambda m: m[0], rollout.memory)
        return jax.lax.scan(body, first, (rollout.obs, rollout.mask, jr.split(key, frames)))

    def advantages(model, rollout, actors, key):
        memory = rl.reset(model, actors.memory, actors.mask)
        _, last_value, _ = rl.act(model, actors.obs, memory, key)
        advantage, returns = ppo.advantages(rollout, last_value, actors.mask)
        return ppo.sequences(rollout, advantage, returns)

    data = piece(advantages)(model, rollout, new_actors, last_key)

    count = data["mask"].shape[0]
    per_batch = settings.minibatch // settings.recurrence // mesh.size
    batches = count // per_batch

    def without_encoders(model):
        """The trainable leaves of `model` less its observation encoders (`image`,
        `instruction`, where the agent has them)."""
        keep = ppo.trainable(model)
        for name in ("image", "instruction"):
            if getattr(model, name, None) is not None:
                off = jtu.tree_map(lambda _: False, getattr(model, name))
                keep = eqx.tree_at(lambda m, name=name: getattr(m, name), keep, off)
        return keep

    def minibatches(model, data, key, fn, trainable=None):
        """`fn(trained, frozen, batch, key)` on every minibatch of every epoch, the minibatches
        drawn and gathered as `PPO.learn` does (`trained`: the leaves `trainable(model)`
        selects, by default the algorithm's trained leaves)."""
        trained, frozen = eqx.partition(model, (trainable or ppo.trainable)(model))

        def minibatch(carry, inputs):
            index, key = inputs
            batch = {
                k: jtu.tree_map(lambda x: jnp.swapaxes(x[index], 0, 1), v)
                for k, v in data.items()
                if k != "memory"
            }
            batch["memory"] = jtu.tree_map(lambda m: m[index], data["memory"])
            return carry + fn(trained, frozen, batch, key), None

        def epoch(carry, key):
            order_key, step_keys = jr.split(key)
            order = jr.permutation(order_key, count)[: batches * per_batch]
            inputs = (order.reshape(batches, per_batch), jr.split(step_keys, batches))
            return jax.lax.scan(minibatch, carry, inputs)

        total, _ = jax.lax.scan(epoch, jnp.zeros(()), jr.split(key, settings.epochs))
        return total

    def loss_only(model, data, key):
        def fn(trained, frozen, batch, key):
            loss, _ = ppo.loss(eqx.combine(trained, frozen), batch, key)
            return loss

        return minibatches(model, data, key, fn)

    def loss_and_grad(model, data, key, trainable=None):
        def fn(trained, frozen, batch, key):
            def loss(trained):
                return ppo.loss(eqx.combine(trained, frozen), batch, key)[0]

            value, grads = jax.value_and_grad(loss)(trained)
            grads = jax.lax.pmean(grads, "batch")
            return value + sum(jnp.sum(g) for g in jtu.tree_leaves(grads))

        return minibatches(model, data, key, fn, trainable)

    def grad_without_encoders(model, data, key):
        return loss_and_grad(model, data, key, without_encoders)

    def optimizer_only(model, opt_state, key):
        trained, _ = eqx.partition(model, ppo.trainable(model))
        grads = jtu.tree_map(lambda p: 1e-3 * jnp.ones_like(p), trained)

        def step(carry, _):
            trained, opt_state = carry
            updates, opt_state = ppo.optimizer.update(grads, opt_state, trained)
            return (eqx.apply_updates(trained, updates), opt_state), None

        (trained, opt_state), _ = jax.lax.scan(
            step, (trained, opt_state), length=settings.epochs * batches
        )
        return trained, opt_state

    def learn(model, opt_state, data, key):
        return ppo.learn(model, opt_state, data, key)

    r = args.repeats
    times = {
        "env": best_time(piece(env_only), env, actors, act_key, repeats=r),
        "collect": best_time(piece(collect), env, model, actors, act_key, repeats=r),
        "agent": best_time(piece(agent_only), model, rollout, act_key, repeats=r),
        "gae": best_time(piece(advantages), model, rollout, new_actors, last_key, repeats=r),
        "loss": best_time(piece(loss_only), model, data, learn_key, repeats=r),
        "grad": best_time(piece(loss_and_grad), model, data, learn_key, repeats=r),
        "grad_core": best_time(piece(grad_without_encoders), model, data, learn_key, repeats=r),
        "optimizer": best_time(piece(optimizer_only), model, opt_state, learn_key, repeats=r),
        "learn": best_time(piece(learn), model, opt_state, data, learn_key, repeats=r),
    }

    def whole(length: int) -> float:
        nonlocal state
        state, metrics = train_chunk(ppo, env, state, length)  # compiles
        jax.block_until_ready(metrics)
        best = float("inf")
        for _ in range(r):
            start = time.perf_counter()
            state, metrics = train_chunk(ppo, env, state, length)
            jax.block_until_ready(metrics)
            best = min(best, time.perf_counter() - start)
        return best

    times["iteration"] = whole(args.iterations) / args.iterations
    times["call1"] = whole(1)
    state, metrics = train_chunk(ppo, env, state, args.iterations)
    jax.block_until_ready(metrics)
    start = time.perf_counter()
    jax.device_get(metrics)
    times["host"] = time.perf_counter() - start
    return {
        "task": args.task,
        "model": args.model,
        "settings": {
            k: getattr(settings, k) for k in ("envs", "frames", "recurrence", "minibatch", "epochs")
        },
        "frames_per_iteration": settings.frames_per_step,
        "minibatches_per_iteration": settings.epochs * batches,
        "seconds": times,
    }


def table(result: dict[str, Any]) -> list[tuple[str, float]]:
    """The rows `(what, seconds per iteration)` of the breakdown, from `profile`'s times."""
    t = result["seconds"]
    return [
        ("environment steps (rollout, random actions)", t["env"]),
        ("agent forward + sampling in the rollout (collect - env)", t["collect"] - t["env"]),
        ("GAE, bootstrap value, sequences", t["gae"]),
        ("PPO epochs: forward (loss)", t["loss"]),
        ("PPO epochs: backward (grad - loss)", t["grad"] - t["loss"]),
        ("PPO epochs: optimizer updates", t["optimizer"]),
        (
            "PPO epochs: rest of learn (learn - grad - optimizer)",
            t["learn"] - t["grad"] - t["optimizer"],
        ),
        ("host: per call beyond its work (call1 - iteration)", t["call1"] - t["iteration"]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--task", default="doorkey-5x5")
    parser.add_argument("--model", default="lstm-agent")
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--frames", type=int, default=40)
    parser.add_argument("--recurrence", type=int, default=20)
    parser.add_argument("--minibatch", type=int, default=1280)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--iterations", type=int, default=10, help="iterations per timed call")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per piece (best)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    import jax

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(
        f"host: {os.cpu_count()} CPU cores, load {load}, JAX {jax.__version__}, {jax.devices()}",
        file=sys.stderr,
    )
    result = profile(args)
    t = result["seconds"]
    rows = table(result)
    total = t["iteration"]
    print(
        f"== one PPO iteration of {result['model']} on {result['task']}: "
        f"{result['frames_per_iteration']} frames, {result['minibatches_per_iteration']} "
        f"minibatch updates; {total * 1e3:.1f} ms ({result['frames_per_iteration'] / total:,.0f} "
        "frames/s); pieces timed separately, block_until_ready, best of "
        f"{args.repeats}"
    )
    print(f"{'piece':<58} {'ms':>8} {'share':>7}")
    for what, seconds in rows:
        print(f"{what:<58} {seconds * 1e3:8.2f} {seconds / total:7.1%}")
    pieces = sum(seconds for _, seconds in rows[:-1])
    print(
        f"{'sum of the pieces above (without host)':<58} {pieces * 1e3:8.2f} {pieces / total:7.1%}"
    )
    print(f"{'whole iteration (train_chunk, per iteration)':<58} {total * 1e3:8.2f} {1:7.1%}")
    print("for comparison:")
    for what, seconds in (
        ("collect (agent + environment)", t["collect"]),
        ("agent alone over the rollout's observations", t["agent"]),
        ("backward of the core and heads (grad_core - loss)", t["grad_core"] - t["loss"]),
        ("backward into the encoders (grad - grad_core)", t["grad"] - t["grad_core"]),
        ("learn whole", t["learn"]),
        ("metrics of one call to the host (device_get)", t["host"]),
        ("a call of one iteration", t["call1"]),
    ):
        print(f"  {what:<56} {seconds * 1e3:8.2f} {seconds / total:7.1%}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result | {"load": load, "table": rows}, f, indent=2)


if __name__ == "__main__":
    main()
