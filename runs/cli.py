"""The `zoo` command line.

`zoo train TASK MODEL [flags]` is built by tyro at run time from the plugin registry: every
installed task and model is a subcommand with its own typed flags. `zoo eval DIR` evaluates a
saved run, `zoo list` lists the plugins, `zoo info MODEL` shows a model's parameter counts,
`zoo presets` shows the paper presets, `zoo sweep` / `zoo report` run and summarize grids of
runs, `zoo show TASK` draws a few episodes of a task.
"""

import dataclasses
import difflib
import json
import os
import sys
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro

import plugins

from .config import (
    DistributedConfig,
    DistributedError,
    EvalConfig,
    RunConfig,
    TrainConfig,
)

USAGE = """usage: zoo COMMAND ...   |   zoo --version

commands:
  train TASK MODEL [flags]   train MODEL on TASK (zoo train --help lists tasks and models);
                             --algorithm NAME picks the algorithm (default: from the kinds)
  train --preset NAME        meta-train a paper setting (zoo presets lists them; flags override)
  eval DIR                   evaluate a saved run on every evaluation pool of its task
  list                       list the installed models and tasks with their distributions
  info MODEL [--task TASK]   a model's description, settings and parameter counts on a task
  presets                    list the named paper presets
  sweep NAME --out DIR       run a grid of runs (zoo sweeps lists them); again to resume
  report DIR                 collect a sweep's runs into results.csv, summary.csv, figure.png
  sweeps                     list the named sweeps
  scan SPLIT [--out DIR]     write a SCAN split (generated) in SCAN's own file format
  show TASK [flags]          draw a few episodes of TASK as a PNG (--pool, --episodes, --seed,
                             --out, --task.* as in zoo train; the grid worlds draw themselves)
"""


def train_command_type(
    task_spec: Any, model_spec: Any, base: TrainConfig | None = None, algorithm: Any = None
) -> type:
    """The dataclass tyro turns into `zoo train TASK MODEL`: the two plugins' configs, the
    algorithm's (`algorithm`, an `AlgorithmSpec`; its fields are the `--algorithm.*` flags) and
    the engine's, with `base`'s values (a preset) or the defaults as defaults."""
    base = base or TrainConfig(task=task_spec.config(), model=model_spec.config())
    algorithm_fields = []
    if algorithm is not None:
        default = base.algorithm if isinstance(base.algorithm, algorithm.config) else None
        algorithm_fields.append(
            (
                "algorithm",
                Annotated[
                    algorithm.config,
                    tyro.conf.arg(help=f"{algorithm.name}: {algorithm.description}"),
                ],
                default if default is not None else algorithm.config(),
            )
        )
    fields = [
        (
            "out",
            Annotated[
                Path, tyro.conf.arg(help="Run directory to write (new or empty, unless --resume).")
            ],
        ),
        (
            "resume",
            Annotated[
                bool, tyro.conf.arg(help="Continue the run in --out from its newest checkpoint.")
            ],
            False,
        ),
        (
            "allow_changes",
            Annotated[
                bool,
                tyro.conf.arg(
                    help="With --resume: accept changed optimizer settings (learning rates, "
                    "weight decays, clipping, eps), recorded in the run's history.jsonl."
                ),
            ],
            False,
        ),
        ("progress", Annotated[bool, tyro.conf.arg(help="Show a progress bar.")], True),
        ("cluster", Annotated[DistributedConfig, tyro.conf.OmitArgPrefixes], DistributedConfig()),
        ("run", Annotated[RunConfig, tyro.conf.OmitArgPrefixes], base.run),
        ("task", Annotated[task_spec.config, tyro.conf.arg(help=task_spec.description)], base.task),
        (
            "model",
            Annotated[model_spec.config, tyro.conf.arg(help=model_spec.description)],
            base.model,
        ),
        *algorithm_fields,
        ("eval", EvalConfig, base.eval),
    ]
    specs = []
    for name, typ, *default in fields:
        spec = dataclasses.field(default=default[0]) if default else dataclasses.field()
        specs.append((name, typ, spec))
    return dataclasses.make_dataclass("train", specs, frozen=True)


