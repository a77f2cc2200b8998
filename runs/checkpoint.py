"""Orbax checkpoints of a run: the array leaves of model and optimizer state, the PRNG key and
the step. Static structure (shapes, callables, static fields) is rebuilt from the run's
config, so a checkpoint holds nothing but arrays."""

import logging
import warnings
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.tree_util as jtu
import numpy as np
import orbax.checkpoint as ocp
from jaxtyping import PyTree

logger = logging.getLogger(__name__)


class CheckpointWarning(UserWarning):
    """A checkpoint could not be read and was skipped."""


def _is_array(x: Any) -> bool:
    return eqx.is_array(x) or isinstance(x, jax.ShapeDtypeStruct)


def _arrays(tree: PyTree) -> list[Any]:
    return jtu.tree_leaves(eqx.filter(tree, _is_array))


def _fill(like: PyTree, leaves: list[Any]) -> PyTree:
    """`like` (concrete or abstract) with its array leaves replaced by `leaves`."""
    params, static = eqx.partition(like, _is_array)
    treedef = jtu.tree_structure(params)
    return eqx.combine(jtu.tree_unflatten(treedef, [jnp.asarray(x) for x in leaves]), static)


class Checkpoints:
    """The `checkpoints/` folder of a run directory."""

    def __init__(self, directory: Path, keep: int = 3):
        self.directory = Path(directory).absolute() / "checkpoints"
        options = ocp.CheckpointManagerOptions(
            max_to_keep=keep, create=True, enable_async_checkpointing=False
        )
        self.manager = ocp.CheckpointManager(self.directory, options=options)

    def steps(self) -> list[int]:
        """Saved steps, oldest first."""
        return sorted(self.manager.all_steps())

    def save(self, step: int, model: PyTree, opt_state: PyTree, key_data: Any) -> None:
        """Save the array leaves of `model` and `opt_state` (separate Orbax items, so a model
        loads without its optimizer), the run's PRNG key data and the step."""
        state = {"key": np.asarray(key_data), "step": np.asarray(step, dtype=np.int32)}
        args = ocp.args.Composite(
            model=ocp.args.StandardSave(_arrays(model)),  # pyright: ignore[reportCallIssue]
            opt_state=ocp.args.StandardSave(_arrays(opt_state)),  # pyright: ignore[reportCallIssue]
            state=ocp.args.StandardSave(state),  # pyright: ignore[reportCallIssue]
        )
        if step in self.manager.all_steps():
            # Only after a resume fell back past an unreadable checkpoint of this step.
            self.manager.delete(step)
        self.manager.save(step, args=args, force=True)
        self.manager.wait_until_finished()

    def restore(
        self, model_like: PyTree, opt_state_like: PyTree | None, at: int | None = None
    ) -> tuple[int, PyTree, PyTree | None] | None:
        """Restore the newest readable checkpoint (or the one `at` that step) into the structure
        of the `*_like` trees (concrete or abstract); `opt_state_like=None` skips the optimizer.

        A checkpoint that fails to read (truncated, corrupt, wrong shapes, non-finite values) is
        reported with a warning and the next older one is tried. Returns `None` if none reads.
        """
        # Restore onto one local device, whatever devices saved it (the trainer replicates the
        # arrays over its own mesh afterwards).
        device = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])

        def leaf(shape, dtype):
            return jax.ShapeDtypeStruct(shape, dtype, sharding=device)

        def abstract(tree):
            return [leaf(x.shape, x.dtype) for x in _arrays(tree)]

        items = {
            "model": ocp.args.StandardRestore(abstract(model_like)),  # pyright: ignore[reportCallIssue]
            "state": ocp.args.StandardRestore(  # pyright: ignore[reportCallIssue]
                {"key": leaf((2,), jnp.uint32), "step": leaf((), np.int32)}
            ),
        }
        if opt_state_like is not None:
            items["opt_state"] = ocp.args.StandardRestore(abstract(opt_state_like))  # pyright: ignore[reportCallIssue]
        for step in reversed(self.steps() if at is None else [at]):
            try:
                restored = self.manager.restore(step, args=ocp.args.Composite(**items))
                model = _fill(model_like, restored["model"])
                opt_state = (
                    _fill(opt_state_like, restored["opt_state"])
                    if opt_state_like is not None
                    else None
                )
                floats = eqx.filter((model, opt_state), eqx.is_inexact_array)
                if not all(bool(jnp.all(jnp.isfinite(x))) for x in jtu.tree_leaves(floats)):
                    raise ValueError("it holds non-finite values")
                if int(restored["state"]["step"]) != step:
                    raise ValueError(f"it says it is step {int(restored['state']['step'])}")
                return step, model, opt_state
            except Exception as error:  # any failure means: try the older one
                message = str(error).splitlines()[0] if str(error) else ""
                warnings.warn(
                    f"Checkpoint at step {step} in {self.directory} could not be read "
                    f"({type(error).__name__}: {message}); trying the previous one.",
                    CheckpointWarning,
                    stacklevel=2,
                )
        return None
