"""Speed of meta-training the linear hypernetwork on the two grid worlds of Schug et al. 2024.

The authors' settings (docs/specs/gridworlds.md, A3), as the paper-size presets
`schug2024/{preferences,goals}-compositional-linear-hypernet` hold them (`--preset` names
another preset instead):

- compositional-preferences: base MLP 64 x 3, T = 32, 10 second-order inner steps at lr 0.1,
  outer AdamW lr 3e-4, clip 1.0, meta-batch 128, 16 + 16 demonstrated trajectories of 8 steps.
- compositional-goals: base MLP 32 x 2, T = 8, 10 inner steps at lr 0.3, outer lr 3e-3,
  clip 2.0, meta-batch 128, 1 + 1 demonstrations of 120 steps.

Prints, per world: outer steps per second, the achieved GFLOP/s (XLA's cost analysis of one
step) as a share of this machine's float32 matmul peak measured in the same run, and the time
of sampling one meta-batch of tasks alone (`jax.jit(jax.vmap(task.sample))` over the
meta-batch's keys: value iteration and rollouts for preferences, rollouts for goals) as a share
of one outer step (which samples its own meta-batch inside).

    python scripts/benchmark_gridworlds.py [--steps-per-call 10] [--calls 3] [--meta-batch 128]
    python scripts/benchmark_gridworlds.py --world goals --meta-batch 8 --json out.json
    python scripts/benchmark_gridworlds.py --preset schug2024/<name> [--preset ...]
"""

import argparse
import dataclasses
import json
import resource
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.random as jr

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchmark_hyperteacher import matmul_peak, step_flops

from plugins.schug2024.presets import grid_preset
from runs.algorithms.base import train_chunk
from runs.config import TrainConfig
from runs.presets import get_preset
from runs.run import build, build_algorithm, resolve


def authors_setting(world: str) -> TrainConfig:
    """The linear hypernetwork on `world` ("preferences" or "goals") at the authors' settings:
    the paper-size preset `schug2024/<world>-compositional-linear-hypernet`
    (docs/specs/gridworlds.md, A3)."""
    if world not in ("preferences", "goals"):
        raise ValueError(f"Unknown world {world!r}; use 'preferences' or 'goals'.")
    return get_preset(grid_preset(world, "compositional", "linear-hypernet"))


def sampling_time(task, meta_batch: int, repeats: int = 5) -> float:
    """Median seconds of `jax.jit(jax.vmap(task.sample))` on `meta_batch` keys (compiled
    first)."""
    sample = jax.jit(jax.vmap(task.sample))
    keys = jr.split(jr.key(1), meta_batch)
    jax.block_until_ready(sample(keys))
    times = []
    for r in range(repeats):
        keys = jr.split(jr.key(2 + r), meta_batch)
        t = time.perf_counter()
        jax.block_until_ready(sample(keys))
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def benchmark(name: str, config: TrainConfig, steps_per_call: int, calls: int) -> dict:
    """The figures of one setting (see the module docstring)."""
    config = resolve(config)
    task, model = build(config)
    algorithm = build_algorithm(config, task, model)
    state = algorithm.place(algorithm.init(task, model, jr.key(0)))
    flops_per_step = step_flops(algorithm, task, state)

    t0 = time.perf_counter()
    state, metrics = train_chunk(algorithm, task, state, steps_per_call)
    jax.block_until_ready(metrics)
    first = time.perf_counter() - t0
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        state, metrics = train_chunk(algorithm, task, state, steps_per_call)
        jax.block_until_ready(metrics)
        times.append(time.perf_counter() - t)
    steps_per_s = steps_per_call / (sum(times) / len(times))
    sample_s = sampling_time(task, config.algorithm.outer.meta_batch)
    # Each device runs the per-device program on its share of the meta-batch.
    achieved = flops_per_step * len(jax.devices()) * steps_per_s / 1e9
    return {
        "setting": name,
        "task": config.task_name,
        "model": config.model_name,
        "meta_batch": config.algorithm.outer.meta_batch,
        "devices": len(jax.devices()),
        "steps_per_s": steps_per_s,
        "step_s": 1 / steps_per_s,
        "first_call_s_incl_compile": first,
        "gflop_per_step_per_device": flops_per_step / 1e9,
        "achieved_gflops": achieved,
        "sample_meta_batch_s": sample_s,
        "sample_share_of_step": sample_s * steps_per_s,
        "final_train_loss": float(metrics["loss"][-1]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps-per-call", type=int, default=10)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument(
        "--meta-batch", type=int, help="meta-batch size (default: the setting's, 128)"
    )
    parser.add_argument(
        "--world",
        choices=("preferences", "goals", "both"),
        default="both",
        help="which grid world(s) to time at the authors' settings",
    )
    parser.add_argument(
        "--preset",
        action="append",
        default=[],
        help="time this preset instead of the built-in settings (repeatable)",
    )
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()

    if args.preset:
        settings = [(name, get_preset(name)) for name in args.preset]
    else:
        worlds = ("preferences", "goals") if args.world == "both" else (args.world,)
        settings = [(f"authors-{w}-linear", authors_setting(w)) for w in worlds]
    if args.meta_batch is not None:
        settings = [
            (
                name,
                dataclasses.replace(
                    c,
                    algorithm=dataclasses.replace(
                        c.algorithm,
                        outer=dataclasses.replace(c.algorithm.outer, meta_batch=args.meta_batch),
                    ),
                ),
            )
            for name, c in settings
        ]

    results = [benchmark(name, c, args.steps_per_call, args.calls) for name, c in settings]
    peak = matmul_peak()
    for figures in results:
        figures["matmul_peak_gflops"] = peak
        figures["fraction_of_peak"] = figures["achieved_gflops"] / peak
    report = {
        "results": results,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    for figures in results:
        print(f"== {figures['setting']}")
        for k, v in figures.items():
            if k != "setting":
                print(f"{k:>28}: {v:.4g}" if isinstance(v, float) else f"{k:>28}: {v}")
    print(f"{'peak_rss_mb':>28}: {report['peak_rss_mb']:.4g}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
