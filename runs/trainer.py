"""The training loop: a `Trainer` over an algorithm and its `TrainState`, calling hooks.

`runs.train` builds one (task, model, algorithm, restored state) and runs it. The loop itself
is small: compiled chunks of `run.steps_per_call` steps, the divergence check, and the hooks;
the metrics file, the evaluation, the checkpoints and the progress bar are the built-in hooks
(`MetricsFile`, `Evaluation`, `Checkpointing`, `ProgressBar`), called before the user's.
"""

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .algorithms.base import AbstractAlgorithm, train_chunk
from .checkpoint import Checkpoints
from .config import TrainConfig
from .distributed import fetch, is_primary, local
from .hooks import Hook, StepInfo, due
from .state import TrainState

METRICS_FILE = "metrics.jsonl"


class TrainingDiverged(RuntimeError):
    """The loss became non-finite; the run stopped and kept its last good checkpoint."""


class RunInterrupted(RuntimeError):
    """Training was interrupted (Ctrl-C); the newest state was checkpointed where it could be."""


class MetricsFile(Hook):
    """Appends each chunk's training row, then the evaluation rows of the same step, to
    `metrics.jsonl` (before the checkpoint of that step: a resume drops rows past its
    checkpoint). Only process 0 writes."""

    every = 1

    def __init__(self, out: Path, primary: bool = True):
        self.path = out / METRICS_FILE
        self.primary = primary
        self.evaluations: list[dict] = []

    def on_evaluation(self, info: StepInfo, results: dict[str, dict[str, float]]) -> None:
        for pool, values in results.items():
            self.evaluations.append({"step": info.step, "pool": pool, **values})

    def on_step(self, info: StepInfo) -> None:
        self.write([info.row, *self.evaluations])

    def write(self, rows: list[dict]) -> None:
        """Append `rows` (and forget the evaluations held)."""
        if self.primary and rows:
            append_metrics(self.path, rows)
        self.evaluations = []


class Evaluation(Hook):
    """Every `eval.every` steps (and at the end): the algorithm's evaluation of the model, from
    the run's eval key, then every hook's `on_evaluation`. Every process evaluates its own copy
    of the model (the same numbers)."""

    def __init__(self, trainer: "Trainer", key: Any):
        self.trainer = trainer
        self.key = key
        self.every = trainer.config.eval.every

    def on_step(self, info: StepInfo) -> None:
        trainer = self.trainer
        trainer.status.phase(trainer.describe(), line=info.step == info.total)
        results = trainer.algorithm.evaluate(
            local(trainer.task), local(info.state.model), self.key, trainer.config.eval
        )
        trainer.status.phase(None)
        for hook in trainer.hooks:
            hook.on_evaluation(info, results)


class Checkpointing(Hook):
    """Every `run.checkpoint_every` steps (and at the end): an Orbax checkpoint of the whole
    state, then every hook's `on_checkpoint`."""

    def __init__(self, trainer: "Trainer"):
        self.trainer = trainer
        self.every = trainer.config.run.checkpoint_every

    def on_step(self, info: StepInfo) -> None:
        self.trainer.checkpoints.save(info.state)
        self.trainer.last_good = info.step
        for hook in self.trainer.hooks:
            if hook is not self:
                hook.on_checkpoint(info)


class ProgressBar(Hook):
    """The tqdm bar: steps done, and the last chunk's loss, accuracy, return, success and
    frames per second."""

    every = 1

    def __init__(self, bar: Any):
        self.bar = bar

    def on_step(self, info: StepInfo) -> None:
        self.bar.update(info.step - self.bar.n)
        self.bar.set_postfix(postfix(info.row))


