"""Speed of the pure-JAX MiniGrid/BabyAI environments (`tasks.minigrid`), beside the Farama
`minigrid` package stepped in a Python loop.

For each level: `--envs` environments under `jax.vmap`, `autoreset_step` (a fresh episode in
place of each finished one, so `reset` runs at every step), uniformly random actions, a
`lax.scan` of `--steps` steps in one compiled call (every observation is read: the sum of
its image is an output); the best of `--repeats` calls after
compiling. Then the `minigrid` package (if installed) stepping DoorKey-8x8 with random actions
in a Python loop (`reset` when an episode ends) for `--minigrid-seconds`, and the ratio. Then,
if it is installed, xminigrid (a published JAX grid-world library) on the same levels it has,
measured the same way in the same process: its `GymAutoResetWrapper`, random actions over its
6 actions, the sum of its observation read. It is not a dependency of the zoo; install it
beside it to compare (`pip install -e ".[bench]"`, which installs `xminigrid` and flax).

    python scripts/benchmark_envs.py [--envs 1024] [--steps 128] [--repeats 3]
    python scripts/benchmark_envs.py --levels doorkey-8x8 --json out.json

Prints steps per second (environment steps, summed over the batch). The batch is split over
one XLA CPU device per core (`--devices`, default all): XLA runs the compiled scan of small
fused steps on one thread per device. Run it on an idle machine (`uptime`) for figures worth
quoting.
"""

import argparse
import json
import os
import time

# One XLA CPU device per core, before JAX starts: XLA runs a scan of small fused steps on one
# thread, so the batch of environments is split over the cores (`--devices`).
os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={os.cpu_count() or 1}")

import jax
import jax.numpy as jnp
import jax.random as jr

from tasks import autoreset_step
from tasks.babyai import GoTo, PickupDist, PickupLoc
from tasks.minigrid_levels import DoorKey, FourRooms

LEVELS = {
    "doorkey-5x5": lambda: DoorKey(5),
    "doorkey-8x8": lambda: DoorKey(8),
    "doorkey-16x16": lambda: DoorKey(16),
    "fourrooms": FourRooms,
    "babyai-gotolocal": lambda: GoTo(num_objs=8),
    "babyai-gotoredballgrey": lambda: GoTo(num_objs=8, red_ball=True, grey=True),
    "babyai-pickuploc": lambda: PickupLoc(),
    "babyai-pickupdist": lambda: PickupDist(),
}


def jax_steps_per_second(
    env, envs: int, steps: int, repeats: int, devices: int = 1
) -> tuple[float, float]:
    """`(best steps/s, compile seconds)` of `steps` vmapped autoreset steps of `envs` envs,
    split evenly over `devices` CPU devices (`jax.shard_map`)."""
    local = envs // devices

    def rollout(state, key):
        def body(state, key):
            k_act, k_step = jr.split(key)
            actions = jr.randint(k_act, (local,), 0, env.io.actions)
            step = jax.vmap(lambda s, a, k: autoreset_step(env, s, a, k))
            state, obs, reward, done, _ = step(state, actions, jr.split(k_step, local))
            return state, (reward.sum(), done.sum(), obs["image"].astype(jnp.int32).sum())

        state, out = jax.lax.scan(body, state, jr.split(key[0], steps))
        return state, jax.tree.map(lambda x: x[None], out)

    mesh = jax.make_mesh((devices,), ("envs",), devices=jax.devices()[:devices])
    spec = jax.sharding.PartitionSpec("envs")
    rollout = jax.jit(
        jax.shard_map(rollout, mesh=mesh, in_specs=(spec, spec), out_specs=(spec, spec)),
        donate_argnums=0,
    )
    state, _ = jax.jit(jax.vmap(env.reset))(jr.split(jr.key(0), envs))
    sharding = jax.sharding.NamedSharding(mesh, spec)
    state = jax.device_put(state, sharding)
    return _timed(rollout, state, sharding, devices, repeats, envs * steps)


def _timed(rollout, state, sharding, devices: int, repeats: int, steps: int) -> tuple[float, float]:
    """`(best steps/s, compile seconds)` of `rollout(state, keys)` (one key per device), run
    once to compile and then `repeats` times; `steps` environment steps per call."""
    start = time.perf_counter()
    state, out = rollout(state, jax.device_put(jr.split(jr.key(1), devices), sharding))
    jax.block_until_ready(out)
    compile_s = time.perf_counter() - start
    best = float("inf")
    for i in range(repeats):
        start = time.perf_counter()
        keys = jax.device_put(jr.split(jr.key(2 + i), devices), sharding)
        state, out = rollout(state, keys)
        jax.block_until_ready(out)
        best = min(best, time.perf_counter() - start)
    return steps / best, compile_s


