"""Orbax checkpoints of a run: the array leaves of its `TrainState`, as trees keyed by field
paths, so that plain Orbax restores a readable tree:

    items = ocp.args.Composite(model=ocp.args.StandardRestore(), train_state=ocp.args.StandardRestore())
    ocp.CheckpointManager(pathlib.Path("run/checkpoints").absolute()).restore(step, args=items)
    # {"model": {"embeddings": {"0": ...}, ...},
    #  "train_state": {"step": ..., "key": ..., "opt_state": {...}, "extra": {...}}}

Two items per step, so a model loads without its optimizer: `model` (the model's arrays) and
`train_state` (step, the key's data, the optimizer state and the algorithm's extra state).
Static structure (shapes, callables, static fields) is rebuilt from the run's config, so a
checkpoint holds nothing but arrays. A third item, `digests`, holds a BLAKE2b digest of every
saved array; a restore that reads different bytes (a corrupted file of the same size) rejects
that checkpoint with a warning and falls back to the previous one.

Checkpoints written before the engine became algorithms (format 1: anonymous leaf lists in items
`model`, `opt_state`, `state`) still load their model; they cannot be resumed.
"""

import contextlib
import hashlib
import logging
import warnings
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
import numpy as np
import orbax.checkpoint as ocp
from jaxtyping import PyTree

from .distributed import fetch
from .state import TrainState


class CheckpointWarning(UserWarning):
    """A checkpoint could not be read and was skipped."""


class OldCheckpointError(ValueError):
    """A checkpoint of the format written before the engine became algorithms: its model loads,
    its optimizer state does not."""


def _is_array(x: Any) -> bool:
    return eqx.is_array(x) or isinstance(x, jax.ShapeDtypeStruct)


def _is_key(x: Any) -> bool:
    return _is_array(x) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)


def _name(key: Any) -> str:
    for attr in ("name", "key", "idx"):
        if hasattr(key, attr):
            return str(getattr(key, attr))
    return str(key)


def _paths(tree: PyTree) -> list[tuple[tuple[str, ...], Any]]:
    """`(path, leaf)` of every array leaf of `tree` (concrete or abstract), the path as the
    names of its fields, dict keys and sequence indices."""
    flat = jtu.tree_flatten_with_path(eqx.filter(tree, _is_array))[0]
    return [(tuple(_name(k) for k in path) or ("value",), leaf) for path, leaf in flat]


def _nest(items: list[tuple[tuple[str, ...], Any]]) -> dict:
    out: dict = {}
    for path, leaf in items:
        node = out
        for name in path[:-1]:
            node = node.setdefault(name, {})
        if path[-1] in node:
            raise ValueError(f"two leaves at the path {'.'.join(path)}")
        node[path[-1]] = leaf
    return out


def _lookup(tree: dict, path: tuple[str, ...]) -> Any:
    for name in path:
        tree = tree[name]
    return tree


def to_tree(tree: PyTree) -> dict:
    """The array leaves of `tree` as a nested dict keyed by their paths (PRNG keys as their
    key data), whole: in a multi-process run, arrays split over the processes (e.g. PPO's
    environments) are gathered from all of them, so every process must call it."""
    return _nest([(p, fetch(jr.key_data(x) if _is_key(x) else x)) for p, x in _paths(tree)])


def _abstract_tree(like: PyTree, sharding) -> dict:
    def leaf(x):
        if _is_key(x):
            x = jax.eval_shape(jr.key_data, x)
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding)

    return _nest([(p, leaf(x)) for p, x in _paths(like)])


def from_tree(like: PyTree, tree: dict) -> PyTree:
    """`like` (concrete or abstract) with its array leaves read from `tree` (`to_tree`'s
    layout)."""
    params, static = eqx.partition(like, _is_array)
    treedef = jtu.tree_structure(params)
    leaves = []
    for path, x in _paths(like):
        value = jnp.asarray(_lookup(tree, path))
        leaves.append(jr.wrap_key_data(value, impl=jax.random.key_impl(x)) if _is_key(x) else value)
    return eqx.combine(jtu.tree_unflatten(treedef, leaves), static)


