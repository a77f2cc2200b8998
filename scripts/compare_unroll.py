"""Compare inner-loop unroll settings on the small hyperteacher setting in one process.

The variants' compiled calls are interleaved, so that the host's speed drift (large on shared
machines) affects them alike; prints the best and median outer steps per second of each.

    XLA_FLAGS=--xla_force_host_platform_device_count=2 python scripts/compare_unroll.py --unroll 1 9
"""

import argparse
import dataclasses
import statistics
import time

import jax
import jax.random as jr

from runs.algorithms.base import train_chunk
from runs.presets import get_preset
from runs.run import build, build_algorithm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--unroll", type=int, nargs="+", default=[1, 9])
    parser.add_argument("--steps-per-call", type=int, default=20)
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args()

    base = get_preset("schug2024/hyperteacher-compositional-cpu")
    n = args.steps_per_call
    variants = {}
    for unroll in args.unroll:
        inner = dataclasses.replace(base.algorithm.inner, unroll=unroll)
        config = dataclasses.replace(
            base, algorithm=dataclasses.replace(base.algorithm, inner=inner)
        )
        task, model = build(config)
        algorithm = build_algorithm(config, task, model)
        state = algorithm.place(algorithm.init(task, model, jr.key(0)))
        state, metrics = train_chunk(algorithm, task, state, n)
        jax.block_until_ready(metrics)  # compiled
        variants[unroll] = [algorithm, task, state, []]
    for _ in range(args.calls):
        for variant in variants.values():
            algorithm, task, state, times = variant
            start = time.perf_counter()
            state, metrics = train_chunk(algorithm, task, state, n)
            jax.block_until_ready(metrics)
            times.append(time.perf_counter() - start)
            variant[2] = state
    for unroll, (*_, times) in variants.items():
        best, median = n / min(times), n / statistics.median(times)
        print(f"unroll {unroll}: best {best:6.2f} steps/s, median {median:6.2f} steps/s")


if __name__ == "__main__":
    main()
