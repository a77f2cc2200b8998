"""The public hook protocol of the training loop (`runs.trainer.Trainer`).

A hook is called at the start of a run, after every `every` steps (and after the last one),
after each evaluation, after each checkpoint, and at the end. The metrics file, the
evaluation, the checkpoints and the progress bar are hooks like any other; yours are added
with `runs.train(config, out, hooks=[...])`, or as plugins (entry-point group `zoo.hooks`, a
`plugins.HookSpec`) chosen with `zoo train ... --hooks NAME ...`:

    class PrintLoss(runs.hooks.Hook):
        every = 10

        def on_step(self, info):
            print(info.step, info.row["loss"])

Hooks run in the order given, after the built-in ones, in process 0 of a multi-process run
only. A hook must not change the state it is shown.
"""

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import TrainConfig
    from .state import TrainState


@dataclasses.dataclass(frozen=True)
class StepInfo:
    """Where a run stands when a hook is called."""

    step: int
    """The steps taken so far."""
    total: int
    """The steps the run is set to take (`config.run.steps`)."""
    state: "TrainState"
    """The training state after `step` steps (do not change it)."""
    row: dict[str, Any]
    """The training metrics of the last chunk of steps, as `metrics.jsonl` records them
    (`step`, `pool="train"`, `loss`, ..., `time`); empty at the start."""
    config: "TrainConfig"
    """The run's config."""
    out: Path
    """The run directory."""


class Hook:
    """The base class of training hooks: override the calls you need (all do nothing here)."""

    every: int = 1
    """`on_step` is called after every this many steps (and after the last step; 0: only
    after the last)."""

    def on_start(self, info: StepInfo) -> None:
        """Before the first step of this process (`info.step` is the step resumed from)."""

    def on_step(self, info: StepInfo) -> None:
        """After a chunk of steps ending on a multiple of `every` (or the last)."""

    def on_evaluation(self, info: StepInfo, results: dict[str, dict[str, float]]) -> None:
        """After an evaluation, with its metrics per pool."""

    def on_checkpoint(self, info: StepInfo) -> None:
        """After a checkpoint of `info.step` was saved."""

    def on_end(self, info: StepInfo) -> None:
        """After the last step, its evaluation and checkpoint (not after an interruption)."""


def due(step: int, every: int, total: int) -> bool:
    """Whether a hook of interval `every` is called after `step` of `total` steps."""
    return step == total or (every > 0 and step % every == 0)


__all__ = ["Hook", "StepInfo", "due"]
