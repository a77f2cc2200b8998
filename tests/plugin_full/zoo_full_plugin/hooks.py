"""The `step-log` hook: appends `STEP: LOSS` to `RUN/step-log.txt` every `every` steps."""

from pathlib import Path

from runs.hooks import Hook, StepInfo

from .config import StepLogConfig


class StepLog(Hook):
    """Writes one line per call of `on_step`."""

    def __init__(self, config: StepLogConfig, out: Path):
        self.every = config.every
        self.path = Path(out) / "step-log.txt"

    def on_step(self, info: StepInfo) -> None:
        with self.path.open("a") as f:
            f.write(f"{info.step}:{info.row['loss']:.6f}\n")


def make(config: StepLogConfig, *, out: Path) -> StepLog:
    """The factory of the `step-log` hook."""
    return StepLog(config, out)
