"""Speed of meta-training the meta seq2seq learner (Lake 2019) on each experiment, and the
memory of scoring the add-jump test episode (7,706 queries, decoded in batches).

The model is the paper's (m = 200, 2-layer biLSTM encoders and LSTM decoder, dropout 0.5,
support loss), trained one episode per step as in the paper (`--episodes-per-step` batches
several). The reference PyTorch code trains at about 12.6 (mutual exclusivity), 2.7
(add-jump), 2.6 (around-right) and 1.8 (length) episodes/s on a 2-core machine of an earlier
session, one thread (docs/authors-settings.md, Lake 2019). Those are printed as recorded
references, with where they were measured, and never divided into a speed-up: the host this
runs on changes between sessions, and the PyTorch code does not run here. Each experiment runs
in a fresh process, so its peak memory is its own.

    python scripts/benchmark_scan.py [--experiments addjump-permutation ...] [--calls 3]
"""

import argparse
import dataclasses
import json
import resource
import subprocess
import sys
import time

REFERENCE = {
    "mutual-exclusivity": 12.6,
    "addjump-permutation": 2.7,
    "addjump-augmentation": 2.7,
    "around-right": 2.6,
    "length": 1.8,
}


def measure(experiment: str, steps_per_call: int, calls: int, per_step: int, test: bool) -> dict:
    import jax
    import jax.random as jr

    from runs.algorithms.base import train_chunk
    from runs.algorithms.in_context import exact_match
    from runs.presets import get_preset
    from runs.run import build, build_algorithm
    from zoo import AbstractInContextLearner

    config = get_preset(f"lake2019/{experiment}")
    outer = dataclasses.replace(config.algorithm.outer, meta_batch=per_step)
    config = dataclasses.replace(
        config, algorithm=dataclasses.replace(config.algorithm, outer=outer)
    )
    task, model = build(config)
    algorithm = build_algorithm(config, task, model)
    state = algorithm.place(algorithm.init(task, model, jr.key(0)))
    n = steps_per_call
    t0 = time.perf_counter()
    state, metrics = train_chunk(algorithm, task, state, n)
    jax.block_until_ready(metrics)
    first = time.perf_counter() - t0
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        state, metrics = train_chunk(algorithm, task, state, n)
        jax.block_until_ready(metrics)
        times.append(time.perf_counter() - t)
    model = state.model
    train_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    episodes_per_s = n * per_step / (sum(times) / len(times))
    figures = {
        "experiment": experiment,
        "episodes_per_step": per_step,
        "devices": len(jax.devices()),
        "episodes_per_s": episodes_per_s,
        "first_call_s_incl_compile": first,
        "peak_rss_mb_training": train_rss,
        "recorded_reference": (
            f"{REFERENCE[experiment]} episodes/s, the author's PyTorch code, one thread of a "
            "2-core host of an earlier session (docs/authors-settings.md); not divided into a ratio"
        ),
        "train_loss_last": float(metrics["loss"][-1]),
    }
    episodes = task.test_episodes()
    if test and episodes:
        assert isinstance(model, AbstractInContextLearner)
        e = episodes[0]
        t = time.perf_counter()
        accuracy = exact_match(
            model, e.support.x, e.support.y, e.query.x, e.query.y, config.eval.query_batch
        )
        figures["test_episode_queries"] = int(e.query.x.shape[0])
        figures["test_episode_s_incl_compile"] = time.perf_counter() - t
        figures["test_episode_accuracy_untrained"] = float(accuracy)
        figures["peak_rss_mb_with_test_episode"] = (
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", nargs="+", default=list(REFERENCE))
    parser.add_argument("--steps-per-call", type=int, default=50)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--episodes-per-step", type=int, default=1)
    parser.add_argument("--no-test", action="store_true", help="skip the test-episode pass")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure in this process
    args = parser.parse_args()
    if args.one:
        figures = measure(
            args.one, args.steps_per_call, args.calls, args.episodes_per_step, not args.no_test
        )
        print(json.dumps(figures))
        return
    results = []
    for experiment in args.experiments:
        if experiment not in REFERENCE:
            parser.error(f"unknown experiment {experiment!r}; choose from {', '.join(REFERENCE)}")
        command = [sys.executable, __file__, "--one", experiment]
        command += ["--steps-per-call", str(args.steps_per_call), "--calls", str(args.calls)]
        command += ["--episodes-per-step", str(args.episodes_per_step)]
        command += ["--no-test"] if args.no_test else []
        out = subprocess.run(command, capture_output=True, text=True, check=False)
        if out.returncode:
            print(out.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"benchmark of {experiment} failed")
        figures = json.loads(str(out.stdout).strip().splitlines()[-1])
        results.append(figures)
        print(f"--- {experiment}")
        for k, v in figures.items():
            print(f"{k:>32}: {v:.4g}" if isinstance(v, float) else f"{k:>32}: {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