XMINIGRID = {
    "doorkey-5x5": "MiniGrid-DoorKey-5x5",
    "doorkey-8x8": "MiniGrid-DoorKey-8x8",
    "doorkey-16x16": "MiniGrid-DoorKey-16x16",
    "fourrooms": "MiniGrid-FourRooms",
}


def xminigrid_steps_per_second(
    level: str, envs: int, steps: int, repeats: int, devices: int = 1
) -> tuple[float, float] | None:
    """`jax_steps_per_second` for xminigrid's version of `level` (None if xminigrid is not
    installed or has no such level)."""
    try:
        import xminigrid  # pyright: ignore[reportMissingImports]
        from xminigrid.wrappers import GymAutoResetWrapper  # pyright: ignore[reportMissingImports]
    except ImportError:
        return None
    if level not in XMINIGRID:
        return None
    env, params = xminigrid.make(XMINIGRID[level])
    env = GymAutoResetWrapper(env)
    local = envs // devices
    actions = env.num_actions(params)

    def rollout(timestep, key):
        def body(timestep, key):
            acts = jr.randint(key, (local,), 0, actions)
            timestep = jax.vmap(env.step, in_axes=(None, 0, 0))(params, timestep, acts)
            observed = timestep.observation.astype(jnp.int32).sum()
            return timestep, (timestep.reward.sum(), timestep.last().sum(), observed)

        timestep, out = jax.lax.scan(body, timestep, jr.split(key[0], steps))
        return timestep, jax.tree.map(lambda x: x[None], out)

    mesh = jax.make_mesh((devices,), ("envs",), devices=jax.devices()[:devices])
    spec = jax.sharding.PartitionSpec("envs")
    # xminigrid's autoreset `lax.cond` mixes replicated constants with per-shard state, which
    # shard_map's varying-axis check refuses; the computation is per-shard either way.
    rollout = jax.jit(
        jax.shard_map(
            rollout, mesh=mesh, in_specs=(spec, spec), out_specs=(spec, spec), check_vma=False
        ),
        donate_argnums=0,
    )
    reset = jax.jit(jax.vmap(env.reset, in_axes=(None, 0)))
    sharding = jax.sharding.NamedSharding(mesh, spec)
    timestep = jax.device_put(reset(params, jr.split(jr.key(0), envs)), sharding)
    return _timed(rollout, timestep, sharding, devices, repeats, envs * steps)


def minigrid_steps_per_second(level: str, seconds: float) -> float | None:
    """Steps/s of the `minigrid` package in a Python loop, random actions; None if missing."""
    try:
        import gymnasium as gym
        import minigrid  # noqa: F401
        import numpy as np
    except ImportError:
        return None
    env = gym.make(level)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for action in rng.integers(0, 7, 1000):
            _, _, terminated, truncated, _ = env.step(int(action))
            if terminated or truncated:
                env.reset()
        steps += 1000
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--levels", nargs="+", default=["doorkey-8x8", "doorkey-16x16", "babyai-gotolocal"]
    )
    parser.add_argument("--envs", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--devices",
        type=int,
        default=None,
        help="CPU devices to split the envs over (default: all)",
    )
    parser.add_argument("--minigrid-seconds", type=float, default=5.0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()

    devices = args.devices or len(jax.devices())
    print(
        f"jax {jax.__version__}, {jax.devices()[0].platform}, {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.2f}; {args.envs} envs x {args.steps} steps over "
        f"{devices} device(s), best of {args.repeats}"
    )
    results = {}
    for name in args.levels:
        rate, compile_s = jax_steps_per_second(
            LEVELS[name](), args.envs, args.steps, args.repeats, devices
        )
        results[name] = rate
        print(f"{name:<24} {rate:>12,.0f} steps/s  (compile {compile_s:.1f} s)")
        theirs = xminigrid_steps_per_second(name, args.envs, args.steps, args.repeats, devices)
        if theirs is not None:
            results[f"xminigrid-{name}"] = theirs[0]
            print(
                f"{'  xminigrid ' + name:<24} {theirs[0]:>12,.0f} steps/s  (compile "
                f"{theirs[1]:.1f} s): ours / xminigrid = {rate / theirs[0]:.2f}x"
            )
    loop = minigrid_steps_per_second("MiniGrid-DoorKey-8x8-v0", args.minigrid_seconds)
    if loop is None:
        print("minigrid not installed: no Python-loop comparison")
    else:
        results["minigrid-loop-doorkey-8x8"] = loop
        print(f"{'minigrid loop doorkey-8x8':<24} {loop:>12,.0f} steps/s")
        if "doorkey-8x8" in results:
            ratio = results["doorkey-8x8"] / loop
            results["ratio-doorkey-8x8"] = ratio
            print(f"ratio (vmapped / minigrid loop), DoorKey-8x8: {ratio:,.0f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
