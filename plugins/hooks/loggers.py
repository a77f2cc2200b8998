"""The TensorBoard and Weights & Biases hooks: each logs the training row of every `every`
steps and every evaluation, as `train/METRIC` and `POOL/METRIC` scalars at the run's step."""

import os
from pathlib import Path
from typing import Any

from runs.hooks import Hook, StepInfo

from . import TensorBoardConfig, WandbConfig

_NOT_SCALARS = ("step", "pool")


def _scalars(prefix: str, row: dict[str, Any]) -> dict[str, float]:
    return {
        f"{prefix}/{k}": float(v)
        for k, v in row.items()
        if k not in _NOT_SCALARS and isinstance(v, int | float) and not isinstance(v, bool)
    }


def _missing(package: str, extra: str) -> ImportError:
    return ImportError(
        f"The {extra} hook needs the {package} package: pip install 'compgen-zoo[{extra}]'."
    )


class TensorBoard(Hook):
    """Writes TensorBoard event files (with tensorboardX)."""

    def __init__(self, config: TensorBoardConfig, out: Path):
        try:
            from tensorboardX import SummaryWriter
        except ImportError:
            raise _missing("tensorboardX", "tensorboard") from None
        self.every = config.every
        self.folder = Path(out) / config.folder
        self.writer_type = SummaryWriter
        self.writer: Any = None

    def on_start(self, info: StepInfo) -> None:
        # Not before: the run directory must be blank until the run has checked it.
        self.writer = self.writer_type(logdir=str(self.folder))

    def on_step(self, info: StepInfo) -> None:
        for tag, value in _scalars("train", info.row).items():
            self.writer.add_scalar(tag, value, info.step)
        self.writer.flush()

    def on_evaluation(self, info: StepInfo, results: dict[str, dict[str, float]]) -> None:
        for pool, values in results.items():
            for tag, value in _scalars(pool, values).items():
                self.writer.add_scalar(tag, value, info.step)
        self.writer.flush()

    def on_end(self, info: StepInfo) -> None:
        self.writer.close()


class Wandb(Hook):
    """Logs to a Weights & Biases run: offline (files under `RUN/wandb/`) unless the user has
    logged in or asks for `online`."""

    def __init__(self, config: WandbConfig, out: Path):
        try:
            import wandb
        except ImportError:
            raise _missing("wandb", "wandb") from None
        self.wandb = wandb
        self.every = config.every
        self.out = Path(out)
        self.mode = config.mode or os.environ.get("WANDB_MODE") or _default_mode()
        self.project = config.project
        self.run: Any = None

    def on_start(self, info: StepInfo) -> None:
        from runs.config import to_dict

        self.out.mkdir(parents=True, exist_ok=True)
        self.run = self.wandb.init(
            project=self.project,
            dir=str(self.out),
            name=self.out.name,
            mode=self.mode,  # pyright: ignore[reportArgumentType]
            config=to_dict(info.config),
            resume="allow",
            id=f"zoo-{abs(hash(str(self.out.resolve()))):x}"[:32],
        )

    def on_step(self, info: StepInfo) -> None:
        self.run.log(_scalars("train", info.row), step=info.step)

    def on_evaluation(self, info: StepInfo, results: dict[str, dict[str, float]]) -> None:
        logged: dict[str, float] = {}
        for pool, values in results.items():
            logged |= _scalars(pool, values)
        self.run.log(logged, step=info.step)

    def on_end(self, info: StepInfo) -> None:
        self.run.finish()


def _default_mode() -> str:
    """`online` if an API key is configured, else `offline` (never a network call to find
    out)."""
    if os.environ.get("WANDB_API_KEY"):
        return "online"
    netrc = Path.home() / ".netrc"
    if netrc.is_file() and "api.wandb.ai" in netrc.read_text(errors="ignore"):
        return "online"
    return "offline"


def tensorboard(config: TensorBoardConfig, *, out: Path) -> TensorBoard:
    """The factory of the `tensorboard` hook."""
    return TensorBoard(config, out)


def wandb(config: WandbConfig, *, out: Path) -> Wandb:
    """The factory of the `wandb` hook."""
    return Wandb(config, out)