def _train_usage() -> str:
    lines = [
        "usage: zoo train TASK MODEL [flags]   |   zoo train --preset NAME [flags]",
        "",
        "tasks:",
    ]
    lines += [f"  {e.name:<24} {e.spec.description}" for e in plugins.list_tasks()]
    lines += ["", "models:"]
    lines += [f"  {e.name:<24} {e.spec.description}" for e in plugins.list_models()]
    lines += [
        "",
        "algorithms (--algorithm NAME; default: the one of highest preference that accepts "
        "the kinds):",
    ]
    lines += [
        f"  {e.name:<24} {e.spec.description} (preference {e.spec.preference})"
        for e in plugins.entries("algorithms")
    ]
    lines += ["", "hooks (--hooks NAME ...: loggers and other callbacks of the training loop):"]
    lines += [f"  {e.name:<24} {e.spec.description}" for e in plugins.entries("hooks")]
    lines += ["", "`zoo train TASK MODEL --help` lists the flags; `zoo presets` the presets."]
    return "\n".join(lines)


def _pop_option(argv: list[str], option: str) -> tuple[str | None, list[str]]:
    """The value of `--option NAME` (or `--option=NAME`) in `argv`, and `argv` without it."""
    for i, arg in enumerate(argv):
        if arg == option and i + 1 < len(argv):
            return argv[i + 1], argv[:i] + argv[i + 2 :]
        if arg.startswith(f"{option}="):
            return arg.split("=", 1)[1], argv[:i] + argv[i + 1 :]
    return None, argv


def _pop_list(argv: list[str], option: str) -> tuple[list[str], list[str]]:
    """The values of `--option A B ...` (up to the next flag) in `argv`, and `argv` without
    them."""
    if option not in argv:
        return [], argv
    i = argv.index(option)
    j = i + 1
    while j < len(argv) and not argv[j].startswith("-"):
        j += 1
    return argv[i + 1 : j], argv[:i] + argv[j:]


def make_hooks(names: list[str], out: Path) -> list[Any]:
    """The hooks (`zoo.hooks` plugins) called `names`, each built with its default settings
    for the run directory `out`.

    **Raises:** `UsageError` naming the installed hooks if one is unknown or cannot be built."""
    hooks = []
    for name in names:
        try:
            spec = plugins.hook_spec(name)
            hooks.append(spec.load()(spec.config(), out=out))
        except plugins.PluginError as error:
            raise UsageError(f"zoo train: --hooks: {error}") from None
        except ImportError as error:
            raise UsageError(f"zoo train: --hooks {name}: {error}") from None
    return hooks


def _pop_preset(argv: list[str]) -> tuple[str | None, list[str]]:
    return _pop_option(argv, "--preset")


def default_algorithm(task_name: str, model_name: str, name: str = "") -> str:
    """The algorithm `zoo train TASK MODEL` uses: the one `name`d, checked against the kinds of
    the task and model (built abstractly from their default configs), or with no name the one
    of highest preference that accepts them.

    **Raises:** `UsageError` if none fits, or the one named does not."""
    import equinox as eqx

    from . import algorithms
    from .run import build, resolve

    config = resolve(
        TrainConfig(
            task=plugins.task_spec(task_name).config(),
            model=plugins.model_spec(model_name).config(),
            task_name=task_name,
            model_name=model_name,
        )
    )
    task, model = eqx.filter_eval_shape(build, config)
    try:
        return algorithms.choose(task, model, name).name
    except algorithms.AlgorithmError as error:
        raise UsageError(str(error)) from None


class UsageError(Exception):
    """The command line names no task and model, or unknown ones."""


class HelpRequested(UsageError):
    """`zoo train --help` (with no task and model named): the message is the usage."""


