"""Compare inner-loop unroll settings on the small hyperteacher setting in one process.

The variants' compiled calls are interleaved, so that the host's speed drift (large on shared
machines) affects them alike; prints the best and median outer steps per second of each.

    XLA_FLAGS=--xla_force_host_platform_device_count=2 python scripts/compare_unroll.py --unroll 1 9
"""

import argparse
import dataclasses
import statistics
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr

from runs.engine import Trainer, make_mesh, outer_optimizer, train_chunk
from runs.presets import get_preset
from runs.run import build


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
        config = dataclasses.replace(base, inner=dataclasses.replace(base.inner, unroll=unroll))
        task, model = build(config)
        optimizer = outer_optimizer(config.outer, config.run.steps)
        trainer = Trainer(
            task=task,
            inner=config.inner,
            optimizer=optimizer,
            meta_batch=config.outer.meta_batch,
            mesh=make_mesh(None, config.outer.meta_batch),
        )
        opt_state = optimizer.init(eqx.filter(model, eqx.is_array))
        model, opt_state = trainer.replicate((model, opt_state))
        model, opt_state, metrics = train_chunk(
            trainer, model, opt_state, jr.key(0), jnp.asarray(0), n
        )
        jax.block_until_ready(metrics)  # compiled
        variants[unroll] = [trainer, model, opt_state, []]
    for call in range(1, args.calls + 1):
        for variant in variants.values():
            trainer, model, opt_state, times = variant
            start = time.perf_counter()
            model, opt_state, metrics = train_chunk(
                trainer, model, opt_state, jr.key(0), jnp.asarray(call * n), n
            )
            jax.block_until_ready(metrics)
            times.append(time.perf_counter() - start)
            variant[1], variant[2] = model, opt_state
    for unroll, (*_, times) in variants.items():
        best, median = n / min(times), n / statistics.median(times)
        print(f"unroll {unroll}: best {best:6.2f} steps/s, median {median:6.2f} steps/s")


if __name__ == "__main__":
    main()
