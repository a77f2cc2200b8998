"""`zoo report DIR`: collect a sweep's runs into tables and a figure."""

import dataclasses
import json
import sys
from pathlib import Path
from typing import Annotated

import tyro


@dataclasses.dataclass(frozen=True)
class ReportCommand:
    """Collect the runs of a sweep directory into results.csv (one row per run), summary.csv and
    summary.json (mean, std and count over seeds, beside the paper's values) and figure.png."""

    directory: Annotated[Path, tyro.conf.Positional]
    """The sweep directory (the --out of zoo sweep)."""
    export: Path | None = None
    """Also copy the finished runs, without their checkpoints, and the sweep's record into this
    directory (merging with what it holds) and report it: a small directory to commit, from
    which `zoo report` rebuilds every number."""
    step: int | None = None
    """Report every run at this outer step (its evaluation there) rather than at its last:
    compares runs trained to different lengths at the same point. Recorded in the sweep's
    directory, so later reports use it too; `--step 0` goes back to each run's last step."""
    best: str | None = None
    """Report each run with its evaluation of lowest `pool.metric` (e.g. `test.loss`, the
    in-distribution validation loss by which some authors keep a model;
    `max:pool.metric` for highest) rather than its last; with `--step`, the best up to that
    step. Recorded in the sweep's directory as `--step` is; `--best last` goes back to the last
    model."""


def _set_best(directory: Path, best: str) -> str | None:
    """Apply `zoo report --best` to the sweep in `directory`; the error, if `best` is not
    `last`, `pool.metric` or `max:pool.metric` naming a metric its runs were evaluated on."""
    from ..sweeps import set_report_best

    metric = None if best == "last" else best.removeprefix("max:")
    pool, _, name = (metric or "").partition(".")
    if metric is not None and not (pool and name):
        return (
            f"--best must be `last`, `pool.metric` or `max:pool.metric` (e.g. test.loss), "
            f"got {best!r}."
        )
    try:
        set_report_best(directory, metric, maximize=best.startswith("max:"))
    except ValueError as error:
        return f"--best {best}: {error}"
    return None


def main(argv: list[str]) -> int:
    """Run `zoo report` with `argv`; the exit status."""
    from ..sweeps import SWEEP_FILE, export, report, reported_model, set_report_step

    command = tyro.cli(ReportCommand, args=argv, prog="zoo report")
    if not (command.directory / SWEEP_FILE).is_file():
        print(
            f"zoo report: {command.directory} holds no sweep ({SWEEP_FILE} is missing); "
            "pass the --out directory of a zoo sweep.",
            file=sys.stderr,
        )
        return 1
    if command.step is not None:
        if command.step < 0:
            print(f"zoo report: --step must be 0 or more, got {command.step}.", file=sys.stderr)
            return 1
        set_report_step(command.directory, command.step or None)
    if command.best is not None:
        error = _set_best(command.directory, command.best)
        if error:
            print(f"zoo report: {error}", file=sys.stderr)
            return 1
    if command.export is not None:
        try:
            copied = export(command.directory, command.export)
        except ValueError as error:
            print(f"zoo report: {error}", file=sys.stderr)
            return 1
        print(f"exported {len(copied)} finished runs to {command.export}")
        report(command.directory)
        command = dataclasses.replace(command, directory=command.export)
    summary = report(command.directory)["summary"]
    for entry in summary:
        paper = f"   (paper {entry['paper']})" if entry["paper"] != "" else ""
        print(
            f"{entry['label']:<36} {entry['metric']:<28} "
            f"{entry['mean']:.4f} +- {entry['std']:.4f} (n={entry['n']}){paper}"
        )
    record = json.loads((command.directory / SWEEP_FILE).read_text())
    print(
        f"wrote results.csv, summary.csv, summary.json and figure.png in {command.directory} "
        f"({reported_model(record)})"
    )
    return 0