def parse_train(argv: list[str]) -> tuple[TrainConfig, Any]:
    """Parse `zoo train` arguments into a `TrainConfig` and the parsed command."""
    from . import algorithms
    from .experiments import UnknownNameError, get_preset

    preset_name, argv = _pop_preset(argv)
    algorithm_name, argv = _pop_option(argv, "--algorithm")
    base = None
    if preset_name is not None:
        try:
            base = get_preset(preset_name)
        except UnknownNameError as error:
            raise UsageError(f"zoo train: {error.args[0]}") from None
        task_name, model_name = base.task_name, base.model_name
    else:
        names = []
        while argv and not argv[0].startswith("-") and len(names) < 2:
            names.append(argv.pop(0))
        if len(names) < 2:
            wanted = "-h" in argv or "--help" in argv
            raise (HelpRequested if wanted else UsageError)(_train_usage())
        task_name, model_name = names
    try:
        task_spec, model_spec = plugins.task_spec(task_name), plugins.model_spec(model_name)
    except plugins.PluginError as error:
        raise UsageError(str(error)) from None
    if algorithm_name is None and base is not None:
        # The preset's algorithm: the one it names, or the one whose config class it holds.
        algorithm_name = base.algorithm_name or next(
            (e.name for e in algorithms.specs() if type(base.algorithm) is e.config), None
        )
    # Before the flags are parsed: they depend on the algorithm.
    algorithm_name = default_algorithm(task_name, model_name, algorithm_name or "")
    try:
        algorithm = algorithms.get(algorithm_name)
    except algorithms.AlgorithmError as error:
        raise UsageError(str(error)) from None
    argv = _legacy_flags(argv, algorithm)
    command_type = train_command_type(task_spec, model_spec, base, algorithm)
    default = None
    if base is not None and preset_name is not None:
        default = command_type(out=Path("results") / preset_name.replace("/", "-"))  # pyright: ignore[reportCallIssue]
    command: Any = tyro.cli(
        command_type,
        args=argv,
        prog=f"zoo train {task_name} {model_name}"
        if preset_name is None
        else f"zoo train --preset {preset_name}",
        default=default,
        description=f"Meta-train {model_name} on {task_name}.",
    )
    config = TrainConfig(
        task=command.task,
        model=command.model,
        task_name=task_name,
        model_name=model_name,
        algorithm_name=algorithm.name,
        algorithm=command.algorithm,
        eval=command.eval,
        run=command.run,
    )
    return config, command


_LEGACY_SECTIONS = ("inner", "outer")
"""Sections of `zoo train` before 0.2 (`--inner.*`, `--outer.*`), now the bilevel and
in-context algorithms' own (`--algorithm.inner.*`, `--algorithm.outer.*`)."""


def _legacy_flags(argv: list[str], algorithm: Any) -> list[str]:
    """`argv` with the flags of 0.1's `--inner.*` and `--outer.*` sections renamed to the
    algorithm's `--algorithm.inner.*` and `--algorithm.outer.*`, which they are aliases of.

    **Raises:** `UsageError` naming the algorithm's own flags if it has no such section (e.g.
    `--outer.lr` for PPO, whose optimizer is `--algorithm.lr`)."""
    fields = {f.name for f in dataclasses.fields(algorithm.config)}
    renamed = []
    for arg in argv:
        section = arg[2:].split(".", 1)[0] if arg.startswith("--") and "." in arg else ""
        if section in _LEGACY_SECTIONS:
            if section not in fields:
                raise UsageError(
                    f"zoo train: {arg.split('=', 1)[0]} is a setting of algorithms with an "
                    f"{section} loop (--algorithm.{section}.*, e.g. bilevel's); algorithm "
                    f"{algorithm.name!r} has none. `zoo train ... --help` lists its "
                    "--algorithm.* flags."
                )
            arg = f"--algorithm.{arg[2:]}"
        renamed.append(arg)
    return renamed


