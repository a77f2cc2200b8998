"""`zoo info MODEL [--task TASK] | --preset NAME`: a model's settings and parameter counts."""

import dataclasses
import sys
from typing import Annotated

import tyro

import plugins

from ..config import (
    TrainConfig,
)


@dataclasses.dataclass(frozen=True)
class InfoCommand:
    """A model's description, default settings and parameter counts on a task."""

    model: Annotated[str | None, tyro.conf.Positional] = None
    """Registered model name (or give --preset)."""
    task: str = "hyperteacher"
    """Registered task whose input and output sizes the counts are for."""
    preset: str | None = None
    """Show the model and task of this preset instead."""


def main(argv: list[str]) -> int:
    """Run `zoo info` with `argv`; the exit status."""
    import equinox as eqx

    from zoo import param_counts

    from ..experiments import UnknownNameError, get_preset, preset
    from ..run import RunError, build, resolve

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