def _state_parts(state: TrainState) -> dict:
    return {
        "step": state.step,
        "key": state.key,
        "opt_state": state.opt_state,
        "extra": state.extra,
    }


def digests(tree: dict) -> dict[str, str]:
    """`{"a.b.c": digest}` of every array of a `to_tree` tree: BLAKE2b of its dtype, shape
    and bytes."""
    out = {}
    for path, leaf in _paths(tree):
        x = np.ascontiguousarray(np.asarray(leaf))
        h = hashlib.blake2b(f"{x.dtype.str}{x.shape}".encode(), digest_size=16)
        h.update(x.tobytes())
        out[".".join(path)] = h.hexdigest()
    return out


def _check_finite(tree: PyTree) -> None:
    floats = eqx.filter(tree, eqx.is_inexact_array)
    if not all(bool(jnp.all(jnp.isfinite(x))) for x in jtu.tree_leaves(floats)):
        raise ValueError("it holds non-finite values")


class _DropReadOnlyNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Given directory is read only")


@contextlib.contextmanager
def _quiet_orbax():
    """Drop the notice Orbax logs (through absl) for every read-only `CheckpointManager`: a
    user who loads a run cannot act on it. Other Orbax messages pass."""
    logger, notice = logging.getLogger("absl"), _DropReadOnlyNotice()
    logger.addFilter(notice)
    try:
        yield
    finally:
        logger.removeFilter(notice)


