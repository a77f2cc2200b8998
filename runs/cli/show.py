"""`zoo show TASK`: draw a few episodes of a task as a PNG."""

import dataclasses
import sys
from pathlib import Path
from typing import Annotated, Any

import tyro

import plugins

from ..config import (
    RunConfig,
    TrainConfig,
)


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


def main(argv: list[str]) -> int:
    """Run `zoo show` with `argv`; the exit status."""
    from ..run import build_task
    from ..show import NothingToShow, show

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