def _train(argv: list[str]) -> int:
    from .run import RunError, RunInterrupted, TrainingDiverged, train

    hook_names, argv = _pop_list(argv, "--hooks")
    try:
        config, command = parse_train(argv)
    except HelpRequested as usage:
        print(usage)
        return 0
    except UsageError as error:
        print(error, file=sys.stderr)
        return 2
    except ValueError as error:  # a config's own validation
        print(f"zoo train: {error}", file=sys.stderr)
        return 2
    if command.allow_changes and not command.resume:
        print("zoo train: --allow-changes goes with --resume.", file=sys.stderr)
        return 2
    try:
        hooks = make_hooks(hook_names, command.out)
    except UsageError as error:
        print(error, file=sys.stderr)
        return 2
    from .distributed import initialize

    try:  # before any JAX computation
        initialize(command.cluster)
    except DistributedError as error:
        print(f"zoo train: {error}", file=sys.stderr)
        return 2
    try:
        out = train(
            config,
            command.out,
            resume=command.resume,
            progress=command.progress,
            allow_changes=command.allow_changes,
            hooks=hooks,
        )
    except (RunError, TrainingDiverged) as error:
        print(f"zoo train: {error}", file=sys.stderr)
        return 1
    except RunInterrupted as error:
        print(f"zoo train: {error}", file=sys.stderr)
        return 130
    if command.cluster.distributed:
        import jax

        if jax.process_index() != 0:  # process 0 writes the run and prints its metrics
            print(f"process {jax.process_index()} of {jax.process_count()} done")
            return 0
    last = _last_evaluation(out)
    if last is not None:
        print(format_metrics(*last))
    print(f"run saved in {out}")
    return 0


def _last_evaluation(directory: Path) -> tuple[int, dict, dict] | None:
    """The step, metrics per pool and identification metrics of the last evaluation in a run's
    metrics.jsonl (None if it holds none)."""
    from .run import read_metrics

    rows = [row for row in read_metrics(directory) if row["pool"] != "train"]
    if not rows:
        return None
    step = max(row["step"] for row in rows)
    pools = {
        row["pool"]: {k: v for k, v in row.items() if k not in ("step", "pool")}
        for row in rows
        if row["step"] == step
    }
    return step, pools, pools.pop("identification", {})


def format_metrics(step: int, pools: dict[str, dict], found: dict[str, float]) -> str:
    """An evaluation as a table: a row per pool, a column per metric, then a row per
    identification metric (`zoo eval`, and `zoo train` at its end)."""
    names = sorted({k for values in pools.values() for k in values})
    first = max([10, *(len(n) + 2 for n in [*pools, *found])])
    widths = [max(12, len(n) + 2) for n in names]
    lines = [
        f"{'pool':<{first}}"
        + "".join(f"{n:>{w}}" for n, w in zip(names, widths, strict=True))
        + f"   (step {step})"
    ]
    for pool, values in pools.items():
        cells = (
            f"{values.get(n, float('nan')):>{w}.4f}" for n, w in zip(names, widths, strict=True)
        )
        lines.append(f"{pool:<{first}}" + "".join(cells))
    lines += [f"{name:<{first}}{value:>12.4f}" for name, value in found.items()]
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class EvalCommand:
    """Evaluate a saved run on every evaluation pool of its task; writes DIR/eval.json (an
    earlier evaluation there with other results is kept under a name of its own, e.g.
    DIR/eval-step2.json)."""

    directory: Annotated[Path, tyro.conf.Positional]
    """The run directory."""
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


def _eval(argv: list[str]) -> int:
    from .evaluation import EvaluationError, evaluate_run
    from .run import RunError, build_task, load

    command = tyro.cli(EvalCommand, args=argv, prog="zoo eval")
    for flag, value, least in (("--step", command.step, 0), ("--activity", command.activity, 0)):
        if value is not None and value < least:
            print(f"zoo eval: {flag} must be >= {least}, got {value}.", file=sys.stderr)
            return 2

    from .progress import Ticker

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

        from .activity import write_activity

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


def _list(argv: list[str]) -> int:
    del argv
    print(plugins.format_listing())
    return 0


