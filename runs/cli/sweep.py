"""`zoo sweep NAME --out DIR`: run (or resume) a named sweep of an experiment plugin."""

import dataclasses
import sys
from pathlib import Path
from typing import Annotated

import tyro


@dataclasses.dataclass(frozen=True)
class SweepCommand:
    """Run every run of a named sweep for every seed, each in DIR/<label>/seed_<k>. Finished
    runs are skipped and interrupted ones resumed: run the same command again to continue.
    Writes the report (zoo report DIR) at the end."""

    name: Annotated[str, tyro.conf.Positional]
    """The sweep (zoo sweeps lists them)."""
    out: Path
    """Directory of the sweep's runs and report."""
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


def main(argv: list[str]) -> int:
    """Run `zoo sweep` with `argv`; the exit status."""
    from ..experiments import UnknownNameError, get_sweep
    from ..run import RunInterrupted
    from ..sweeps import run_sweep

    command = tyro.cli(SweepCommand, args=argv, prog="zoo sweep")
    try:
        sweep = get_sweep(command.name)
    except UnknownNameError as error:
        print(f"zoo sweep: {error.args[0]}", file=sys.stderr)
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
        )
    except ValueError as error:
        print(f"zoo sweep: {error}", file=sys.stderr)
        return 2
    except RunInterrupted as error:
        print(f"zoo sweep: {error} Run the same zoo sweep command to go on.", file=sys.stderr)
        return 130
    print(f"sweep {command.name}: report in {command.out}")
    for failure in failures:
        print(f"  failed: {failure}", file=sys.stderr)
    return 1 if failures else 0
