"""`zoo train TASK MODEL [flags]` and `zoo train --preset NAME`: the command line built by tyro
at run time from the plugin registry (every installed task and model a subcommand with its
own typed flags, the chosen algorithm's config under `--algorithm.*`)."""

import dataclasses
import sys
from pathlib import Path
from typing import Annotated, Any

import tyro

import plugins

from ..config import (
    DistributedConfig,
    DistributedError,
    EvalConfig,
    RunConfig,
    TrainConfig,
)
from ._common import (
    HelpRequested,
    UsageError,
    format_metrics,
    last_evaluation,
    pop_list,
    pop_option,
)


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
    return pop_option(argv, "--preset")


def default_algorithm(task_name: str, model_name: str, name: str = "") -> str:
    """The algorithm `zoo train TASK MODEL` uses: the one `name`d, checked against the kinds of
    the task and model (built abstractly from their default configs), or with no name the one
    of highest preference that accepts them.

    **Raises:** `UsageError` if none fits, or the one named does not."""
    import equinox as eqx

    from .. import algorithms
    from ..run import build, resolve

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


def parse_train(argv: list[str]) -> tuple[TrainConfig, Any]:
    """Parse `zoo train` arguments into a `TrainConfig` and the parsed command."""
    from .. import algorithms
    from ..experiments import UnknownNameError, get_preset

    preset_name, argv = _pop_preset(argv)
    algorithm_name, argv = pop_option(argv, "--algorithm")
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


def main(argv: list[str]) -> int:
    """Run `zoo train` with `argv`, the arguments after `train`; the exit status."""
    from ..run import RunError, RunInterrupted, TrainingDiverged, train

    hook_names, argv = pop_list(argv, "--hooks")
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
    from ..distributed import initialize

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
    last = last_evaluation(out)
    if last is not None:
        print(format_metrics(*last))
    print(f"run saved in {out}")
    return 0
