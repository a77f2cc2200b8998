"""End-to-end training speed of recurrent PPO: environment frames per second of whole training
iterations (acting + GAE + PPO epochs, one compiled call per iteration), per agent.

    python scripts/benchmark_ppo.py [--task doorkey-5x5] [--model lstm-agent rims-agent]
        [--iterations 4] [--calls 3] [--envs 64] [--json out.json]

    python scripts/benchmark_ppo.py --cpu-devices 2   # the environments split over 2 cores

The PPO settings are the defaults (BabyAI's: 64 environments x 40 frames, recurrence 20,
minibatch 1280, 4 epochs) unless flags change them. Figures are the best of `--calls` compiled
calls of `--iterations` iterations each, after one call that compiles.
"""

import argparse
import dataclasses
import json
import os
import sys
import time


def benchmark(task: str, model: str, settings, iterations: int, calls: int) -> dict:
    import jax
    import jax.random as jr

    import plugins
    from runs.algorithms.base import train_chunk
    from runs.config import TrainConfig
    from runs.run import build, build_algorithm, resolve

    config = resolve(
        TrainConfig(
            task=plugins.task_spec(task).config(),
            model=plugins.model_spec(model).config(),
            task_name=task,
            model_name=model,
            algorithm_name="ppo",
            algorithm=settings,
        )
    )
    env, agent = build(config)
    algorithm = build_algorithm(config, env, agent)
    state = algorithm.place(algorithm.init(env, agent, jr.key(0)))
    start = time.perf_counter()
    state, metrics = train_chunk(algorithm, env, state, iterations)
    jax.block_until_ready(metrics)
    first = time.perf_counter() - start
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        state, metrics = train_chunk(algorithm, env, state, iterations)
        jax.block_until_ready(metrics)
        times.append(time.perf_counter() - start)
    frames = iterations * settings.frames_per_step
    return {
        "task": task,
        "model": model,
        "devices": algorithm.mesh.size,
        "frames_per_iteration": settings.frames_per_step,
        "frames_per_s": frames / min(times),
        "iteration_s": min(times) / iterations,
        "first_call_s_incl_compile": first,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--task", default="doorkey-5x5")
    parser.add_argument("--model", nargs="+", default=["lstm-agent", "rims-agent"])
    parser.add_argument("--iterations", type=int, default=4)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--frames", type=int, default=40)
    parser.add_argument(
        "--cpu-devices",
        type=int,
        default=1,
        help="split the environments over this many host CPU devices (one per core)",
    )
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    if args.cpu_devices > 1:  # before JAX starts
        flag = f"--xla_force_host_platform_device_count={args.cpu_devices}"
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flag}".strip()
    import jax

    from runs.algorithms.config import PPOConfig

    settings = dataclasses.replace(PPOConfig(), envs=args.envs, frames=args.frames)
    print(
        f"host: {os.cpu_count()} CPU cores, JAX {jax.__version__}, {jax.devices()}", file=sys.stderr
    )
    results = [
        benchmark(args.task, model, settings, args.iterations, args.calls) for model in args.model
    ]
    for figures in results:
        print(f"== {figures['model']} on {figures['task']}")
        for k, v in figures.items():
            if k not in ("model", "task"):
                print(f"{k:>28}: {v:,.4g}" if isinstance(v, float) else f"{k:>28}: {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results}, f, indent=2)


if __name__ == "__main__":
    main()
