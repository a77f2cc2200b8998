"""What every training algorithm provides, and the compiled loop over its steps."""

import abc
from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from jaxtyping import Array, Float, PRNGKeyArray, PyTree

from ..sharding import replicate
from ..state import TrainState


class AbstractAlgorithm(eqx.Module):
    """A training algorithm: which kinds of task and model it trains, how it starts a
    `TrainState`, one compiled training step, and how it evaluates a model.

    Subclasses are final dataclasses of everything static about a step (settings, optimizer,
    device mesh); the task is an argument, not a field, since its arrays are data.
    """

    task_kind: ClassVar[type]
    """The task class (a base class) this algorithm trains on."""
    model_kind: ClassVar[type]
    """The model class (a base class) this algorithm trains."""

    mesh: eqx.AbstractVar[Mesh]

    @classmethod
    def accepts(cls, task: object, model: object) -> str | None:
        """`None` if this algorithm can train `model` on `task` (concrete or abstract), else
        why not, in a sentence."""
        for what, obj, kind in (("task", task, cls.task_kind), ("model", model, cls.model_kind)):
            if not isinstance(obj, kind):
                return (
                    f"its {what} must be an instance of {kind.__name__}, not {type(obj).__name__}"
                )
        return None

    @abc.abstractmethod
    def init(self, task: PyTree, model: PyTree, key: PRNGKeyArray) -> TrainState:
        """The state at step 0: `model` as given, a fresh optimizer state, the run's `key`."""

    def place(self, state: TrainState) -> TrainState:
        """`state` on the devices of `mesh` as `step` places its outputs, so that the first
        compiled call and every later one take their inputs alike and share one program
        (`runs.run.train` places the state at the start of a run and after a restore).

        By default every array is replicated (`runs.sharding.replicate`); an algorithm whose
        state holds a batch split over the devices, as PPO's environments, overrides it."""
        return replicate(state, self.mesh)

    @abc.abstractmethod
    def step(
        self, task: PyTree, state: TrainState
    ) -> tuple[TrainState, dict[str, Float[Array, ""]]]:
        """One training step; the returned state's `step` is one more. Metrics include `loss`
        and `grad_finite` (1.0 if the step's gradient was finite and applied)."""

    @abc.abstractmethod
    def evaluate(
        self, task: PyTree, model: PyTree, key: PRNGKeyArray, settings: PyTree
    ) -> dict[str, dict[str, float]]:
        """Metrics of `model` per evaluation pool of `task`, from `key` (same key, same
        numbers); `settings` are the run's evaluation settings."""

    @abc.abstractmethod
    def summarize(self, metrics: dict[str, np.ndarray]) -> dict[str, float]:
        """One row of training metrics for a chunk of steps, from the chunk's metrics (one
        value per step): what `metrics.jsonl` and the progress bar show."""

    def chunk(
        self, task: PyTree, state: TrainState, length: int
    ) -> tuple[TrainState, dict[str, Float[Array, " length"]]]:
        """`length` steps in one `lax.scan`."""
        params, static = eqx.partition(state, eqx.is_array)

        def body(params, _):
            state, metrics = self.step(task, eqx.combine(params, static))
            return eqx.filter(state, eqx.is_array), metrics

        params, metrics = jax.lax.scan(body, params, length=length)
        return eqx.combine(params, static), metrics


@eqx.filter_jit(donate="all-except-first")
def _chunk(static_args, state):
    algorithm, task, length = static_args
    return algorithm.chunk(task, state, length)


def train_chunk(
    algorithm: AbstractAlgorithm, task: PyTree, state: TrainState, length: int
) -> tuple[TrainState, dict[str, Float[Array, " length"]]]:
    """Compiled `algorithm.chunk`: `length` steps from `state`, whose buffers are donated."""
    return _chunk((algorithm, task, length), state)


def step_key(state: TrainState) -> PRNGKeyArray:
    """The key of the state's current step: `fold_in(key, step)`."""
    return jax.random.fold_in(state.key, state.step)


def next_step(state: TrainState, model: PyTree, opt_state: PyTree) -> TrainState:
    """`state` one step on, with the new model and optimizer state."""
    return eqx.tree_at(
        lambda s: (s.step, s.model, s.opt_state),
        state,
        (state.step + jnp.ones_like(state.step), model, opt_state),
    )
