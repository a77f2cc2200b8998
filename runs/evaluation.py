"""Evaluating a saved run: what `zoo eval DIR` does, as a library function.

    import runs
    result = runs.evaluate("results/my-run")          # also writes results/my-run/eval.json
    result.pools["ood"]["accuracy"]

`runs.evaluate(model, task, config)` (a model in hand rather than a run directory) is
`runs.run.evaluate`, as before.
"""

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import plugins

from .lock import atomic_write_text


class EvaluationError(ValueError):
    """An evaluation setting that cannot work (a count out of range, an unknown task, a task
    whose data the model cannot read); the message says what to change."""


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """The result of evaluating a saved run (`evaluate_run`), as written to its `eval.json`."""

    step: int
    """The step of the checkpoint evaluated."""
    task: str
    """The task evaluated on (the run's, or the one given for transfer)."""
    inner_steps: int | None
    """The inner steps at evaluation, if given (`None`: the run's)."""
    tasks: int
    """Tasks (or episodes) per pool."""
    pools: dict[str, dict[str, float]]
    """Metrics per evaluation pool (and the task's fixed test episodes, `test_episodes`)."""
    identification: dict[str, float]
    """Identification metrics of a modular model (empty for others)."""
    path: Path
    """The file it is written to: the run's `eval.json` (`eval-TASK.json` for another task)."""
    run_tasks: int
    """The run's own tasks per pool (names the file an earlier evaluation is kept in)."""
    written: bool = False
    """Whether it was written to `path`."""
    kept: Path | None = None
    """Where an earlier, different evaluation in `path` was moved to, if there was one."""

    def write(self) -> "Evaluation":
        """Write it to `path` (an earlier, different evaluation there is moved to a name of
        its own, `kept`); raises `OSError` if the directory cannot take the file."""
        report = self.to_dict()
        kept = _keep_earlier(self.path, report, self.run_tasks)
        atomic_write_text(self.path, json.dumps(report, indent=2) + "\n")
        return dataclasses.replace(self, written=True, kept=kept)

    def to_dict(self) -> dict[str, Any]:
        """The contents of the `eval.json` written."""
        return {
            "step": self.step,
            "task": self.task,
            "inner_steps": self.inner_steps,
            "tasks": self.tasks,
            "pools": self.pools,
            "identification": self.identification,
        }


def evaluate_run(
    directory: Path | str,
    *,
    step: int | None = None,
    tasks: int | None = None,
    inner_steps: int | None = None,
    task: str | None = None,
    write: bool = True,
    on_start: Callable[[int, str], None] | None = None,
) -> Evaluation:
    """Evaluate the run saved in `directory` on every evaluation pool of its task, from its
    eval key (same run, same numbers).

    **Arguments:**

    - `step`: the checkpoint to evaluate (default: the newest).
    - `tasks`: tasks per pool (default: the run's `eval.tasks`).
    - `inner_steps`: inner steps at evaluation, for algorithms with an inner loop.
    - `task`: a registered task to evaluate on instead, with its default settings (zero-shot
      transfer, e.g. an agent trained on doorkey-5x5 on doorkey-8x8); its data must look like
      the run's task's to the model (the same `io`). Written to `eval-TASK.json`.
    - `write`: write `eval.json` (an earlier, different evaluation there is kept under a name
      of its own, e.g. `eval-step2.json`).
    - `on_start`: called with the step evaluated and what the evaluation does, in words,
      before it starts.

    **Raises:** `runs.RunError` if the run cannot be loaded; `EvaluationError` if the task is
    unknown or its data do not fit the model, or a setting is out of range; all before anything
    is compiled.
    """
    import equinox as eqx

    from .run import build_task, describe_evaluation, evaluate_all, load

    for name, value, least in (("inner_steps", inner_steps, 0), ("tasks", tasks, 1)):
        if value is not None and value < least:
            raise EvaluationError(f"{name} must be >= {least}, got {value}.")
    directory = Path(directory)
    model, config, step = load(directory, step=step)
    run_tasks = config.eval.tasks
    if tasks is not None:
        config = dataclasses.replace(config, eval=dataclasses.replace(config.eval, tasks=tasks))
    output = directory / "eval.json"
    if task is not None:
        try:
            spec = plugins.task_spec(task)
        except plugins.PluginError as error:
            raise EvaluationError(str(error)) from None
        trained_io = eqx.filter_eval_shape(build_task, config).io
        config = dataclasses.replace(config, task=spec.config(), task_name=task, task_source=None)
        other_io = eqx.filter_eval_shape(build_task, config).io
        if other_io != trained_io:
            raise EvaluationError(
                f"{task}'s data do not look like those the run was trained on, so its model "
                f"cannot read them:\n  trained on {trained_io}\n  {task}: {other_io}"
            )
        output = directory / f"eval-{task.replace(':', '-')}.json"
    built = build_task(config)
    if on_start is not None:
        on_start(step, describe_evaluation(built, config))
    results = evaluate_all(model, built, config, inner_steps=inner_steps)
    found = results.pop("identification", {})
    result = Evaluation(
        step, config.task_name, inner_steps, config.eval.tasks, results, found, output, run_tasks
    )
    return result.write() if write else result


def _keep_earlier(output: Path, report: dict, run_tasks: int) -> Path | None:
    """If `output` holds an evaluation other than `report`, move it to a name of its own (its
    step, and its settings other than the run's: `eval-step2.json`,
    `eval-step4-inner50-tasks500.json`; a number added if that is taken) and return that path;
    None if there was nothing to keep."""
    if not output.exists():
        return None
    try:
        earlier = json.loads(output.read_text())
    except ValueError:
        earlier = None
    if earlier == report:  # the same numbers: nothing is lost
        return None
    parts = [output.stem]
    if isinstance(earlier, dict):
        for key, tag, usual in (
            ("step", "step", None),
            ("inner_steps", "inner", None),
            ("tasks", "tasks", run_tasks),
        ):
            if earlier.get(key) not in (None, usual):
                parts.append(f"{tag}{earlier[key]}")
    if len(parts) == 1:  # unreadable, or no step: a name of its own all the same
        parts.append("earlier")
    kept, n = output.with_name("-".join(parts) + output.suffix), 2
    while kept.exists():
        if kept.read_bytes() == output.read_bytes():  # kept already
            return kept
        kept, n = output.with_name(f"{'-'.join(parts)}-{n}{output.suffix}"), n + 1
    output.rename(kept)
    return kept


def evaluate(source: Any, *args: Any, **kwargs: Any) -> Any:
    """`evaluate(directory, ...)`: evaluate a saved run (`evaluate_run`, what `zoo eval`
    does; returns an `Evaluation`). `evaluate(model, task, config, ...)`: query metrics of a
    model in hand on every evaluation pool of `task` (`runs.run.evaluate`; returns
    `{pool: {metric: value}}`)."""
    if isinstance(source, str | Path):
        return evaluate_run(source, *args, **kwargs)
    from .run import evaluate as evaluate_model

    return evaluate_model(source, *args, **kwargs)


__all__ = ["Evaluation", "EvaluationError", "evaluate", "evaluate_run"]
