"""Sweeps: grids of runs (e.g. models x supports x seeds) and the table and figure they make.

A `Sweep` is data: its runs, each a `TrainConfig` with a label and facets (what varies, e.g.
`{"model": "anil", "support": "compositional"}`), the metrics it is about and, where the paper
gives them, the paper's numbers. `run_sweep` trains every run of a sweep for every seed into
its own run directory (`DIR/<label>/seed_<k>`): finished runs are skipped and interrupted ones
resumed, so a sweep is continued by running it again. `report` reads the run directories back
into `results.csv` (one row per run), `summary.csv` / `summary.json` (mean, standard deviation
and count over seeds) and one PNG figure.
"""

import csv
import dataclasses
import gc
import json
import math
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np
from jaxtyping import Float

from .config import TrainConfig, to_dict
from .lock import DirectoryLock, LockedError, atomic_write_bytes, atomic_write_text
from .scoreboard import mean_std

if TYPE_CHECKING:
    from .cluster import ClusterConfig

SWEEP_FILE = "sweep.json"


@dataclasses.dataclass(frozen=True)
class SweepRun:
    """One configuration of a sweep (trained once per seed)."""

    label: str
    """Directory name and row label, e.g. `anil-compositional`."""
    config: TrainConfig
    """The run's settings; `run.seed` is replaced by each seed of the sweep."""
    facets: dict[str, str]
    """What distinguishes this run, e.g. `{"model": "anil", "support": "compositional"}`."""


@dataclasses.dataclass(frozen=True)
class Select:
    """Report one run of each group of runs that differ only in `facet` (a setting tuned per
    configuration, e.g. the learning rate, as papers pick the best of a few per cell): the one
    whose mean `metric` is best over the seeds finished in all of the group's runs (a diverged
    run, its `metric` not finite, counts as worst). The same run is chosen for every seed.
    Choose on an in-distribution metric (e.g. `test.loss`), so that the reported numbers (e.g.
    OOD accuracy) are not the ones that chose."""

    facet: str
    """The facet the runs of a group differ in, e.g. `"lr"`."""
    metric: str
    """`pool.metric` of the last evaluation that chooses, e.g. `test.loss`."""
    maximize: bool = False
    """Whether higher `metric` is better (`False`: lower, as for a loss)."""


@dataclasses.dataclass(frozen=True)
class Sweep:
    """A grid of runs and what to report of them."""

    description: str
    runs: tuple[SweepRun, ...]
    metrics: tuple[str, ...]
    """Reported metrics as `pool.metric` of the last evaluation, e.g. `ood.accuracy` or
    `identification.r2_ood`."""
    x: str
    """The facet along the figure's x axis."""
    hue: str | None = None
    """The facet that colours the bars (one bar per value at each x)."""
    paper: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    """The paper's values, `{label: {metric: value}}`, drawn beside ours."""
    seeds: tuple[int, ...] = (0, 1, 2)
    plot: Literal["bars", "grid"] = "bars"
    """`bars`: a bar per run (mean, std, a dot per seed); `grid`: a heat map per metric, the
    `x` facet across and the `hue` facet down, for sweeps that cross two settings."""
    seed_task: bool | str = False
    """Also set a field of each run's task config to the run seed (`True`: `task.seed`; a name,
    e.g. `"split_seed"`: that field): for tasks that take their fixed structure from their own
    settings rather than the run's key (the compositional goals' mazes and split, the
    hyperteacher's split), so that the seeds vary it as the authors' run seed did."""
    select: Select | None = None
    """Report only the best run of each group differing in one facet (see `Select`);
    `results.csv` keeps every run, marked `selected` or not."""

    def __post_init__(self):
        if self.select is None:
            return
        facet = self.select.facet
        lacking = [r.label for r in self.runs if facet not in r.facets]
        if lacking:
            raise ValueError(
                f"Sweep selects over the facet {facet!r}, which runs {lacking} do not have; "
                "give every run that facet."
            )
        if facet in (self.x, self.hue):
            raise ValueError(
                f"Sweep selects over the facet {facet!r} and also plots it; plot other facets."
            )
        groups: dict[tuple, list[str]] = {}
        for r in self.runs:
            groups.setdefault(_group(r.facets, facet), []).append(r.facets[facet])
        repeated = {k: v for k, v in groups.items() if len(set(v)) < len(v)}
        if repeated:
            raise ValueError(
                f"Sweep selects over {facet!r}, but some runs share every facet including it: "
                f"{repeated}; give them facets that tell them apart."
            )


def _group(facets: dict[str, str], facet: str) -> tuple[tuple[str, str], ...]:
    """The facets of a run other than `facet`: runs with the same are one group of a
    selection."""
    return tuple(sorted((k, v) for k, v in facets.items() if k != facet))


# --------------------------------------------------------------------------- running


def run_dir(out: Path, label: str, seed: int) -> Path:
    return out / label / f"seed_{seed}"


