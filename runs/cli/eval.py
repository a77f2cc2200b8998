"""`zoo eval DIR`: evaluate a saved run (`runs.evaluate_run`) and print the table."""

import dataclasses
import sys
from pathlib import Path
from typing import Annotated

import tyro

from ._common import (
    format_metrics,
)


@dataclasses.dataclass(frozen=True)
class EvalCommand:
    """Evaluate a saved run on every evaluation pool of its task; writes DIR/eval.json (an
    earlier evaluation there with other results is kept under a name of its own, e.g.
    DIR/eval-step2.json)."""

    directory: Annotated[Path, tyro.conf.Positional]
    """The run directory, a directory `zoo export` wrote, `pretrained:NAME` (`zoo pretrained`
    lists them) or `hf:OWNER/REPO[@REVISION]` (an export on the Hugging Face Hub; the `hub`
    extra); of the last two the evaluation is printed, not written."""
    inner_steps: int | None = None
    """Inner steps at evaluation (default: the run's)."""
    tasks: int | None = None
    """Tasks per pool (default: the run's eval.tasks)."""
    step: int | None = None
    """Evaluate the checkpoint of this step (default: the newest)."""
    task: str | None = None
    """Evaluate on this registered task instead, with its default settings (zero-shot
    transfer, e.g. an agent trained on doorkey-5x5 on doorkey-8x8); its data must look like
    the run's task's to the model (same `io`). Writes DIR/eval-TASK.json."""
    progress: bool = True
    """Say on stderr what the evaluation does before it starts."""
    activity: int = 0
    """Also record which of an agent's modules are active at each step of this many episodes
    (a modular agent such as rims-agent): DIR/activity.png and DIR/activity.json."""


def main(argv: list[str]) -> int:
    """Run `zoo eval` with `argv`; the exit status."""
    from ..evaluation import EvaluationError, evaluate_run
    from ..run import RunError, build_task, load

    command = tyro.cli(EvalCommand, args=argv, prog="zoo eval")
    for flag, value, least in (
        ("--step", command.step, 0),
        ("--activity", command.activity, 0),
        ("--tasks", command.tasks, 1),
        ("--inner-steps", command.inner_steps, 0),
    ):
        if value is not None and value < least:
            print(f"zoo eval: {flag} must be >= {least}, got {value}.", file=sys.stderr)
            return 2

    from ..progress import Ticker

    shipped = str(command.directory).startswith(("pretrained:", "hf:"))
    if shipped and command.activity > 0:
        print(
            "zoo eval: --activity writes into the run directory; export the pretrained model "
            "first (its directory: zoo pretrained) or evaluate a copy.",
            file=sys.stderr,
        )
        return 2

    try:
        with Ticker("zoo eval", enabled=command.progress) as ticker:
            ticker.phase(f"loading {command.directory}")
            result = evaluate_run(
                command.directory,
                step=command.step,
                tasks=command.tasks,
                inner_steps=command.inner_steps,
                task=command.task,
                write=False,
                on_start=lambda step, words: ticker.phase(
                    f"step {step} of {command.directory}: {words}"
                ),
            )
    except EvaluationError as error:
        print(f"zoo eval: {error}", file=sys.stderr)
        return 2
    except RunError as error:
        print(f"zoo eval: {error}", file=sys.stderr)
        return 1
    print(format_metrics(result.step, result.pools, result.identification))
    if shipped:  # a package's files are not the place for it
        return 0
    try:  # after printing: a directory that cannot take the file loses nothing shown
        result = result.write()
    except OSError as error:
        print(f"zoo eval: could not write {result.path} ({error}).", file=sys.stderr)
        return 1
    kept = result.kept
    print(
        f"wrote {result.path}"
        + (f" (the earlier evaluation there is kept as {kept.name})" if kept else "")
    )
    if command.activity > 0:
        import jax.random as jr

        model, config, step = load(command.directory, step=result.step)
        task = build_task(config)

        from tasks import AbstractEnvironment

        from ..activity import write_activity

        if not isinstance(task, AbstractEnvironment):
            print(
                "zoo eval: --activity records an agent acting in an environment.", file=sys.stderr
            )
            return 2
        try:
            summary = write_activity(
                command.directory,
                task,
                model,
                jr.key(config.run.seed),
                command.activity,
                f"{config.model_name} on {config.task_name}, step {step}: active modules",
            )
        except ValueError as error:
            print(f"zoo eval: {error}", file=sys.stderr)
            return 2
        fractions = " ".join(f"{f:.2f}" for f in summary["active_fraction"])
        print(f"active fraction per module: {fractions} -> {command.directory / 'activity.png'}")
    return 0