def _presets(argv: list[str]) -> int:
    del argv
    from .experiments import presets

    found = presets()
    if not found:
        print("no presets: no experiment plugin (zoo.experiments) is installed")
        return 0
    width = max(map(len, found))
    for name, preset in found.items():
        print(f"{name:<{width}}  {preset.description}")
    return 0


@dataclasses.dataclass(frozen=True)
class InfoCommand:
    """A model's description, default settings and parameter counts on a task."""

    model: Annotated[str | None, tyro.conf.Positional] = None
    """Registered model name (or give --preset)."""
    task: str = "hyperteacher"
    """Registered task whose input and output sizes the counts are for."""
    preset: str | None = None
    """Show the model and task of this preset instead."""


def _info(argv: list[str]) -> int:
    import equinox as eqx

    from zoo import param_counts

    from .experiments import UnknownNameError, get_preset, preset
    from .run import RunError, build, resolve

    command = tyro.cli(InfoCommand, args=argv, prog="zoo info")
    try:
        if command.preset is not None:
            config = get_preset(command.preset)
        elif command.model is None:
            print("zoo info: name a model (zoo list shows them) or pass --preset.", file=sys.stderr)
            return 2
        else:
            task_spec = plugins.task_spec(command.task)
            model_spec = plugins.model_spec(command.model)
            config = resolve(
                TrainConfig(
                    task=task_spec.config(),
                    model=model_spec.config(),
                    task_name=command.task,
                    model_name=command.model,
                )
            )
        _, model = eqx.filter_eval_shape(build, config)
    except (plugins.PluginError, UnknownNameError, RunError) as error:
        print(f"zoo info: {error.args[0]}", file=sys.stderr)
        return 2
    counts = param_counts(model)
    spec = plugins.model_spec(config.model_name)
    print(f"{config.model_name}: {spec.description}")
    print(f"  settings:  {config.model}")
    print(f"  on task:   {config.task_name} ({config.task})")
    print(f"  parameters: {counts['meta']:,} meta, {counts['fast']:,} fast (adapted per task)")
    authors = preset(command.preset).authors_counts if command.preset is not None else None
    if authors is not None:
        same = (counts["meta"], counts["fast"]) == authors
        plugin = command.preset.partition("/")[0]  # pyright: ignore[reportOptionalMemberAccess]
        differ = f"they differ: see the preset in the experiment plugin {plugin!r}"
        print(
            f"  authors':   {authors[0]:,} meta, {authors[1]:,} fast "
            f"({'equal' if same else differ})"
        )
    return 0


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


def _sweep(argv: list[str]) -> int:
    from .experiments import UnknownNameError, get_sweep
    from .run import RunInterrupted
    from .sweeps import run_sweep

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
    from .sweeps import set_report_best

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


def _report(argv: list[str]) -> int:
    from .sweeps import SWEEP_FILE, export, report, reported_model, set_report_step

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


def _sweeps(argv: list[str]) -> int:
    del argv
    from .experiments import sweeps

    found = sweeps()
    if not found:
        print("no sweeps: no experiment plugin (zoo.experiments) is installed")
        return 0
    width = max(map(len, found))
    for name, sweep in found.items():
        runs = f"{len(sweep.runs)} run{'s' * (len(sweep.runs) > 1)}"
        print(f"{name:<{width}}  {runs} x {len(sweep.seeds)} seeds  {sweep.description}")
    return 0


@dataclasses.dataclass(frozen=True)
class ScanCommand:
    """Write a standard SCAN split, generated by our grammar (tasks/scan.py), in SCAN's own file
    format: DIR/tasks_train_<split>.txt and DIR/tasks_test_<split>.txt."""

    split: Annotated[
        Literal["addprim_jump", "length", "template_around_right"], tyro.conf.Positional
    ]
    """The split."""
    out: Path = Path(".")
    """Directory to write the two files to (created if needed)."""


def _scan(argv: list[str]) -> int:
    from tasks import scan

    command = tyro.cli(ScanCommand, args=argv, prog="zoo scan")
    for path in scan.write_split(command.split, command.out):
        lines = path.read_text().count("\n")
        print(f"wrote {path} ({lines:,} commands)")
    return 0