def _with_seed(
    config: TrainConfig, seed: int, steps: int | None, seed_task: bool | str = False
) -> TrainConfig:
    run = dataclasses.replace(config.run, seed=seed)
    if seed_task:
        field = "seed" if seed_task is True else seed_task
        task = dataclasses.replace(config.task, **{field: seed})
        config = dataclasses.replace(config, task=task)
    if steps is None:
        return dataclasses.replace(config, run=run)
    per_call = min(run.steps_per_call, steps)

    def fit(interval: int) -> int:  # at most `steps`, a multiple of `per_call`
        return max(per_call, min(interval, steps) // per_call * per_call)

    run = dataclasses.replace(
        run, steps=steps, steps_per_call=per_call, checkpoint_every=fit(run.checkpoint_every)
    )
    every = fit(config.eval.every) if config.eval.every else 0
    return dataclasses.replace(config, run=run, eval=dataclasses.replace(config.eval, every=every))


def _finished(directory: Path, steps: int) -> bool:
    """A run is finished once its final checkpoint is committed (Orbax renames a step's folder
    into place last) and its final evaluation is written; a run exported without its
    checkpoints (`export`: no `checkpoints` folder at all) once its final evaluation is."""
    from .run import read_metrics

    checkpoints = directory / "checkpoints"
    if checkpoints.exists() and not (checkpoints / str(steps)).is_dir():
        return False
    return any(row["step"] == steps and row["pool"] != "train" for row in read_metrics(directory))


def plan(
    sweep: Sweep,
    seeds: Sequence[int] | None = None,
    steps: int | None = None,
    keep: int | None = None,
) -> list[tuple[SweepRun, int, TrainConfig]]:
    """Every `(run, seed, config)` of `sweep`, with its seed (and `steps` and the number of
    checkpoints to `keep`, if given) applied."""
    seeds = sweep.seeds if seeds is None else tuple(seeds)
    items = [
        (r, s, _with_seed(r.config, s, steps, sweep.seed_task)) for r in sweep.runs for s in seeds
    ]
    if keep is None:
        return items
    return [
        (r, s, dataclasses.replace(c, run=dataclasses.replace(c.run, keep=keep)))
        for r, s, c in items
    ]


def validate(sweep: Sweep, seeds: Sequence[int] | None = None, steps: int | None = None) -> None:
    """Build every run's task and model abstractly (nothing is computed or compiled), so that a
    bad setting fails before the first run starts."""
    import equinox as eqx

    from .run import build, resolve

    for run, _, config in plan(sweep, seeds, steps)[:: max(1, len(seeds or sweep.seeds))]:
        try:
            eqx.filter_eval_shape(build, resolve(config))
        except Exception as error:  # report which run of the sweep is wrong
            raise ValueError(f"sweep run {run.label!r}: {error}") from error


def run_sweep(
    sweep: Sweep,
    name: str,
    out: Path,
    *,
    seeds: Sequence[int] | None = None,
    steps: int | None = None,
    only: Sequence[str] | None = None,
    progress: bool = True,
    jobs: int = 1,
    reuse: Sequence[Path] = (),
    keep: int | None = None,
    cluster: "ClusterConfig | None" = None,
) -> list[str]:
    """Train every run of `sweep` for every seed under `out`, skipping finished runs and
    resuming interrupted ones; then write the report. Returns the failures (empty if none).

    With a `cluster` (`runs.cluster.ClusterConfig`) whose executor submits (`local`, `slurm`),
    the runs are submitted as submitit jobs instead (`runs.cluster.submit`: none twice, a failed
    one again) and the report is written once every run has finished; the failures are then the
    runs whose job ended before they did.

    `keep` sets how many checkpoints each run keeps (default: each run's own), e.g. 1 where the
    run directories must travel; it changes no number, so a run may resume under another.

    `reuse` names other sweep (or run) directories: a run not yet started here whose exact
    config (seed included) a finished run there trained is copied from there instead of trained,
    and its history records where from (`_reuse`).

    With `jobs > 1` that many runs train at once, each in a process of its own pinned to its
    share of the CPU cores (its output goes to `out/logs/<label>-seed_<k>.log`); the numbers are
    those of the same runs trained one after another. One sweep at a time writes `out` (a
    second is refused, naming the first)."""
    from .run import RunError

    if jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {jobs}.")
    if cluster is not None and cluster.submits and jobs != 1:
        raise ValueError(
            f"--jobs goes with --executor processes; with --executor {cluster.executor} every "
            "run is a job (--array-parallelism sets how many run at once)."
        )
    if steps is not None and steps < 1:
        raise ValueError(f"--steps must be at least 1, got {steps}.")
    if keep is not None and keep < 1:
        raise ValueError(f"--keep must be at least 1 (the last checkpoint), got {keep}.")
    todo = [item for item in plan(sweep, seeds, steps, keep) if not only or item[0].label in only]
    if only and not todo:
        labels = ", ".join(r.label for r in sweep.runs)
        raise ValueError(f"--only {' '.join(only)} matches no run of {name}; its runs: {labels}.")
    validate(sweep, seeds, steps)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file; choose a directory.")
    for source in reuse:
        if not Path(source).is_dir():
            raise ValueError(f"--reuse {source} is not a directory; name sweep directories.")
    try:
        with DirectoryLock(out, "zoo sweep"):
            return _run_sweep(sweep, name, out, todo, seeds, steps, progress, jobs, reuse, cluster)
    except LockedError as error:
        raise RunError(str(error)) from None


def _run_sweep(
    sweep, name, out, todo, seeds, steps, progress, jobs, reuse=(), cluster=None
) -> list[str]:
    """`run_sweep`, its directory locked."""
    import jax

    from .run import RunError, TrainingDiverged, train

    _write_sweep_file(out, name, sweep, seeds, steps)
    candidates = _finished_runs(reuse)
    pending: list[_Pending] = []
    for i, (run, seed, config) in enumerate(todo, 1):
        directory = run_dir(out, run.label, seed)
        if _finished(directory, config.run.steps):
            print(f"[{i}/{len(todo)}] {run.label} seed {seed}: done already", file=sys.stderr)
            continue
        source = None if directory.exists() else _reuse(candidates, config, directory)
        if source is not None:
            print(
                f"[{i}/{len(todo)}] {run.label} seed {seed}: copied from {source}", file=sys.stderr
            )
            continue
        resume = (directory / "config.json").exists()
        pending.append(_Pending(f"[{i}/{len(todo)}]", run.label, seed, config, directory, resume))
    if cluster is not None and cluster.submits:
        from .cluster import submit

        found = submit(out, name, [(p.label, p.seed, p.config) for p in pending], cluster)
        if all(s.state == "finished" for s in found):
            report(out)
        return [
            f"{s.label} seed {s.seed}: its job {s.job_id} ended before the run (log {s.log})"
            for s in found
            if s.state == "failed" and cluster.wait
        ]
    if jobs > 1:
        failures = _run_in_processes(pending, jobs, out / "logs")
        report(out)
        return failures
    failures = []
    for item in pending:
        verb = "resuming" if item.resume else "training"
        print(f"{item.counter} {item.label} seed {item.seed}: {verb}", file=sys.stderr)
        try:
            train(item.config, item.directory, resume=item.resume, progress=progress)
        except (RunError, TrainingDiverged) as error:
            failures.append(f"{item.label} seed {item.seed}: {error}")
            print(f"  failed: {error}", file=sys.stderr)
        finally:
            # Free the run's compiled programs. Each run compiles its own (its functions are
            # new objects), and JAX's caches keep them for the life of the process: on CPU
            # each holds thousands of memory mappings, and a sweep of ~20 runs reached the
            # kernel's limit (LLVM "Cannot allocate memory", then a segfault).
            jax.clear_caches()
            gc.collect()
    report(out)
    return failures


def _finished_runs(sources: Sequence[Path]) -> list[tuple[Path, TrainConfig]]:
    """The run directories under `sources` (each a sweep's directory, `<label>/seed_<k>`, or a
    run's own) with the config each was trained with; runs whose config cannot be read (torn,
    or another version's) are left out."""
    from .run import read_config

    found = []
    for source in map(Path, sources):
        for path in [source / "config.json", *sorted(source.glob("*/seed_*/config.json"))]:
            if path.is_file():
                try:
                    found.append((path.parent, read_config(path.parent)))
                except Exception:  # not a config this version reads: not a run to reuse
                    continue
    return found


def _reuse(
    candidates: list[tuple[Path, TrainConfig]], config: TrainConfig, directory: Path
) -> Path | None:
    """Copy into `directory` the first finished run of `candidates` that trained exactly
    `config` (see `_same_run`), without its lock, adding a `copied` record (its origin) to its
    history; returns the run copied, or None."""
    import shutil

    from .run import HISTORY_FILE, resolve

    want = resolve(config)
    for candidate, saved in candidates:
        if _same_run(saved, want) and _finished(candidate, config.run.steps):
            shutil.copytree(candidate, directory, ignore=shutil.ignore_patterns(".*"))
            record = {"event": "copied", "from": str(candidate.resolve()), "time": time.time()}
            with (directory / HISTORY_FILE).open("a") as f:
                f.write(json.dumps(record) + "\n")
            return candidate
    return None


def _same_run(saved: TrainConfig, want: TrainConfig) -> bool:
    """Whether a run saved with config `saved` trained the resolved config `want` (seed and
    steps included, the checkpoints kept not): the algorithm is compared only where `want`
    names one (left unnamed, it is chosen from the task and model, which are compared), the
    plugins' sources only by distribution."""
    if not want.algorithm_name:
        saved = dataclasses.replace(saved, algorithm_name="", algorithm=want.algorithm)
    saved = dataclasses.replace(saved, run=dataclasses.replace(saved.run, keep=want.run.keep))
    # The plugins' sources: the same distribution where both record one (its version may
    # differ: the numbers are checked by the fingerprints, not here); runs saved before sources
    # were recorded have none.
    for field in ("task_source", "model_source"):
        mine, theirs = getattr(saved, field), getattr(want, field)
        if mine is not None and theirs is not None and mine.dist != theirs.dist:
            return False
        saved = dataclasses.replace(saved, **{field: theirs})
    return saved == want


@dataclasses.dataclass(frozen=True)
class _Pending:
    counter: str
    label: str
    seed: int
    config: TrainConfig
    directory: Path
    resume: bool


def _cpu_shares(jobs: int) -> list[set[int] | None]:
    """The CPU cores of each of `jobs` processes: this process's cores split evenly (no
    pinning where the platform cannot pin or there are fewer cores than jobs)."""
    if not hasattr(os, "sched_getaffinity"):
        return [None] * jobs
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < jobs:
        return [None] * jobs
    n = len(cpus)
    return [set(cpus[i * n // jobs : (i + 1) * n // jobs]) for i in range(jobs)]


def _run_in_processes(pending: list[_Pending], jobs: int, logs: Path) -> list[str]:
    """Train `pending` with at most `jobs` worker processes at once (runs._sweep_worker)."""
    logs.mkdir(parents=True, exist_ok=True)
    shares = _cpu_shares(jobs)
    queue = list(pending)
    running: dict[int, tuple[subprocess.Popen, _Pending, Path, float]] = {}
    failures = []
    try:
        while queue or running:
            while queue and len(running) < jobs:
                slot = min(set(range(jobs)) - set(running))
                item = queue.pop(0)
                log = logs / f"{item.label}-seed_{item.seed}.log"
                cpus = shares[slot]
                with open(log, "a") as handle:  # the worker keeps its own descriptor
                    process = subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "runs._sweep_worker",
                            str(item.directory),
                            "resume" if item.resume else "new",
                        ],
                        stdin=subprocess.PIPE,
                        stdout=handle,
                        stderr=subprocess.STDOUT,
                        text=True,
                    )
                if cpus is not None:  # before the worker has started any thread of its own
                    os.sched_setaffinity(process.pid, cpus)
                assert process.stdin is not None
                process.stdin.write(json.dumps(to_dict(item.config)))
                process.stdin.close()
                running[slot] = (process, item, log, time.monotonic())
                verb = "resuming" if item.resume else "training"
                where = f"cores {sorted(cpus)}" if cpus else "unpinned"
                print(
                    f"{item.counter} {item.label} seed {item.seed}: {verb} ({where}; log {log})",
                    file=sys.stderr,
                )
            time.sleep(0.5)
            for slot, (process, item, log, start) in list(running.items()):
                code = process.poll()
                if code is None:
                    continue
                del running[slot]
                minutes = (time.monotonic() - start) / 60
                if code == 0:
                    print(
                        f"{item.counter} {item.label} seed {item.seed}: finished in "
                        f"{minutes:.1f} min",
                        file=sys.stderr,
                    )
                    continue
                lines = log.read_text(errors="replace").replace("\r", "\n").splitlines()
                reason = next((line for line in reversed(lines) if line.strip()), "")
                failures.append(f"{item.label} seed {item.seed}: {reason} (log {log})")
                print(f"  failed: {failures[-1]}", file=sys.stderr)
    finally:  # interrupted: stop the workers; their runs resume from their checkpoints
        for process, *_ in running.values():
            process.terminate()
        for process, *_ in running.values():
            process.wait()
    return failures


def _write_sweep_file(
    out: Path, name: str, sweep: Sweep, seeds: Sequence[int] | None, steps: int | None
) -> None:
    record = {
        "name": name,
        "description": sweep.description,
        "seeds": list(sweep.seeds if seeds is None else seeds),
        "seed_task": sweep.seed_task,
        "steps": steps,
        "metrics": list(sweep.metrics),
        "x": sweep.x,
        "hue": sweep.hue,
        "plot": sweep.plot,
        "select": dataclasses.asdict(sweep.select) if sweep.select else None,
        "paper": sweep.paper,
        "runs": [
            {"label": r.label, "facets": r.facets, "config": to_dict(r.config)} for r in sweep.runs
        ],
    }
    path = out / SWEEP_FILE
    if path.exists():
        old = json.loads(path.read_text())
        if old["name"] != name:
            raise ValueError(
                f"{out} holds the sweep {old['name']!r}, not {name!r}; choose another --out."
            )
        seeds_all = sorted(set(old["seeds"]) | set(record["seeds"]))
        record["seeds"] = seeds_all
        if "report_step" in old:  # set by `zoo report --step`: kept until it is changed there
            record["report_step"] = old["report_step"]
        if "report_best" in old:  # set by `zoo report --best`, likewise
            record["report_best"] = old["report_best"]
    atomic_write_text(path, json.dumps(record, indent=2) + "\n")


def export(src: Path, dest: Path) -> list[str]:
    """Copy the finished runs of the sweep in `src` into `dest`, in the same layout, without
    their checkpoints (each run directory's files: config, metrics, history, evaluations), and
    the sweep's record, merging with runs and seeds already in `dest`: a directory small enough
    to commit, from which `report(dest)` rebuilds every number. Returns the runs copied, as
    `label/seed_k`."""
    record = json.loads((src / SWEEP_FILE).read_text())
    dest.mkdir(parents=True, exist_ok=True)
    if (dest / SWEEP_FILE).exists():
        old = json.loads((dest / SWEEP_FILE).read_text())
        if old["name"] != record["name"]:
            raise ValueError(
                f"{dest} holds the sweep {old['name']!r}, not {record['name']!r}; export "
                "into another directory."
            )
        record["seeds"] = sorted(set(old["seeds"]) | set(record["seeds"]))
        if old.get("report_step") != record.get("report_step"):
            raise ValueError(
                f"{dest} is reported at step {old.get('report_step')}, {src} at step "
                f"{record.get('report_step')}; export into another directory."
            )
        if old.get("report_best") != record.get("report_best"):
            raise ValueError(
                f"{dest} reports {_model(old)}, {src} {_model(record)}; export into another "
                "directory."
            )
    step, best = record.get("report_step"), record.get("report_best")
    copied = []
    for run in record["runs"]:
        for seed in record["seeds"]:
            directory = run_dir(src, run["label"], seed)
            if not (directory / "config.json").exists():
                continue
            if not _is_finished(directory, final_metrics(directory, step, best), step):
                continue  # unfinished: its numbers are not the run's
            target = run_dir(dest, run["label"], seed)
            target.mkdir(parents=True, exist_ok=True)
            for file in directory.iterdir():
                if file.is_file() and not file.name.startswith("."):  # not the run's lock
                    # Bytes: a run may hold plots (`zoo eval --activity` writes a PNG).
                    atomic_write_bytes(target / file.name, file.read_bytes())
            copied.append(f"{run['label']}/seed_{seed}")
    atomic_write_text(dest / SWEEP_FILE, json.dumps(record, indent=2) + "\n")
    return copied


# --------------------------------------------------------------------------- reporting


def _model(record: dict) -> str:
    """Which model of each run a sweep record reports, in words."""
    best = record.get("report_best")
    if not best:
        return "each run's last model"
    return f"each run's model of {'highest' if best['maximize'] else 'lowest'} {best['metric']}"


def final_metrics(
    directory: Path, step: int | None = None, best: dict | None = None
) -> dict[str, float]:
    """`{"pool.metric": value}` of the last evaluation of a run, or of its evaluation at `step`
    (empty if it has none). With `best` (`{"metric": "test.loss", "maximize": False}`, see
    `set_report_best`), of the evaluation up to that one whose `metric` is best (a value that
    is not finite counts as worst; of equal values the earliest), as papers that keep the model
    of best validation loss report it; `final_step` is then the step the run was evaluated to,
    `step` the one reported."""
    from .run import read_metrics

    rows = [r for r in read_metrics(directory) if r["pool"] != "train"]
    if step is not None:
        if not any(r["step"] == step for r in rows):
            return {}
        rows = [r for r in rows if r["step"] <= step]
    if not rows:
        return {}
    last = max(r["step"] for r in rows)
    evaluations: dict[int, dict[str, float]] = {}
    for row in rows:
        found = evaluations.setdefault(row["step"], {"step": float(row["step"])})
        for key, value in row.items():
            if key not in ("step", "pool", "time"):
                found[f"{row['pool']}.{key}"] = float(value)
    if best is None:
        return evaluations[last]
    metric, sign = best["metric"], 1.0 if best["maximize"] else -1.0

    def score(at: int) -> float:
        value = evaluations[at].get(metric, math.nan)
        return sign * value if math.isfinite(value) else -math.inf

    if metric not in evaluations[last]:
        return evaluations[last] | {"final_step": float(last)}  # nothing to choose on
    chosen = max(sorted(evaluations), key=score)  # max keeps the first of equal scores
    return evaluations[chosen] | {"final_step": float(last)}


def _is_finished(directory: Path, found: dict[str, float], step: int | None = None) -> bool:
    """Whether `found`, the run's `final_metrics`, is the evaluation of its last step (or, when
    the sweep is reported at `step`, of that step)."""
    if step is None:
        step = json.loads((directory / "config.json").read_text())["run"]["steps"]
    return found.get("final_step", found.get("step")) == step


def _provenance(directory: Path) -> dict[str, str]:
    """`{"commit": ..., "device": ...}`: the git commit(s) the run was trained at and the kind
    of device(s) it ran on, from its history (each start and resume; `+dirty` when tracked files
    had changes). A key is left out for runs saved before the history recorded it."""
    from .run import read_history

    found: dict[str, list[str]] = {"commit": [], "device": []}
    for record in read_history(directory):
        if record.get("commit"):
            found["commit"].append(
                record["commit"][:12] + ("+dirty" if record.get("dirty") else "")
            )
        if record.get("device_kind"):
            found["device"].append(str(record["device_kind"]))
    return {key: " ".join(dict.fromkeys(values)) for key, values in found.items() if values}


def _mean_std(values: list[float]) -> tuple[float, float]:
    stat = mean_std(values)
    return stat.mean, stat.std


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    """Rows as CSV, the columns in order of first appearance (a row lacking one leaves it
    empty)."""
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def _set_record(out: Path, key: str, value: Any) -> None:
    """Set (or, with None, remove) one entry of the sweep record in `out`."""
    path = out / SWEEP_FILE
    record = json.loads(path.read_text())
    if value is None:
        record.pop(key, None)
    else:
        record[key] = value
    atomic_write_text(path, json.dumps(record, indent=2) + "\n")


def set_report_step(out: Path, step: int | None) -> None:
    """Report the sweep in `out` at outer step `step` from now on (None: at each run's last
    step), recorded in its sweep record so that a later `report(out)`, and `export`, give the
    same numbers. Reporting at a step compares runs trained to different lengths at the same
    point: a run evaluated at `step` counts as finished there."""
    _set_record(out, "report_step", step)


def set_report_best(out: Path, metric: str | None, maximize: bool = False) -> None:
    """Report each run of the sweep in `out` with its evaluation of best `metric` (`pool.metric`,
    e.g. `test.loss`; lowest unless `maximize`) rather than its last, from now on (None: the
    last again), recorded in its sweep record as `report_step` is: the model a paper keeps by
    validation loss. Choose on an in-distribution metric, so that the reported ones (e.g. OOD
    accuracy) are not the ones that chose. With a report step, the best up to that step.
    Raises `ValueError` if the sweep's runs have evaluations but none of `metric`."""
    if metric is not None:
        record = json.loads((out / SWEEP_FILE).read_text())
        seen = set()
        for run in record["runs"]:
            for seed in record["seeds"]:
                seen |= final_metrics(run_dir(out, run["label"], seed)).keys() - {"step"}
        if seen and metric not in seen:
            raise ValueError(
                f"the runs in {out} were not evaluated on {metric!r}; choose one of "
                f"{', '.join(sorted(seen))}."
            )
    value = None if metric is None else {"metric": metric, "maximize": maximize}
    _set_record(out, "report_best", value)


def reported_model(record: dict) -> str:
    """Which evaluation of each run a sweep record reports, in words, e.g. "each run's model of
    lowest test.loss up to step 2,000"."""
    step = record.get("report_step")
    up_to = f" up to step {step:,}" if step is not None else ""
    if record.get("report_best"):
        return _model(record) + up_to
    return f"each run's model at step {step:,}" if step is not None else _model(record)


def _at(record: dict) -> str:
    """For a figure's title: `" at step N"` for a sweep reported at a step (`set_report_step`),
    `", each run's model of lowest test.loss"` for one reported at its best (`set_report_best`),
    else empty."""
    if record.get("report_best"):
        return f", {reported_model(record)}"
    step = record.get("report_step")
    return f" at step {step:,}" if step is not None else ""


def report(out: Path) -> dict[str, Any]:
    """Collect the runs of the sweep in `out` into `results.csv` (every run with an
    evaluation, unfinished ones marked), `summary.csv`, `summary.json` and `figure.png` (finished
    runs only; all in `out`); returns the summary. Each run counts with its last evaluation, or
    with its evaluation at the sweep's report step where one is set (`set_report_step`), or
    with its best evaluation where the sweep is reported so (`set_report_best`)."""
    record = json.loads((out / SWEEP_FILE).read_text())
    step, best = record.get("report_step"), record.get("report_best")
    rows = []
    for run in record["runs"]:
        for seed in record["seeds"]:
            directory = run_dir(out, run["label"], seed)
            if (directory / "metrics.jsonl").exists():
                found = final_metrics(directory, step, best)
                if found:
                    finished = _is_finished(directory, found, step)
                    row = {"label": run["label"], "seed": seed, **run["facets"]}
                    rows.append({**row, "finished": finished, **found, **_provenance(directory)})
    chosen = _select(record, rows)
    if chosen is not None:
        for row in rows:
            row["selected"] = row["label"] in chosen
    _write_csv(out / "results.csv", rows)

    summary = []
    for run in record["runs"]:
        if chosen is not None and run["label"] not in chosen:
            continue
        mine = [r for r in rows if r["label"] == run["label"] and r["finished"]]
        for metric in record["metrics"]:
            values = [r[metric] for r in mine if metric in r]
            if not values:
                continue
            mean, std = _mean_std(values)
            entry = {"label": run["label"], **run["facets"], "metric": metric}
            entry |= {"mean": mean, "std": std, "n": len(values)}
            paper = record["paper"].get(run["label"], {}).get(metric)
            entry["paper"] = paper if paper is not None else ""
            if chosen is not None:
                entry["selection"] = chosen[run["label"]].text
            summary.append(entry)
    _write_csv(out / "summary.csv", summary)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    if summary and record.get("plot", "bars") == "grid":
        _grid_figure(record, summary, out / "figure.png", chosen)
    elif summary:
        _figure(record, summary, rows, out / "figure.png")
    _curves(record, out)
    return {"runs": rows, "summary": summary}


class _Choice(NamedTuple):
    """How a sweep's `Select` chose the run of a group: `text` for `summary.csv`, e.g. `"lowest
    test.loss (mean of seeds 0, 1, 2) of 3/3 lr"`, from `compared` runs of the group (those with
    finished seeds) of the `of` runs in it, on `seeds` seeds (those finished in all of them; 0
    where they share none and each was judged on its own)."""

    text: str
    compared: int
    of: int
    seeds: int


def _select(record: dict, rows: list[dict]) -> dict[str, _Choice] | None:
    """For a sweep with a `Select` (None without one): the label of the run chosen in each group,
    mapped to how it was chosen (`_Choice`). The runs are compared on the seeds finished in all
    of them (where they share none, each on its own); a group none of whose runs has finished
    has none."""
    select = record.get("select")
    if not select:
        return None
    facet, metric, sign = select["facet"], select["metric"], 1 if select["maximize"] else -1
    groups: dict[tuple, list[str]] = {}
    for run in record["runs"]:
        groups.setdefault(_group(run["facets"], facet), []).append(run["label"])
    chosen = {}
    for labels in groups.values():
        found = {}  # label: {seed: value} of its finished seeds
        for label in labels:
            values = {
                r["seed"]: r[metric]
                for r in rows
                if r["label"] == label and r["finished"] and metric in r
            }
            if values:
                found[label] = values
        if not found:
            continue
        shared = set.intersection(*(set(v) for v in found.values()))
        scores = {}
        for label, values in found.items():
            kept = [v for seed, v in values.items() if seed in shared or not shared]
            score = sign * sum(kept) / len(kept)
            scores[label] = score if math.isfinite(score) else -math.inf  # diverged: worst
        best = max(scores, key=lambda label: scores[label])
        seeds = ", ".join(str(s) for s in sorted(shared)) if shared else "each run's own"
        how = "highest" if select["maximize"] else "lowest"
        text = f"{how} {metric} (mean of seeds {seeds}) of {len(found)}/{len(labels)} {facet}"
        chosen[best] = _Choice(text, len(found), len(labels), len(shared))
    return chosen


_AXES = {
    "frames": (
        "curves.png",
        "environment frames (every frame acted, by every loop)",
    ),
    "updates": (
        "curves-updates.png",
        "policy updates (iterations of the loop that trains the policy)",
    ),
}
"""The x axes of an RL sweep's learning curves: the column of `curves.csv`, the figure, and the
axis label."""


def _curves(record: dict, out: Path) -> list[tuple[str | None, str]]:
    """For runs that count environment frames (reinforcement learning): every evaluation of
    every run against the frames seen and against the policy updates made (`curves.csv`;
    `curves.png` against frames, `curves-updates.png` against updates: a line per seed, the
    mean over seeds in bold; a row of panels per value of the sweep's `x` facet, coloured by its
    `hue`, where it has both), the learning curves of sample-efficiency claims. An algorithm
    whose config has `updates_per_step` (e.g. a two-loop one making several policy updates per
    step) counts that many per step; others one. Returns the panels drawn, `(x facet value or
    None, metric)` row by row."""
    from .run import read_metrics

    points = []
    for run in record["runs"]:
        for seed in record["seeds"]:
            directory = run_dir(out, run["label"], seed)
            rows = read_metrics(directory) if (directory / "metrics.jsonl").exists() else []
            frames = {
                r["step"]: r["frames"] for r in rows if r["pool"] == "train" and "frames" in r
            }
            if not frames:
                continue
            per_step = _updates_per_step(directory)
            for r in rows:
                if r["pool"] != "train" and r["step"] in frames:
                    values = {
                        f"{r['pool']}.{k}": v for k, v in r.items() if k not in ("step", "pool")
                    }
                    points.append(
                        {
                            "label": run["label"],
                            "seed": seed,
                            "frames": frames[r["step"]],
                            **({} if per_step is None else {"updates": r["step"] * per_step}),
                            **values,
                        }
                    )
    if not points:
        return []
    _write_csv(out / "curves.csv", points)
    panels = _draw_curves(record, points, "frames", out)
    if all("updates" in p for p in points):
        _draw_curves(record, points, "updates", out)
    return panels


def _updates_per_step(directory: Path) -> int | None:
    """Policy updates per step of the run in `directory`: its algorithm config's
    `updates_per_step`, 1 if it has none; `None` if its config cannot be read."""
    from .run import RunError, read_config

    try:
        algorithm = read_config(directory).algorithm
    except (RunError, KeyError, TypeError, ValueError):
        return None
    return int(getattr(algorithm, "updates_per_step", 1))


def _draw_curves(
    record: dict, points: list[dict], axis: str, out: Path
) -> list[tuple[str | None, str]]:
    """One figure of `_curves`, against `axis` (a key of `_AXES`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    filename, xlabel = _AXES[axis]
    metrics = [m for m in record["metrics"] if any(m in p for p in points)]
    labels = list(dict.fromkeys(p["label"] for p in points))
    # A row of panels per value of the sweep's x facet (e.g. one per level), a colour per
    # value of its hue (e.g. one per agent), where the sweep has both; else one row.
    facets = {r["label"]: r.get("facets", {}) for r in record["runs"]}
    x_facet, hue_facet = record.get("x"), record.get("hue")
    groups = list(dict.fromkeys(facets[label].get(x_facet) for label in labels))
    if not (x_facet and hue_facet and len(groups) > 1):
        groups, x_facet = [None], None
    hues = list(dict.fromkeys(facets[label].get(hue_facet, label) for label in labels))
    fig, axes = plt.subplots(
        len(groups),
        len(metrics),
        figsize=(5.5 * len(metrics), 1 + 3 * len(groups)),
        squeeze=False,
    )
    for row, group in enumerate(groups):
        members = [lb for lb in labels if x_facet is None or facets[lb].get(x_facet) == group]
        for ax, metric in zip(axes[row], metrics, strict=True):
            for label in members:
                name = facets[label].get(hue_facet, label) if x_facet else label
                color = f"C{(hues.index(name) if name in hues else labels.index(label)) % 10}"
                mine = [p for p in points if p["label"] == label and metric in p]
                by_x: dict[int, list[float]] = {}
                for seed in dict.fromkeys(p["seed"] for p in mine):
                    line = sorted((p[axis], p[metric]) for p in mine if p["seed"] == seed)
                    ax.plot(*zip(*line, strict=True), color=color, alpha=0.3, lw=1)
                    for x, y in line:
                        by_x.setdefault(x, []).append(y)
                xs = sorted(by_x)
                seeds = len(dict.fromkeys(p["seed"] for p in mine))
                ax.plot(
                    xs,
                    [sum(by_x[x]) / len(by_x[x]) for x in xs],
                    color=color,
                    lw=2.5,
                    label=f"{name} (n={seeds})",
                )
            ax.set_xlabel(xlabel)
            ax.set_ylabel(metric)
            if group is not None:
                ax.set_title(f"{x_facet} = {group}", fontsize=9)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
    title = record.get("description", "").split(". Paper")[0]
    fig.suptitle(textwrap.fill(title, 110), fontsize=9)
    fig.tight_layout()
    fig.savefig(out / filename, dpi=110)
    plt.close(fig)
    return [(group, metric) for group in groups for metric in metrics]


def _partial(choice: _Choice | None, shown: int = 0) -> str:
    """For a cell showing `shown` seeds whose run a selecting sweep chose (`choice`): `" (k of
    n)"` where it was chosen among only k of the group's n runs (the others not finished), and
    `" (s seeds)"` where it was chosen on only s < `shown` seeds (those all its runs had
    finished), else `""`. A cell chosen from fewer options, or on fewer seeds, than it shows
    must not read as fully tuned."""
    if choice is None:
        return ""
    rates = f" ({choice.compared} of {choice.of})" if choice.compared < choice.of else ""
    if not 0 < choice.seeds < shown:
        return rates
    return rates + f" ({choice.seeds} seed{'s' if choice.seeds > 1 else ''})"


def _selected(record: dict) -> str:
    """For a sweep with a `Select`: a line on what each bar or cell is, for a figure's title."""
    select = record.get("select")
    if not select:
        return ""
    best = "highest" if select["maximize"] else "lowest"
    return f"\neach the {select['facet']} with the {best} mean {select['metric']}"


def _panels(record: dict) -> list[dict[str, str]]:
    """The facets drawn in no other way (not `x`, `hue` or the selected facet), one dict per
    combination of their values in the sweep's order: a row of panels each (`[{}]`, one row,
    for sweeps with no such facet). Without rows, runs differing only in those would be drawn
    over one another."""
    drawn = {record["x"], record["hue"], (record.get("select") or {}).get("facet")}
    panels: list[dict[str, str]] = []
    for run in record["runs"]:
        panel = {k: v for k, v in run["facets"].items() if k not in drawn}
        if panel not in panels:
            panels.append(panel)
    return panels


def _in(entry: dict, panel: dict[str, str]) -> bool:
    return all(entry.get(k) == v for k, v in panel.items())


def _grid_figure(
    record: dict, summary: list[dict], path: Path, chosen: dict[str, _Choice] | None = None
) -> dict[str, Float[np.ndarray, "hue x"]]:
    """A heat map per metric of the mean over seeds: the `x` facet across, the `hue` facet
    down, each cell annotated with its mean and n (a row of maps per combination of the other
    facets, `_panels`) and, in a selecting sweep, the selected facet's value, with `(k of n)`
    where `chosen` (`_select`) says only k of the cell's n runs could be compared and `(s
    seeds)` where they were compared on fewer seeds than the cell shows (`_partial`). Returns the
    maps (NaN where no run finished), keyed by metric, or by `"metric (facet values)"` where
    there are several rows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    chosen = chosen or {}
    metrics = [m for m in record["metrics"] if any(e["metric"] == m for e in summary)]
    x_facet, hue_facet = record["x"], record["hue"]
    xs = list(dict.fromkeys(r["facets"][x_facet] for r in record["runs"]))
    hues = list(dict.fromkeys(r["facets"][hue_facet] for r in record["runs"]))
    panels = _panels(record)
    fig, axes = plt.subplots(
        len(panels),
        len(metrics),
        figsize=(
            1.5 + (1.0 + 0.9 * len(xs)) * len(metrics),
            (1.0 + 0.6 * len(hues)) * len(panels) + 0.5,
        ),
        squeeze=False,
    )
    maps = {}
    for row, panel in enumerate(panels):
        name = ", ".join(panel.values())
        for ax, metric in zip(axes[row], metrics, strict=True):
            grid = np.full((len(hues), len(xs)), np.nan)
            counts = np.zeros((len(hues), len(xs)), int)
            notes = [[""] * len(xs) for _ in hues]  # the selected facet's value, where selected
            for e in summary:
                if e["metric"] == metric and _in(e, panel):
                    i, j = hues.index(e[hue_facet]), xs.index(e[x_facet])
                    grid[i, j], counts[i, j] = e["mean"], e["n"]
                    if record.get("select"):
                        notes[i][j] = (
                            "\n"
                            + e[record["select"]["facet"]]
                            + _partial(chosen.get(e["label"]), e["n"])
                        )
            maps[f"{metric} ({name})" if name else metric] = grid
            if not counts.any():
                ax.set_axis_off()
                continue
            log = metric.endswith((".mse", ".loss")) and np.nanmin(grid) > 0
            shown = np.log10(grid) if log else grid
            image = ax.imshow(shown, cmap="viridis", aspect="auto")
            fig.colorbar(image, ax=ax, label=f"log10 {metric}" if log else metric)
            low, high = np.nanmin(shown), np.nanmax(shown)
            for i in range(len(hues)):
                for j in range(len(xs)):
                    if counts[i, j]:  # dark text on the bright cells
                        bright = (shown[i, j] - low) > 0.6 * (high - low)
                        text = f"{grid[i, j]:.3g}\nn={counts[i, j]}" + notes[i][j]
                        color = "k" if bright else "w"
                        ax.text(j, i, text, ha="center", va="center", fontsize=7, color=color)
            ax.set_xticks(range(len(xs)), xs, rotation=20, ha="right")
            ax.set_yticks(range(len(hues)), hues)
            ax.set_xlabel(x_facet)
            ax.set_ylabel(hue_facet)
            ax.set_title(f"{metric}\n{name}" if name else metric, fontsize=9)
    fewer_runs = any(c.compared < c.of for c in chosen.values())
    fewer_seeds = any(
        0 < chosen[e["label"]].seeds < e["n"] for e in summary if e["label"] in chosen
    )
    facet = (record.get("select") or {}).get("facet")
    fig.suptitle(
        f"{record['name']}{_at(record)}: mean over the finished seeds (n per cell)"
        + _selected(record)
        + (f"; (k of n): among only k of the n {facet}" if fewer_runs else "")
        + ("; (s seeds): on only the s seeds all had finished" if fewer_seeds else ""),
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return maps


def _figure(record: dict, summary: list[dict], rows: list[dict], path: Path) -> list[str]:
    """Bars of the mean over seeds with their standard deviation, a dot per seed, and the
    paper's values as black marks (a row of panels per combination of the facets other than
    `x` and `hue`, `_panels`). Errors (`.mse`, `.loss`) differ by orders of magnitude and are
    drawn on a log scale, as points with error bars: a bar's base there would mean nothing.

    Only the `x` values and hues with a result get a slot, so a sweep run in part (one
    setting of six) is not drawn as empty space. Returns the `x` values drawn, in order.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = [m for m in record["metrics"] if any(e["metric"] == m for e in summary)]
    x_facet, hue_facet = record["x"], record["hue"]
    reported = {e["label"] for e in summary if e["metric"] in metrics}
    ran = [r for r in record["runs"] if r["label"] in reported]
    xs = list(dict.fromkeys(r["facets"][x_facet] for r in ran))
    hues = list(dict.fromkeys(r["facets"].get(hue_facet, "") for r in ran))
    panels = _panels(record)
    fig_width = max(6.0, 1.5 + 1.3 * len(xs) * len(metrics))
    fig, axes = plt.subplots(
        len(panels), len(metrics), figsize=(fig_width, 3.4 * len(panels) + 0.4), squeeze=False
    )
    width = 0.8 / len(hues)
    colors = plt.get_cmap("tab10").colors  # pyright: ignore[reportAttributeAccessIssue]
    first = axes[0][0]
    labelled: set[str] = set()  # the legend names each hue once, and the paper's marks once
    paper_labelled = False
    for row, panel in enumerate(panels):
        name = ", ".join(panel.values())
        for ax, metric in zip(axes[row], metrics, strict=True):
            log = metric.endswith((".mse", ".loss"))
            for h, hue in enumerate(hues):
                for i, x in enumerate(xs):
                    found = [
                        e
                        for e in summary
                        if e["metric"] == metric
                        and e[x_facet] == x
                        and (hue_facet is None or e.get(hue_facet) == hue)
                        and _in(e, panel)
                    ]
                    if not found:
                        continue
                    e = found[0]
                    pos = i - 0.4 + width * (h + 0.5)
                    label = None
                    if hue_facet and ax is first and hue not in labelled:
                        label = hue
                        labelled.add(hue)
                    color = colors[h % 10]
                    if log:
                        ax.errorbar(
                            pos, e["mean"], e["std"], fmt="s", color=color, capsize=3, label=label
                        )
                    else:
                        ax.bar(pos, e["mean"], width, yerr=e["std"], color=color, label=label)
                    seeds = [
                        r[metric]
                        for r in rows
                        if r["label"] == e["label"] and r["finished"] and metric in r
                    ]
                    ax.plot([pos] * len(seeds), seeds, "o", color="0.2", markersize=3, alpha=0.7)
                    ax.annotate(
                        f"n={e['n']}",
                        (pos, 0),
                        xycoords=("data", "axes fraction"),
                        xytext=(0, 2),
                        textcoords="offset points",
                        ha="center",
                        fontsize=6,
                        color="0.3",
                    )
                    if e["paper"] != "":
                        paper_label = None
                        if ax is first and not paper_labelled:
                            paper_label, paper_labelled = "paper", True
                        ax.plot(pos, e["paper"], "k_", markersize=14, mew=2, label=paper_label)
            ax.set_xticks(range(len(xs)), xs, rotation=20, ha="right")
            ax.set_title(f"{metric}\n{name}" if name else metric, fontsize=9)
            if log:
                ax.set_yscale("log")
            ax.grid(axis="y", alpha=0.3)
    title = f"{record['name']}{_at(record)}: mean and std over the finished seeds (n under each)"
    fig.suptitle(textwrap.fill(title + _selected(record), int(fig_width * 13)), fontsize=10)
    handles, labels = first.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.08 if handles else 0, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return xs
