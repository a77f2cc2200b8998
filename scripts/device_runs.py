"""Train chosen runs of one sweep at once on a lent GPU, under a deadline.

    python3 scripts/device_runs.py lake2019/tables2-3 --out DIR --budget 500 \
        --runs permutation:1 augmentation-no-attention:1 ...

Each LABEL:SEED trains in a process of its own (`zoo sweep SWEEP --only LABEL --seeds SEED`),
all of them at once, sharing the GPU. Whether that pays depends on the model: three Fig. 3B
processes on an H100 trained twice the steps of one in all, but ten of Lake's meta seq2seq
processes trained a ninth of what one does alone (docs/papers/lake2019.md, speed), so measure
with two or three before sending ten. A lent machine gives
minutes, not hours, so the driver keeps only the runs that can finish: after a warm-up it
reads each run's step from its metrics.jsonl every `--every` seconds and, taking the total
throughput (steps/s over all runs) as fixed, stops the runs furthest from their end until the
others are predicted to finish before the deadline. Runs still training at the deadline are
stopped too; their evaluations so far are kept, and `zoo report` marks them unfinished.

Each run lands in DIR/parts/LABEL-sSEED/LABEL/seed_SEED (a sweep directory of its own, so that
the processes never write one report at once); `DIR/driver.log` says what was stopped and why.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from runs.run import read_config, read_metrics


def _step(run_dir: Path) -> int:
    """The last step a run has logged (0 before its first metrics)."""
    return max((int(row.get("step", 0)) for row in read_metrics(run_dir)), default=0)


def _steps(run_dir: Path, default: int) -> int:
    """The steps a run trains for, once it has saved its config (`default` before)."""
    return read_config(run_dir).run.steps if (run_dir / "config.json").exists() else default


def rate(first: tuple[float, int] | None, now: float, step: int) -> float | None:
    """A run's steps per second since `first`, the (time, step) at which it was first seen
    training (None before a second reading). Measured over the whole run rather than the last
    window: a run spends a minute or more in each evaluation (compiled on the first one) while
    the others train, so the steps of one window say little about the steps left."""
    if first is None or now <= first[0] or step <= first[1]:
        return None
    return (step - first[1]) / (now - first[0])


def runs_to_keep(
    alive: list[str],
    remaining: dict[str, int],
    rates: dict[str, float],
    given: list[str],
    time_left: float,
    margin: float,
    tail: float,
) -> list[str]:
    """The runs to go on with: those nearest their end (runs without a measured rate last,
    ties in the order given), as many as can still end within `time_left` seconds when they
    share the measured total throughput evenly (only `margin` of it trusted once some are
    stopped), each needing `tail` seconds after its last step. At least one run is kept."""
    total = sum(rates.values())
    order = sorted(alive, key=lambda s: (s not in rates, remaining[s], given.index(s)))
    for k in range(len(order), 0, -1):
        share = total * (margin if k < len(order) else 1.0) / k
        if share > 0 and remaining[order[k - 1]] / share + tail <= time_left:
            return order[:k]
    return order[:1]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("sweep")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runs", nargs="+", required=True, help="LABEL:SEED, most wanted first")
    parser.add_argument("--budget", type=float, required=True, help="seconds from the start")
    parser.add_argument("--warmup", type=float, default=120.0, help="seconds before a decision")
    parser.add_argument("--every", type=float, default=30.0, help="seconds between decisions")
    parser.add_argument(
        "--tail", type=float, default=60.0, help="seconds a run needs after its last step"
    )
    parser.add_argument(
        "--margin", type=float, default=0.85, help="share of the measured throughput trusted"
    )
    parser.add_argument("--cpus-per-run", type=int, default=2)
    parser.add_argument("--steps", type=int, help="outer steps of every run (default: its own)")
    parser.add_argument("--keep", type=int, help="checkpoints each run keeps (default: its own)")
    args = parser.parse_args()

    start = time.monotonic()
    deadline = start + args.budget
    args.out.mkdir(parents=True, exist_ok=True)
    log = (args.out / "driver.log").open("a")

    def say(message: str) -> None:
        line = f"[{time.monotonic() - start:6.0f} s] {message}"
        print(line, flush=True)
        log.write(line + "\n")
        log.flush()

    cpus = os.cpu_count() or 1
    procs: dict[str, subprocess.Popen[bytes]] = {}
    dirs: dict[str, Path] = {}
    for i, spec in enumerate(args.runs):
        label, seed = spec.rsplit(":", 1)
        part = args.out / "parts" / f"{label}-s{seed}"
        part.mkdir(parents=True, exist_ok=True)
        first = (i * args.cpus_per_run) % cpus
        cores = ",".join(str((first + j) % cpus) for j in range(args.cpus_per_run))
        command = [
            "taskset",
            "-c",
            cores,
            sys.executable,
            "-m",
            "runs.cli",
            "sweep",
            args.sweep,
            "--out",
            str(part),
            "--seeds",
            seed,
            "--only",
            label,
            "--no-progress",
        ]
        command += ["--steps", str(args.steps)] if args.steps else []
        command += ["--keep", str(args.keep)] if args.keep else []
        with (part / "sweep.log").open("w") as out:
            procs[spec] = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        dirs[spec] = part / label / f"seed_{seed}"
    say(f"started {len(procs)} runs of {args.sweep}: {' '.join(args.runs)}")

    def stop(spec: str, why: str) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(procs[spec].pid, signal.SIGTERM)
        say(f"stopped {spec} ({why})")

    steps: dict[str, int] = {}
    started: dict[str, tuple[float, int]] = {}
    next_check = start + args.warmup
    while True:
        alive = [s for s, p in procs.items() if p.poll() is None]
        now = time.monotonic()
        if not alive:
            break
        if now >= deadline:
            for spec in alive:
                stop(spec, "deadline")
            break
        if now >= next_check:
            next_check = now + args.every
            rates, remaining = {}, {}
            for spec in alive:
                step = _step(dirs[spec])
                if step > 0 and spec not in started:
                    started[spec] = (now, step)
                measured = rate(started.get(spec), now, step)
                if measured is not None:
                    rates[spec] = measured
                steps[spec] = step
                remaining[spec] = _steps(dirs[spec], 10**9) - step
            # Decide once every run has a rate (or, should one never train, after half the
            # budget); a run without one (still compiling) counts as furthest from its end.
            total = sum(rates.values())
            if total > 0 and (len(rates) == len(alive) or now - start > args.budget / 2):
                say(
                    "steps/s "
                    + ", ".join(f"{s} {rates.get(s, 0.0):.1f} ({steps[s]})" for s in alive)
                    + f"; total {total:.1f}"
                )
                keep = runs_to_keep(
                    alive, remaining, rates, args.runs, deadline - now, args.margin, args.tail
                )
                for spec in (s for s in alive if s not in keep):
                    stop(
                        spec,
                        f"{remaining[spec]} steps left could not end in "
                        f"{deadline - now:.0f} s at {total:.1f} steps/s over {len(keep)} runs",
                    )
        time.sleep(2)

    for spec, p in procs.items():
        p.wait()
        say(f"{spec}: exit {p.returncode}, step {_step(dirs[spec])}")


if __name__ == "__main__":
    main()
