"""Training algorithms: each a final `AbstractAlgorithm` over one `TrainState`, sharing the run
directory, checkpoints, device mesh and CLI.

Algorithms are plugins of the entry-point group `zoo.algorithms` (the built-in ones too), each
described by a `plugins.AlgorithmSpec`: its config dataclass, its factory and its class,
imported lazily (this module imports no JAX). `zoo train TASK MODEL` uses, among the algorithms
whose class `accepts` the task and model, the one of highest `AlgorithmSpec.preference`; two
that tie are an error naming both; `--algorithm NAME` chooses one by name.

Adding an algorithm is a module of your own (a subclass of `AbstractAlgorithm`, a config
dataclass, a `make` factory) and one entry point; nothing here changes.
"""

import importlib
from typing import TYPE_CHECKING

import plugins
from plugins import AlgorithmSpec

if TYPE_CHECKING:
    from .base import AbstractAlgorithm, train_chunk

_LAZY = {"AbstractAlgorithm": ".base", "train_chunk": ".base"}


class AlgorithmError(ValueError):
    """No algorithm fits, two fit equally well, or the one named does not accept the task
    and model."""


def get(name: str) -> AlgorithmSpec:
    """The algorithm called `name` (or `dist:name`).

    **Raises:** `AlgorithmError` if there is none (the message lists the close matches)."""
    try:
        return plugins.algorithm_spec(name)
    except plugins.PluginError as error:
        raise AlgorithmError(str(error)) from None


def specs() -> list[AlgorithmSpec]:
    """Every installed algorithm, sorted by name."""
    return [entry.spec for entry in plugins.entries("algorithms")]


def choose(task: object, model: object, name: str = "") -> AlgorithmSpec:
    """The algorithm called `name`, checked against `task` and `model` (concrete or
    abstract), or, with no name, the one of highest preference among those that accept both.

    **Raises:** `AlgorithmError` if none accepts them, if two of the highest preference do
    (naming both and `--algorithm`), or if the one named does not."""
    what = f"{type(model).__name__} on {type(task).__name__}"
    if name:
        spec = get(name)
        reason = spec.load_class().accepts(task, model)
        if reason is not None:
            raise AlgorithmError(
                f"Algorithm {name!r} cannot train {what}: {reason}. Leave out --algorithm to "
                "choose from the kinds of task and model."
            )
        return spec
    accepting, reasons = [], []
    for entry in plugins.entries("algorithms"):
        reason = entry.spec.load_class().accepts(task, model)
        if reason is None:
            accepting.append(entry)
        else:
            reasons.append(f"{entry.name}: {reason}")
    if not accepting:
        raise AlgorithmError(f"No algorithm can train {what}:\n  " + "\n  ".join(reasons))
    best = max(entry.spec.preference for entry in accepting)
    top = [entry for entry in accepting if entry.spec.preference == best]
    if len(top) > 1:
        names = ", ".join(f"{e.qualified_name!r} ({e.dist})" for e in top)
        raise AlgorithmError(
            f"More than one algorithm can train {what} with the same preference ({best}): "
            f"{names}. Choose one with --algorithm NAME (e.g. --algorithm {top[0].name}), or "
            "give one of them another `preference` in its AlgorithmSpec."
        )
    return top[0].spec


def __getattr__(name: str):
    if name in _LAZY:  # the base class imports JAX; this module does not
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AbstractAlgorithm",
    "AlgorithmError",
    "AlgorithmSpec",
    "choose",
    "get",
    "specs",
    "train_chunk",
]
