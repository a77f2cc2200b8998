"""Speed of meta-training on the small hyperteacher setting: the engine and the baseline, both
measured in this run on this host.

The linear hypernetwork by default; `--preset` names another learner's preset.

The small setting of docs/authors-settings.md (Schug 2024): M=8, K=2, meta-batch 32, 64 + 64
shots, student hidden 64 with 3 hidden layers, 10 second-order inner steps. Prints, for the
engine (`train_chunk`, the meta-batch split over the devices) and for the baseline, outer steps
per second; then their ratio. For the engine also peak memory and the achieved GFLOP/s beside
this machine's own matmul peak, measured in the same run.

    python scripts/benchmark_hyperteacher.py [--steps-per-call 100] [--calls 5]
    python scripts/benchmark_hyperteacher.py --no-baseline     # the engine only, no ratio
    python scripts/benchmark_hyperteacher.py --preset schug2024/hyperteacher-compositional-maml-cpu

The baseline is the same model and task run the way the authors' code runs them: one device,
one jitted outer step per Python call, every inner step inside the `lax.scan`, the meta-batch
vmapped with no device split. The ratio of the engine's steps/s to the baseline's is measured on
one host in one run, so it does not depend on the host. The authors' own code was timed once
elsewhere (about 5.9 steps/s on a 2-core CPU; docs/authors-settings.md): that figure is printed
as a recorded reference, with where it comes from, and never divided into a speed-up, because
the host this runs on changes (its matmul peak has ranged from 126 to 515 GFLOP/s).
"""

import argparse
import dataclasses
import json
import resource
import time

import equinox as eqx
import jax
import jax.random as jr

from runs.algorithms.base import train_chunk
from runs.presets import get_preset
from runs.run import build, build_algorithm

PRESET = "schug2024/hyperteacher-compositional-cpu"
"""The setting the authors' code was timed on."""
RECORDED = {
    "value_steps_per_s": 5.9,
    "what": "the authors' code (JAX), this setting",
    "host": "a 2-core CPU host of an earlier session (not this one)",
    "source": "docs/authors-settings.md, 'How fast the authors' code runs'",
}
"""A figure measured elsewhere: printed as such, never divided into a ratio."""


def matmul_peak(n: int = 1024, repeats: int = 20) -> float:
    """GFLOP/s of a float32 n x n matmul on this machine (the best of `repeats`)."""
    a = jr.normal(jr.key(0), (n, n))
    f = jax.jit(lambda x: x @ x)
    f(a).block_until_ready()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        f(a).block_until_ready()
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e9


def step_flops(algorithm, task, state) -> float:
    """FLOPs of one outer step, from XLA's cost analysis of the step with its inner loop
    unrolled (XLA counts the body of a rolled loop once)."""
    unrolled = eqx.tree_at(lambda a: a.inner.adjoint.unroll, algorithm, algorithm.inner.steps)
    params, static = eqx.partition(state, eqx.is_array)

    def one_step(params):
        out = unrolled.step(task, eqx.combine(params, static))
        return eqx.filter(out, eqx.is_array)

    cost = jax.jit(one_step).lower(params).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    return float(cost["flops"])


