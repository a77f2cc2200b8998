"""The `zoo` command line.

`zoo train TASK MODEL [flags]` is built by tyro at run time from the plugin registry: every
installed task and model is a subcommand with its own typed flags. `zoo eval DIR` evaluates a
saved run, `zoo list` lists the plugins, `zoo info MODEL` shows a model's parameter counts,
`zoo presets` shows the paper presets, `zoo sweep` / `zoo report` run and summarize grids of
runs, `zoo show TASK` draws a few episodes of a task, `zoo export` writes a run's model in
the shippable layout and `zoo pretrained` lists the installed pretrained models.

Each command is a small module of this package, `runs.cli.COMMAND`, whose `main(argv)` runs
it; `main` here picks the module and imports only it.
"""

import difflib
import importlib
import os
import sys
from importlib import metadata

import plugins

from ._common import HelpRequested, UsageError, format_metrics
from .train import default_algorithm, make_hooks, parse_train, train_command_type

USAGE = """usage: zoo COMMAND ...   |   zoo --version

commands:
  train TASK MODEL [flags]   train MODEL on TASK (zoo train --help lists tasks and models);
                             --algorithm NAME picks the algorithm (default: from the kinds)
  train --preset NAME        meta-train a paper setting (zoo presets lists them; flags override)
  eval DIR                   evaluate a saved run on every evaluation pool of its task
                             (DIR may be an exported model, or pretrained:NAME)
  list                       list the installed models and tasks with their distributions
  info MODEL [--task TASK]   a model's description, settings and parameter counts on a task
  presets                    list the named paper presets
  sweep NAME --out DIR       run a grid of runs (zoo sweeps lists them); again to resume
  report DIR                 collect a sweep's runs into results.csv, summary.csv, figure.png
  sweeps                     list the named sweeps
  scoreboard [--check]       score the papers' claims against docs/figures, write the pages
  scan SPLIT [--out DIR]     write a SCAN split (generated) in SCAN's own file format
  show TASK [flags]          draw a few episodes of TASK as a PNG (--pool, --episodes, --seed,
                             --out, --task.* as in zoo train; the grid worlds draw themselves)
  export RUN_DIR --to DIR    write a finished run's model, config, digests and card (shippable)
  pretrained                 list the installed pretrained models (runs.load("pretrained:NAME"))
"""


COMMANDS = (
    "train",
    "eval",
    "list",
    "info",
    "presets",
    "sweep",
    "report",
    "sweeps",
    "scoreboard",
    "scan",
    "show",
    "export",
    "pretrained",
)
"""The commands, each the `main(argv) -> int` of its own module `runs.cli.COMMAND`, imported
when it runs."""


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
    from ..shadowing import ShadowedPackageError, check_packages

    try:
        check_packages()
    except ShadowedPackageError as error:
        print(f"zoo: {error}", file=sys.stderr)
        return 2
    try:
        code = _dispatch(argv)
        sys.stdout.flush()  # here, where a reader gone is caught, not at exit
        return code
    except BrokenPipeError:  # e.g. `zoo presets | head`: the reader left; say nothing more
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's own flush at exit would fail again
        return 1


def _dispatch(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if argv[0] == "--version":
        print(version())
        return 0
    if argv[0] not in COMMANDS:
        close = difflib.get_close_matches(argv[0], COMMANDS, n=3)
        hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
        print(f"zoo: unknown command {argv[0]!r}.{hint}\n\n{USAGE}", file=sys.stderr)
        return 2
    return importlib.import_module(f"{__name__}.{argv[0]}").main(argv[1:])


__all__ = [
    "COMMANDS",
    "USAGE",
    "HelpRequested",
    "UsageError",
    "default_algorithm",
    "format_metrics",
    "main",
    "make_hooks",
    "parse_train",
    "train_command_type",
    "version",
]