class Checkpoints:
    """The `checkpoints/` folder of a run directory."""

    def __init__(self, directory: Path, keep: int = 3, *, read_only: bool = False):
        self.directory = Path(directory).absolute() / "checkpoints"
        # Read-only: the options Orbax would otherwise reset itself, with a warning each.
        options = ocp.CheckpointManagerOptions(
            max_to_keep=None if read_only else keep,
            save_interval_steps=0 if read_only else 1,
            create=not read_only,
            read_only=read_only,
            enable_async_checkpointing=False,
        )
        with _quiet_orbax():
            self.manager = ocp.CheckpointManager(self.directory, options=options)

    def steps(self) -> list[int]:
        """Saved steps, oldest first."""
        return sorted(self.manager.all_steps())

    def is_old_format(self, step: int) -> bool:
        """Whether the checkpoint of `step` was written in format 1 (before `TrainState`)."""
        return (self.directory / str(step) / "opt_state").exists()

    def save(self, state: TrainState) -> None:
        """Save the array leaves of `state`: its model and the rest as two items, and a
        digest of every leaf (a third item, `digests`) that `restore` checks."""
        step = int(state.step)
        model, parts = to_tree(state.model), to_tree(_state_parts(state))
        args = ocp.args.Composite(
            model=ocp.args.StandardSave(model),  # pyright: ignore[reportCallIssue]
            train_state=ocp.args.StandardSave(parts),  # pyright: ignore[reportCallIssue]
            digests=ocp.args.JsonSave(  # pyright: ignore[reportCallIssue]
                {"model": digests(model), "train_state": digests(parts)}
            ),
        )
        if step in self.manager.all_steps():
            # Only after a resume fell back past an unreadable checkpoint of this step.
            self.manager.delete(step)
        self.manager.save(step, args=args, force=True)
        self.manager.wait_until_finished()

    def _verify(self, step: int, restored: dict[str, dict]) -> None:
        """Check the items `restored` from the checkpoint of `step` against the digests saved
        with it (checkpoints written before digests existed are not checked)."""
        if not (self.directory / str(step) / "digests").exists():
            return
        args = ocp.args.Composite(digests=ocp.args.JsonRestore())  # pyright: ignore[reportCallIssue]
        saved = self.manager.restore(step, args=args)["digests"]
        for item, tree in restored.items():
            now = digests(tree)
            bad = sorted(k for k in set(saved[item]) | set(now) if now.get(k) != saved[item].get(k))
            if bad:
                where = ", ".join(bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
                raise ValueError(f"its {item} does not match the digests saved with it at {where}")

    def _warn(self, step: int, error: Exception) -> None:
        message = str(error).splitlines()[0] if str(error) else ""
        warnings.warn(
            f"Checkpoint at step {step} in {self.directory} could not be read "
            f"({type(error).__name__}: {message}); trying the previous one.",
            CheckpointWarning,
            stacklevel=3,
        )

    def restore(self, like: TrainState, at: int | None = None) -> TrainState | None:
        """The newest readable checkpoint (or the one `at` that step) as a `TrainState` shaped
        like `like` (concrete or abstract), on one local device.

        A checkpoint that fails to read (truncated, corrupt, wrong shapes, non-finite values) is
        reported with a warning and the next older one is tried; `None` if none reads.

        **Raises:** `OldCheckpointError` if the newest checkpoint tried is of format 1."""
        device = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
        items = {
            "model": ocp.args.StandardRestore(_abstract_tree(like.model, device)),  # pyright: ignore[reportCallIssue]
            "train_state": ocp.args.StandardRestore(  # pyright: ignore[reportCallIssue]
                _abstract_tree(_state_parts(like), device)
            ),
        }
        for step in reversed(self.steps() if at is None else [at]):
            if self.is_old_format(step):
                raise OldCheckpointError(
                    f"The checkpoint at step {step} in {self.directory} was written by an older "
                    "zoo (before runs saved a whole TrainState): its model loads (runs.load, zoo "
                    "eval), but the run cannot be resumed. Start a new run in another --out."
                )
            try:
                restored = self.manager.restore(step, args=ocp.args.Composite(**items))
                self._verify(step, {k: restored[k] for k in items})
                model = from_tree(like.model, restored["model"])
                parts = from_tree(_state_parts(like), restored["train_state"])
                state = TrainState(model=model, **parts)
                _check_finite((state.model, state.opt_state, state.extra))
                if int(state.step) != step:
                    raise ValueError(f"it says it is step {int(state.step)}")
                return state
            except Exception as error:  # any failure means: try the older one
                self._warn(step, error)
        return None

    def restore_model(self, like: PyTree, at: int | None = None) -> tuple[int, PyTree] | None:
        """`(step, model)` of the newest readable checkpoint (or the one `at` that step), the
        model shaped like `like`; reads both formats. `None` if none reads."""
        device = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
        for step in reversed(self.steps() if at is None else [at]):
            try:
                if self.is_old_format(step):
                    model = self._restore_old_model(like, step, device)
                else:
                    items = {"model": ocp.args.StandardRestore(_abstract_tree(like, device))}  # pyright: ignore[reportCallIssue]
                    restored = self.manager.restore(step, args=ocp.args.Composite(**items))
                    self._verify(step, {"model": restored["model"]})
                    model = from_tree(like, restored["model"])
                _check_finite(model)
                return step, model
            except Exception as error:
                self._warn(step, error)
        return None

    def _restore_old_model(self, like: PyTree, step: int, device) -> PyTree:
        """Format 1: the model's array leaves as a list, in `jtu.tree_leaves` order."""
        abstract = [
            jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=device) for _, x in _paths(like)
        ]
        items = {
            "model": ocp.args.StandardRestore(abstract),  # pyright: ignore[reportCallIssue]
            "state": ocp.args.StandardRestore(  # pyright: ignore[reportCallIssue]
                {
                    "key": jax.ShapeDtypeStruct((2,), jnp.uint32, sharding=device),
                    "step": jax.ShapeDtypeStruct((), np.int32, sharding=device),
                }
            ),
        }
        restored = self.manager.restore(step, args=ocp.args.Composite(**items))
        if int(restored["state"]["step"]) != step:
            raise ValueError(f"it says it is step {int(restored['state']['step'])}")
        params, static = eqx.partition(like, _is_array)
        leaves = [jnp.asarray(x) for x in restored["model"]]
        return eqx.combine(jtu.tree_unflatten(jtu.tree_structure(params), leaves), static)