def baseline(config, steps: int, calls: int) -> float:
    """Outer steps/s of the reference's structure (see the module docstring)."""
    import optax

    from runs.optim import inner_optimizer

    task, model = build(config)
    inner = config.algorithm.inner
    optimizer = optax.chain(
        optax.clip_by_global_norm(config.algorithm.outer.clip),
        optax.adamw(config.algorithm.outer.lr, weight_decay=config.algorithm.outer.weight_decay),
    )
    inner_opt = inner_optimizer(inner)
    opt_state = optimizer.init(eqx.filter(model, eqx.is_array))

    def task_loss(model, key):
        episode = task.sample(key)
        fast, meta = model.partition()
        if inner.mode != "second-order":
            meta = jax.lax.stop_gradient(meta)

        def inner_step(carry, _):
            fast, state = carry
            grads = jax.grad(
                lambda f: task.loss(eqx.combine(f, meta)(episode.support.x), episode.support.y)
            )(fast)
            updates, state = inner_opt.update(grads, state, fast)
            return (optax.apply_updates(fast, updates), state), None

        (fast, _), _ = jax.lax.scan(inner_step, (fast, inner_opt.init(fast)), None, inner.steps)
        return task.loss(eqx.combine(fast, model.partition()[1])(episode.query.x), episode.query.y)

    @eqx.filter_jit(donate="all")
    def step(model, opt_state, key):
        def mean_loss(model):
            keys = jr.split(key, config.algorithm.outer.meta_batch)
            return eqx.filter_vmap(task_loss, in_axes=(None, 0))(model, keys).mean()

        loss, grads = eqx.filter_value_and_grad(mean_loss)(model)
        updates, opt_state = optimizer.update(grads, opt_state, eqx.filter(model, eqx.is_array))
        return eqx.apply_updates(model, updates), opt_state, loss

    key = jr.key(0)
    for s in range(steps):  # warm-up call: compilation
        model, opt_state, loss = step(model, opt_state, jr.fold_in(key, s))
    jax.block_until_ready(loss)
    t = time.perf_counter()
    for s in range(steps, steps * (calls + 1)):
        model, opt_state, loss = step(model, opt_state, jr.fold_in(key, s))
    jax.block_until_ready(loss)
    return steps * calls / (time.perf_counter() - t)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps-per-call", type=int, default=100)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--mode", default="second-order")
    parser.add_argument("--unroll", type=int, default=1, help="inner steps per loop iteration")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    parser.add_argument(
        "--preset",
        default=PRESET,
        help="the hyperteacher preset to time (e.g. ...-compositional-maml-cpu)",
    )
    parser.add_argument(
        "--no-baseline",
        dest="baseline",
        action="store_false",
        help="time the engine only (no ratio)",
    )
    args = parser.parse_args()

    config = get_preset(args.preset)
    inner = dataclasses.replace(config.algorithm.inner, mode=args.mode, unroll=args.unroll)
    config = dataclasses.replace(
        config, algorithm=dataclasses.replace(config.algorithm, inner=inner)
    )
    task, model = build(config)
    algorithm = build_algorithm(config, task, model)
    state = algorithm.place(algorithm.init(task, model, jr.key(0)))
    n = args.steps_per_call
    flops_per_step = step_flops(algorithm, task, state)

    t0 = time.perf_counter()
    state, metrics = train_chunk(algorithm, task, state, n)
    jax.block_until_ready(metrics)
    first = time.perf_counter() - t0
    times = []
    for _ in range(args.calls):
        t = time.perf_counter()
        state, metrics = train_chunk(algorithm, task, state, n)
        jax.block_until_ready(metrics)
        times.append(time.perf_counter() - t)
    steps_per_s = n / (sum(times) / len(times))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    peak = matmul_peak()
    # Each device runs the per-device program on its share of the meta-batch.
    achieved = flops_per_step * len(jax.devices()) * steps_per_s / 1e9
    figures = {
        "preset": args.preset,
        "mode": args.mode,
        "devices": len(jax.devices()),
        "steps_per_s": steps_per_s,
        "first_call_s_incl_warmup": first,
        "peak_rss_mb": peak_mb,
        "gflop_per_step_per_device": flops_per_step / 1e9,
        "achieved_gflops": achieved,
        "matmul_peak_gflops": peak,
        "fraction_of_peak": achieved / peak,
        "final_train_loss": float(metrics["loss"][-1]),
    }
    if args.baseline:  # the same model and task, the authors' structure, in this run
        base = baseline(config, args.steps_per_call, args.calls)
        figures["baseline"] = (
            "1 device, 1 outer step per call, all inner steps scanned (measured in this run)"
        )
        figures["baseline_steps_per_s"] = base
        figures["engine_over_baseline"] = steps_per_s / base
    if args.preset == PRESET:
        figures["recorded_reference"] = RECORDED
    for k, v in figures.items():
        if isinstance(v, dict):
            print(
                f"{k:>26}: {v['value_steps_per_s']} steps/s, {v['what']}; {v['host']}; "
                f"from {v['source']} (not divided into a ratio)"
            )
            continue
        print(f"{k:>26}: {v:.4g}" if isinstance(v, float) else f"{k:>26}: {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
