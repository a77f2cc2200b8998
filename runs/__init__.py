"""runs: the training algorithms, configs, CLI, checkpoints and presets of zoo.

    import runs
    model, config, step = runs.load("results/my-run")   # the trained Equinox model
    model, config, step = runs.load("pretrained:NAME")  # a shipped one (zoo pretrained lists them)

Submodules are imported on first use (the CLI lists plugins without importing JAX).
"""

import importlib
from typing import TYPE_CHECKING

__distribution__ = "compgen-zoo"  # checked by runs.shadowing: a foreign `runs` lacks it

if TYPE_CHECKING:
    from .algorithms.config import BilevelConfig, InContextConfig, PPOConfig
    from .config import EvalConfig, InnerConfig, OuterConfig, RunConfig, TrainConfig
    from .evaluation import Evaluation, evaluate, evaluate_run
    from .experiments import Experiment, Preset
    from .run import (
        RunError,
        RunInterrupted,
        TrainingDiverged,
        build,
        load,
        read_config,
        read_metrics,
        train,
    )
    from .scoreboard import Claim
    from .state import TrainState
    from .sweeps import Select, Sweep, SweepRun

_LAZY = {
    "Claim": ".scoreboard",
    "Experiment": ".experiments",
    "Preset": ".experiments",
    "Select": ".sweeps",
    "Sweep": ".sweeps",
    "SweepRun": ".sweeps",
    "TrainConfig": ".config",
    "EvalConfig": ".config",
    "InnerConfig": ".config",
    "OuterConfig": ".config",
    "RunConfig": ".config",
    "BilevelConfig": ".algorithms.config",
    "InContextConfig": ".algorithms.config",
    "PPOConfig": ".algorithms.config",
    "TrainState": ".state",
    "RunError": ".run",
    "RunInterrupted": ".run",
    "TrainingDiverged": ".run",
    "build": ".run",
    "evaluate": ".evaluation",
    "evaluate_run": ".evaluation",
    "Evaluation": ".evaluation",
    "load": ".run",
    "read_config": ".run",
    "read_metrics": ".run",
    "train": ".run",
}

__all__ = [
    "BilevelConfig",
    "Claim",
    "EvalConfig",
    "Evaluation",
    "Experiment",
    "InContextConfig",
    "InnerConfig",
    "OuterConfig",
    "PPOConfig",
    "Preset",
    "RunConfig",
    "RunError",
    "RunInterrupted",
    "Select",
    "Sweep",
    "SweepRun",
    "TrainConfig",
    "TrainState",
    "TrainingDiverged",
    "build",
    "evaluate",
    "evaluate_run",
    "load",
    "read_config",
    "read_metrics",
    "train",
]


def __getattr__(name: str):
    if name in _LAZY:
        from .shadowing import check_packages

        check_packages()  # a stranger's `zoo`, `tasks` or `plugins` would fail far from here
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'runs' has no attribute {name!r}")
