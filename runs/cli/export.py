"""`zoo export RUN_DIR --to DIR`: the shippable layout of a finished run (`runs.pretrained`)."""

import dataclasses
import sys
from pathlib import Path
from typing import Annotated

import tyro


@dataclasses.dataclass(frozen=True)
class ExportCommand:
    """Write the model of a finished run alone (an Orbax checkpoint with no optimizer state),
    its config.json, digests.json (sha256 of every file), a model card (card.json, card.md)
    into DIR, which must be new or empty. Load it with runs.load(DIR) or zoo eval DIR."""

    run: Annotated[Path, tyro.conf.Positional]
    """The run directory."""
    to: Path
    """Where to write it (a new or empty directory)."""
    name: str | None = None
    """The model's name on its card (default: DIR's folder name)."""
    preset: str | None = None
    """The preset the run was trained with, e.g. PAPER/PRESET (its experiment's paper goes on
    the card)."""
    paper: str | None = None
    """The paper, where no preset names it."""
    not_: Annotated[str, tyro.conf.arg(name="not")] = ""
    """What the model is not, e.g. "CPU scale, not the paper's size"."""


def main(argv: list[str]) -> int:
    """Run `zoo export` with `argv`; the exit status."""
    command = tyro.cli(ExportCommand, args=argv, prog="zoo export")
    from ..pretrained import export, read_card
    from ..run import RunError

    try:
        out = export(
            command.run,
            command.to,
            name=command.name,
            preset=command.preset,
            paper=command.paper,
            not_=command.not_,
        )
    except RunError as error:
        print(f"zoo export: {error}", file=sys.stderr)
        return 1
    card = read_card(out)
    what = f"{card['model']} on {card['task']}, step {card['steps']}"
    print(f"wrote {out} ({card['name']}: {what}, {card['size']} bytes)")
    return 0