class Trainer:
    """Runs `algorithm` from `state` to `config.run.steps`, calling `hooks` (the built-in
    ones first, then `extra`)."""

    def __init__(
        self,
        algorithm: AbstractAlgorithm,
        task: Any,
        state: TrainState,
        config: TrainConfig,
        out: Path,
        checkpoints: Checkpoints,
        status: Any,
        eval_key: Any,
        extra: Sequence[Hook] = (),
    ):
        self.algorithm, self.task, self.state = algorithm, task, state
        self.config, self.out, self.checkpoints, self.status = config, out, checkpoints, status
        self.primary = is_primary()
        self.last_good = checkpoints.steps()[-1]
        self.metrics_file = MetricsFile(out, self.primary)
        self.bar = status.start(int(state.step))
        self.hooks: list[Hook] = [
            ProgressBar(self.bar),  # before the evaluation: the bar shows the steps done
            Evaluation(self, eval_key),
            self.metrics_file,
            Checkpointing(self),
            *(extra if self.primary else ()),
        ]
        self._start = time.perf_counter()
        frames = getattr(config.algorithm, "frames_per_step", 0)
        self._last: tuple[float, int] = (self._start, int(state.step) * frames)
        self.first_bad_grad: int | None = None
        self.skipped = 0

    def describe(self) -> str:
        from .run import describe_evaluation

        return describe_evaluation(self.task, self.config)

    def info(self, step: int, row: dict) -> StepInfo:
        return StepInfo(step, self.config.run.steps, self.state, row, self.config, self.out)

    def row(self, step: int, metrics: dict[str, np.ndarray]) -> dict:
        """The `metrics.jsonl` row of a chunk of steps ending at `step`."""
        row = {"step": step, "pool": "train", **self.algorithm.summarize(metrics)}
        if "grad_finite" in metrics:
            row["nonfinite_skipped"] = self.skipped  # so far in this process
        now = time.perf_counter()
        row["time"] = now - self._start
        if "frames" in row:
            row["fps"] = (row["frames"] - self._last[1]) / max(now - self._last[0], 1e-9)
        self._last = (now, row.get("frames", 0))
        return row

    def run(self) -> TrainState:
        """Train to the end; the final state.

        **Raises:** `TrainingDiverged` if the loss becomes non-finite; `RunInterrupted` on
        Ctrl-C, once the newest state is saved."""
        step, total = int(self.state.step), self.config.run.steps
        for hook in self.hooks:
            hook.on_start(self.info(step, {}))
        per_call = self.config.run.steps_per_call
        in_flight, pending = 0, None  # a chunk dispatched whose hooks have not run
        compiled: set[int] = set()  # the chunk lengths compiled so far
        try:
            while step < total:
                # Chunks end on multiples of steps_per_call, so a resumed run splits alike.
                length = min(per_call - step % per_call, total - step)
                compiling = length not in compiled
                if compiling:
                    self.status.phase(
                        f"compiling the training step ({length} steps per call)", line=True
                    )
                self.state, pending = train_chunk(self.algorithm, self.task, self.state, length)
                in_flight = length
                metrics = {k: fetch(v) for k, v in pending.items()}
                if compiling:
                    compiled.add(length)
                    self.status.phase(None)
                self._check_finite(step, length, metrics)
                step += length
                in_flight = 0
                info = self.info(step, self.row(step, metrics))
                for hook in self.hooks:
                    if due(step, hook.every, total):
                        hook.on_step(info)
        except KeyboardInterrupt:
            self.bar.close()
            saved = self._save_interrupted(step, in_flight, pending)
            at = saved if saved is not None else self.checkpoints.steps()[-1]
            raise RunInterrupted(
                f"Interrupted at step {at} of {total}: its checkpoint is saved in {self.out}. "
                f"Continue with --resume (the same flags)."
            ) from None
        finally:
            self.bar.close()
        for hook in self.hooks:
            hook.on_end(self.info(step, {}))
        return self.state

    def _check_finite(self, step: int, length: int, metrics: dict[str, np.ndarray]) -> None:
        finite = np.isfinite(metrics["loss"])
        # Steps up to the first non-finite loss (all of them if there is none).
        upto = length if finite.all() else int(np.argmin(finite))
        if "grad_finite" in metrics:
            bad_grads = np.flatnonzero(metrics["grad_finite"][:upto] == 0)
            if bad_grads.size and self.first_bad_grad is None:
                self.first_bad_grad = step + int(bad_grads[0])
            self.skipped += int(bad_grads.size)
        if not finite.all():
            from .run import _divergence_message

            raise TrainingDiverged(
                _divergence_message(
                    step + upto,
                    self.first_bad_grad,
                    self.skipped,
                    self.last_good,
                    self.checkpoints.directory,
                )
            )

    def _save_interrupted(self, step: int, in_flight: int, pending: Any) -> int | None:
        """On Ctrl-C: finish the chunk in flight (if its state survived), log it and save a
        checkpoint of the newest state; the step saved, or None if none could be."""
        import jax

        try:
            jax.block_until_ready(self.state)
            rows = list(self.metrics_file.evaluations)
            if in_flight:
                metrics = {k: fetch(v) for k, v in pending.items()}
                if not np.isfinite(metrics["loss"]).all():
                    return None
                step += in_flight
                rows.insert(0, self.row(step, metrics))
            self.metrics_file.write(rows)
            if step not in self.checkpoints.steps():
                self.checkpoints.save(self.state)
            return step
        except (RuntimeError, ValueError):  # the state was donated to a chunk that never ran
            return None


def append_metrics(path: Path, rows: list[dict]) -> None:
    """Append `rows` to a `metrics.jsonl`."""
    import json

    with path.open("a") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
        f.flush()


def postfix(row: dict) -> dict[str, str]:
    """What the progress bar shows: the loss and accuracy of the last chunk, or the return,
    success rate and frames per second of an agent's."""
    shown = {k: f"{row[k]:.4f}" for k in ("loss", "accuracy") if k in row}
    shown |= {k: f"{row[k]:.3f}" for k in ("return", "success") if k in row}
    if "fps" in row:
        shown["fps"] = f"{row['fps']:,.0f}"
    if row.get("nonfinite_skipped"):
        shown["skipped"] = str(row["nonfinite_skipped"])  # steps with a non-finite gradient
    return shown


__all__ = [
    "Checkpointing",
    "Evaluation",
    "MetricsFile",
    "ProgressBar",
    "RunInterrupted",
    "Trainer",
    "TrainingDiverged",
    "append_metrics",
    "postfix",
]
