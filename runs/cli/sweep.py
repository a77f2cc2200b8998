"""`zoo sweep NAME --out DIR`: run (or resume) a named sweep of an experiment plugin."""

import dataclasses
import sys
from pathlib import Path
from typing import Annotated

import tyro

from ..cluster import ClusterConfig, ClusterError


@dataclasses.dataclass(frozen=True)
class SweepCommand:
    """Run every run of a named sweep for every seed, each in DIR/<label>/seed_<k>. Finished
    runs are skipped and interrupted ones resumed: run the same command again to continue.
    Writes the report (zoo report DIR) at the end."""

    name: Annotated[str, tyro.conf.Positional]
    """The sweep (zoo sweeps lists them); with --status, also its directory."""
    out: Path | None = None
    """Directory of the sweep's runs and report (required, but with --status DIR)."""
    seeds: tuple[int, ...] | None = None
    """Seeds (default: the sweep's own, e.g. 0 1 2)."""
    steps: int | None = None
    """Outer steps of every run (default: each run's own), e.g. for a quick look."""
    only: tuple[str, ...] = ()
    """Run only the runs with these labels."""
    progress: bool = True
    """Show a progress bar per run."""
    jobs: int = 1
    """Runs trained at once, each in a process of its own pinned to its share of the CPU cores
    (logs in DIR/logs/); the default trains them one after another in this process."""
    reuse: tuple[Path, ...] = ()
    """Other sweep directories whose finished runs are copied in, not trained again, where one
    trained exactly a run's config and seed (e.g. the runs another sweep shares with this
    one); each copy's history names its origin."""
    keep: int | None = None
    """Checkpoints each run keeps (default: each run's own, 3); 1 keeps only the last, e.g. for
    run directories that must travel back from a GPU machine. Changes no number."""
    status: bool = False
    """Print where each run is (finished / running / queued / failed, with its log /
    interrupted / not started) and submit or train nothing: zoo sweep DIR --status."""
    cluster: Annotated[ClusterConfig, tyro.conf.OmitArgPrefixes] = dataclasses.field(
        default_factory=ClusterConfig
    )
    """Where the runs train (--executor processes, local or slurm) and, for jobs, with what
    resources: the fields of `runs.cluster.ClusterConfig`, as flags without a prefix."""


def main(argv: list[str]) -> int:
    """Run `zoo sweep` with `argv`; the exit status."""
    from ..experiments import UnknownNameError, get_sweep
    from ..run import RunInterrupted
    from ..sweeps import run_sweep

    command = tyro.cli(SweepCommand, args=argv, prog="zoo sweep")
    if command.status:
        return _status(command)
    if command.out is None:
        print("zoo sweep: --out DIR is required (the sweep's directory).", file=sys.stderr)
        return 2
    cluster = command.cluster
    try:
        sweep = get_sweep(command.name)
        if cluster.submits:
            from ..cluster import _submitit

            _submitit()  # says what to install before anything else is done
    except UnknownNameError as error:
        print(f"zoo sweep: {error.args[0]}", file=sys.stderr)
        return 2
    except ClusterError as error:
        print(f"zoo sweep: {error}", file=sys.stderr)
        return 2
    try:
        failures = run_sweep(
            sweep,
            command.name,
            command.out,
            seeds=command.seeds,
            steps=command.steps,
            only=command.only,
            progress=command.progress,
            jobs=command.jobs,
            reuse=command.reuse,
            keep=command.keep,
            cluster=cluster,
        )
    except ValueError as error:
        print(f"zoo sweep: {error}", file=sys.stderr)
        return 2
    except RunInterrupted as error:
        print(f"zoo sweep: {error} Run the same zoo sweep command to go on.", file=sys.stderr)
        return 130
    if cluster.submits:
        from ..cluster import print_statuses, statuses
        from ..sweeps import plan

        items = [
            (r.label, s, c)
            for r, s, c in plan(sweep, command.seeds, command.steps, command.keep)
            if not command.only or r.label in command.only
        ]
        found = statuses(command.out, items)
        print_statuses(found)
        if all(s.state == "finished" for s in found):
            print(f"sweep {command.name}: report in {command.out}")
        else:
            print(
                f"sweep {command.name}: submitted; zoo sweep {command.out} --status shows "
                "where each run is, the same command again resubmits failed runs and writes "
                "the report once all are finished"
            )
        for failure in failures:
            print(f"  failed: {failure}", file=sys.stderr)
        return 1 if failures else 0
    print(f"sweep {command.name}: report in {command.out}")
    for failure in failures:
        print(f"  failed: {failure}", file=sys.stderr)
    return 1 if failures else 0


def _status(command: SweepCommand) -> int:
    """`zoo sweep DIR --status` (or `zoo sweep NAME --out DIR --status`)."""
    import json

    from ..cluster import ClusterError, print_statuses, statuses
    from ..run import config_from_dict
    from ..sweeps import SWEEP_FILE, Sweep, SweepRun, plan

    out = command.out if command.out is not None else Path(command.name)
    record_path = out / SWEEP_FILE
    if not record_path.is_file():
        print(
            f"zoo sweep --status: {out} holds no sweep ({SWEEP_FILE}); pass the sweep's "
            "directory, zoo sweep DIR --status.",
            file=sys.stderr,
        )
        return 2
    record = json.loads(record_path.read_text())
    try:  # the runs as the sweep's record holds them (no need of the experiment's plugin)
        sweep = Sweep(
            record.get("description", ""),
            tuple(
                SweepRun(r["label"], config_from_dict(r["config"]), r.get("facets", {}))
                for r in record["runs"]
            ),
            metrics=tuple(record.get("metrics", ())),
            x=record.get("x", ""),
            seeds=tuple(record["seeds"]),
            seed_task=record.get("seed_task", False),
        )
    except Exception as error:  # a record of another version
        print(f"zoo sweep --status: {record_path} cannot be read ({error}).", file=sys.stderr)
        return 2
    seeds = command.seeds if command.seeds is not None else tuple(record["seeds"])
    steps = command.steps if command.steps is not None else record.get("steps")
    items = [
        (r.label, s, c)
        for r, s, c in plan(sweep, seeds, steps)
        if not command.only or r.label in command.only
    ]
    try:
        print_statuses(statuses(out, items))
    except ClusterError as error:
        print(f"zoo sweep --status: {error}", file=sys.stderr)
        return 2
    return 0
