"""Configs of the plugin: plain frozen dataclasses, whose fields become CLI flags. No JAX."""

import dataclasses
from typing import ClassVar

import runs


@dataclasses.dataclass(frozen=True)
class SineConfig:
    """Config of the `sine` task: `y = a sin(x + p)` with (a, p) from a fixed grid."""

    amplitudes: int = 3
    """Amplitudes in the grid (from 0.5 to 2)."""
    phases: int = 4
    """Phases in the grid (from 0 to pi); the last phase is held out as the `ood` pool."""
    shots: int = 8
    """Examples in the support set, and in the query set, of an episode."""


@dataclasses.dataclass(frozen=True)
class SineMLPConfig:
    """Config of the `sine-mlp` model: a tanh MLP whose readout adapts per task."""

    hidden: int = 16
    """Width of the hidden layer."""


@dataclasses.dataclass(frozen=True)
class MultitaskConfig:
    """The multi-task baseline: one model fitted to the query sets of all training tasks, with
    no adaptation (`--algorithm.outer.*` sets its optimizer)."""

    outer: runs.OuterConfig = runs.OuterConfig()
    """The optimizer of every leaf, with the query loss."""

    CHANGEABLE: ClassVar[frozenset[str]] = frozenset({"outer.lr", "outer.weight_decay"})


@dataclasses.dataclass(frozen=True)
class StepLogConfig:
    """Config of the `step-log` hook."""

    every: int = 1
    """Write a line every this many steps."""
