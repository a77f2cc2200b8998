"""Specs of the built-in logging hooks (entry-point group `zoo.hooks`): TensorBoard event files
and Weights & Biases. Light: the loggers' libraries are imported only when a hook is built."""

import dataclasses

from .._spec import HookSpec


@dataclasses.dataclass(frozen=True)
class TensorBoardConfig:
    """Settings of the `tensorboard` hook."""

    every: int = 1
    """Log the training metrics after every this many steps (0: only the last)."""
    folder: str = "tensorboard"
    """Where the event files go, inside the run directory."""


@dataclasses.dataclass(frozen=True)
class WandbConfig:
    """Settings of the `wandb` hook."""

    every: int = 1
    """Log the training metrics after every this many steps (0: only the last)."""
    project: str = "zoo"
    """The Weights & Biases project."""
    mode: str = ""
    """`online`, `offline` or `disabled`; empty: `online` if you have logged in (an API key in
    `WANDB_API_KEY` or `~/.netrc`), else `offline` (files under the run directory only)."""


tensorboard = HookSpec(
    name="tensorboard",
    config=TensorBoardConfig,
    factory="plugins.hooks.loggers:tensorboard",
    description="TensorBoard event files in RUN/tensorboard/ (needs compgen-zoo[tensorboard])",
)

wandb = HookSpec(
    name="wandb",
    config=WandbConfig,
    factory="plugins.hooks.loggers:wandb",
    description="Weights & Biases run in RUN/wandb/, offline unless logged in (compgen-zoo[wandb])",
)