def show_command_type(task_spec: Any) -> type:
    """The dataclass tyro turns into `zoo show TASK`: the task's config (the `--task.*` flags,
    as in `zoo train`) and the picture's settings."""
    fields = [
        ("pool", Annotated[str, tyro.conf.arg(help="Pool to draw the episodes from.")], "train"),
        ("episodes", Annotated[int, tyro.conf.arg(help="Episodes, one row each.")], 4),
        (
            "seed",
            Annotated[
                int,
                tyro.conf.arg(
                    help="Seed of the task's build (as --seed of zoo train) and of the episodes."
                ),
            ],
            0,
        ),
        ("out", Annotated[Path, tyro.conf.arg(help="PNG file to write.")], Path("show.png")),
        (
            "task",
            Annotated[task_spec.config, tyro.conf.arg(help=task_spec.description)],
            task_spec.config(),
        ),
    ]
    return dataclasses.make_dataclass(
        "show",
        [(name, typ, dataclasses.field(default=default)) for name, typ, default in fields],
        frozen=True,
    )


def _show(argv: list[str]) -> int:
    from .run import build_task
    from .show import NothingToShow, show

    if not argv or argv[0].startswith("-"):
        lines = ["usage: zoo show TASK [--pool NAME] [--episodes N] [--seed S] [--out FILE]", ""]
        lines += ["tasks:"] + [f"  {e.name:<24} {e.spec.description}" for e in plugins.list_tasks()]
        print("\n".join(lines), file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    task_name, argv = argv[0], argv[1:]
    try:
        task_spec = plugins.task_spec(task_name)
    except plugins.PluginError as error:
        print(f"zoo show: {error}", file=sys.stderr)
        return 2
    try:
        command: Any = tyro.cli(
            show_command_type(task_spec),
            args=argv,
            prog=f"zoo show {task_name}",
            description=f"Draw a few episodes of {task_name} as a PNG.",
        )
        config = TrainConfig(
            task=command.task,
            model=None,
            task_name=task_name,
            run=RunConfig(seed=command.seed),
        )
        task = build_task(config)
        out = show(
            task,
            task_name,
            pool=command.pool,
            episodes=command.episodes,
            seed=command.seed,
            out=command.out,
        )
    except NothingToShow as error:
        print(f"zoo show: {error}", file=sys.stderr)
        return 2
    except ValueError as error:  # a config's own validation
        print(f"zoo show: {error}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


COMMANDS = {
    "train": _train,
    "eval": _eval,
    "list": _list,
    "info": _info,
    "presets": _presets,
    "sweep": _sweep,
    "report": _report,
    "sweeps": _sweeps,
    "scan": _scan,
    "show": _show,
}


def version() -> str:
    """`"NAME VERSION"` of the installed distribution of the zoo (importlib.metadata), or a
    note that it is not installed (the code run from a source checkout)."""
    name = plugins.own_distribution()
    try:
        return f"{name} {metadata.version(name)}"
    except metadata.PackageNotFoundError:
        return "zoo (version unknown: not installed, run from a source checkout)"


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `zoo` console script."""
    argv = sys.argv[1:] if argv is None else argv
    from .shadowing import ShadowedPackageError, check_packages

    try:
        check_packages()
    except ShadowedPackageError as error:
        print(f"zoo: {error}", file=sys.stderr)
        return 2
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if argv[0] == "--version":
        print(version())
        return 0
    command = COMMANDS.get(argv[0])
    if command is None:
        close = difflib.get_close_matches(argv[0], COMMANDS, n=3)
        hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
        print(f"zoo: unknown command {argv[0]!r}.{hint}\n\n{USAGE}", file=sys.stderr)
        return 2
    try:
        code = command(argv[1:])
        sys.stdout.flush()  # here, where a reader gone is caught, not at exit
        return code
    except BrokenPipeError:  # e.g. `zoo presets | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's own flush at exit would fail again
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
