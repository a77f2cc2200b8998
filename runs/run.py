"""Runs: train, resume, evaluate and load a run directory.

A run directory holds `config.json` (the whole `TrainConfig`), `metrics.jsonl` (one JSON
object per line: training metrics per chunk of outer steps, evaluation metrics per pool) and
`checkpoints/` (Orbax). Everything a run does is fixed by its config: the same config gives
the same numbers, and a resumed run gives the same numbers as an uninterrupted one.
"""

import dataclasses
import json
import time
from pathlib import Path
from typing import Any, NamedTuple

import equinox as eqx
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
import numpy as np
from jaxtyping import PRNGKeyArray

import plugins
from tasks._base import AbstractTask
from zoo._base import AbstractInContextLearner, Learner

from .checkpoint import Checkpoints
from .config import TrainConfig, from_dict, to_dict
from .engine import (
    Trainer,
    collect_embeddings,
    evaluate_pool,
    exact_match,
    make_mesh,
    outer_optimizer,
    train_chunk,
)
from .metrics import linear_decodability, module_alignment

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"


class RunError(ValueError):
    """A run cannot start as configured; the message says what to change."""


class TrainingDiverged(RuntimeError):
    """The loss became non-finite; the run stopped and kept its last good checkpoint."""


class Loaded(NamedTuple):
    """What `load` gives back."""

    model: Learner
    config: TrainConfig
    step: int


# --------------------------------------------------------------------------- building


def _keys(seed: int) -> tuple[PRNGKeyArray, PRNGKeyArray, PRNGKeyArray]:
    """(build, train, eval) keys of a run."""
    root = jr.key(seed)
    return jr.fold_in(root, 0), jr.fold_in(root, 1), jr.fold_in(root, 2)


def resolve(config: TrainConfig) -> TrainConfig:
    """Fill in `task_name`/`model_name` from the config types if missing and check that the
    configs belong to the named plugins."""
    changes = {}
    for kind, lookup, entries in (
        ("task", plugins.task_spec, plugins.list_tasks),
        ("model", plugins.model_spec, plugins.list_models),
    ):
        cfg, name = getattr(config, kind), getattr(config, f"{kind}_name")
        if not name:
            matches = [e for e in entries() if type(cfg) is e.spec.config]
            if len(matches) != 1:
                raise RunError(
                    f"Cannot tell which {kind} plugin {type(cfg).__name__} belongs to; set {kind}_name."
                )
            name = f"{matches[0].dist}:{matches[0].name}"
            changes[f"{kind}_name"] = name
        spec = lookup(name)
        if not isinstance(cfg, spec.config):
            raise RunError(
                f"The {kind} config is a {type(cfg).__name__}, but {kind} {name!r} takes a "
                f"{spec.config.__name__}."
            )
    return dataclasses.replace(config, **changes) if changes else config


def build_task(config: TrainConfig, key: PRNGKeyArray | None = None) -> AbstractTask:
    """The task of a run (built from its seed unless `key` is given)."""
    key = _keys(config.run.seed)[0] if key is None else key
    factory = plugins.task_spec(config.task_name).load()
    return factory(config.task, key=jr.fold_in(key, 0))


def build(config: TrainConfig) -> tuple[AbstractTask, Learner]:
    """The task and the freshly initialized model of a run."""
    key = _keys(config.run.seed)[0]
    task = build_task(config, key)
    factory = plugins.model_spec(config.model_name).load()
    model = factory(config.model, io=task.io, key=jr.fold_in(key, 1))
    return task, model


# --------------------------------------------------------------------------- config files


def save_config(config: TrainConfig, directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / CONFIG_FILE).write_text(json.dumps(to_dict(config), indent=2) + "\n")


def read_config(directory: Path) -> TrainConfig:
    """The `TrainConfig` saved in a run directory."""
    path = Path(directory) / CONFIG_FILE
    if not path.is_file():
        raise RunError(f"{directory} holds no zoo run (no {CONFIG_FILE}); pass a run directory.")
    return config_from_dict(json.loads(path.read_text()))


def config_from_dict(data: dict) -> TrainConfig:
    """The `TrainConfig` of `to_dict(config)`: the task and model settings are rebuilt as the
    config classes of the registered task and model it names."""
    config = from_dict(TrainConfig, data)
    task_cfg = from_dict(plugins.task_spec(config.task_name).config, data["task"])
    model_cfg = from_dict(plugins.model_spec(config.model_name).config, data["model"])
    return dataclasses.replace(config, task=task_cfg, model=model_cfg)


def _differences(a: Any, b: Any, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += _differences(a.get(k), b.get(k), f"{prefix}{k}.")
        return out
    return [] if a == b else [f"{prefix[:-1]}: saved {a!r}, given {b!r}"]


def prepare(config: TrainConfig, out: Path, resume: bool) -> TrainConfig:
    """Check everything that can be checked before compiling; return the resolved config."""
    config = resolve(config)
    try:
        make_mesh(config.run.devices, config.outer.meta_batch)
    except ValueError as error:
        raise RunError(str(error)) from None
    try:  # builds task and model abstractly: their own checks run, nothing is computed
        eqx.filter_eval_shape(build, config)
    except ValueError as error:
        raise RunError(str(error)) from None
    out = Path(out)
    if (out / CONFIG_FILE).exists():
        if not resume:
            raise RunError(
                f"{out} already holds a run. Pass --resume to continue it, or choose another --out; "
                "nothing there was changed."
            )
        saved = to_dict(read_config(out))
        given = to_dict(config)
        del saved["run"]["steps"], given["run"]["steps"]
        diff = _differences(saved, given)
        if diff:
            raise RunError(
                f"--resume: the settings differ from the run saved in {out} (only run.steps may "
                "change):\n  " + "\n  ".join(diff)
            )
    elif out.exists() and any(out.iterdir()):
        raise RunError(
            f"{out} is not empty and holds no zoo run; choose a new or empty --out directory."
        )
    return config


# --------------------------------------------------------------------------- metrics


def _write_metrics(path: Path, rows: list[dict]) -> None:
    with path.open("a") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def read_metrics(directory: Path) -> list[dict]:
    """All rows of a run's `metrics.jsonl`."""
    path = Path(directory) / METRICS_FILE
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _truncate_metrics(directory: Path, step: int) -> None:
    """Drop rows written after `step` (by a run killed after its last checkpoint)."""
    rows = [r for r in read_metrics(directory) if r["step"] <= step]
    (directory / METRICS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))


def _floats(tree: dict) -> dict[str, float]:
    return {k: float(v) for k, v in tree.items()}


def evaluate(
    model: Learner,
    task: AbstractTask,
    config: TrainConfig,
    *,
    inner_steps: int | None = None,
    key: PRNGKeyArray | None = None,
) -> dict[str, dict[str, float]]:
    """Query metrics of `model` on every pool of `task` other than `train`: the same tasks and
    data at every call with the same config (the pool's tasks come from the run's eval key)."""
    key = _keys(config.run.seed)[2] if key is None else key
    steps = inner_steps if inner_steps is not None else config.inner.eval_steps
    steps = config.inner.steps if steps is None else steps
    results = {}
    for i, pool in enumerate(task.pools()):
        if pool == "train":
            continue
        metrics = evaluate_pool(
            model,
            task,
            jr.fold_in(key, i),
            pool,
            config.inner,
            steps,
            config.eval.tasks,
            min(config.eval.batch, config.eval.tasks),
        )
        results[pool] = _floats(metrics)
    episodes = task.test_episodes() if config.eval.test_episodes else []
    if episodes and isinstance(model, AbstractInContextLearner):
        scores = [
            float(
                exact_match(
                    model, e.support.x, e.support.y, e.query.x, e.query.y, config.eval.query_batch
                )
            )
            for e in episodes
        ]
        results["test_episodes"] = {
            "accuracy": sum(scores) / len(scores),
            "accuracy_min": min(scores),
            "accuracy_max": max(scores),
            "queries": float(episodes[0].query.x.shape[0]),
        }
    return results


def identification(
    model: Learner,
    task: AbstractTask,
    config: TrainConfig,
    *,
    inner_steps: int | None = None,
    key: PRNGKeyArray | None = None,
) -> dict[str, float]:
    """Identification metrics of `model` (see `runs.metrics`), where the model and task allow:

    - `r2_test`, `r2_ood`: linear decodability of the task latent from the adapted
      `embedding()`, a ridge decoder fitted on `eval.tasks` training-pool tasks and scored on
      as many fresh training-pool tasks and on the `ood` pool;
    - `alignment`: module alignment of `model.modules()` with `task.modules()`, from the
      inferred codes of the fitting tasks.

    Empty if the model has no embedding."""
    if model.embedding() is None:
        return {}
    key = _keys(config.run.seed)[2] if key is None else key
    steps = inner_steps if inner_steps is not None else config.inner.eval_steps
    steps = config.inner.steps if steps is None else steps
    n, batch = config.eval.tasks, min(config.eval.batch, config.eval.tasks)

    def collect(pool: str, i: int):
        emb, lat = collect_embeddings(
            model, task, jr.fold_in(key, 1000 + i), pool, config.inner, steps, n, batch
        )
        return emb, lat.reshape(n, -1)

    fit_emb, fit_lat = collect("train", 0)
    test_emb, test_lat = collect("train", 1)
    out = {"r2_test": float(linear_decodability(fit_emb, fit_lat, test_emb, test_lat))}
    if "ood" in task.pools():
        ood_emb, ood_lat = collect("ood", 2)
        out["r2_ood"] = float(linear_decodability(fit_emb, fit_lat, ood_emb, ood_lat))
    teacher, student = task.modules(), model.modules()
    if teacher is not None and student is not None:
        out["alignment"] = float(module_alignment(teacher, student, fit_lat, fit_emb))
    return out


# --------------------------------------------------------------------------- training


def train(
    config: TrainConfig, out: Path | str, *, resume: bool = False, progress: bool = True
) -> Path:
    """Meta-train as `config` says, writing the run directory `out`.

    With `resume=True` an existing run in `out` continues from its newest readable checkpoint
    (its settings must match `config`, except `run.steps`); an empty `out` starts afresh.
    Raises `RunError` before compiling anything if the settings cannot work, and
    `TrainingDiverged` if the loss becomes non-finite (the last good checkpoint stays).
    """
    out = Path(out)
    config = prepare(config, out, resume)
    task, model = build(config)
    optimizer = outer_optimizer(config.outer, config.run.steps)
    opt_state = optimizer.init(eqx.filter(model, eqx.is_array))
    _, train_key, _ = _keys(config.run.seed)
    trainer = Trainer(
        task=task,
        inner=config.inner,
        optimizer=optimizer,
        meta_batch=config.outer.meta_batch,
        mesh=make_mesh(config.run.devices, config.outer.meta_batch),
    )
    checkpoints = Checkpoints(out, keep=config.run.keep)
    step = 0
    if (out / CONFIG_FILE).exists():
        restored = checkpoints.restore(model, opt_state)
        if restored is not None:
            step, model, opt_state = restored
        _truncate_metrics(out, step)
    save_config(config, out)
    if step == 0 and not checkpoints.steps():
        checkpoints.save(0, model, opt_state, jr.key_data(train_key))

    model, opt_state = trainer.replicate((model, opt_state))
    metrics_path = out / METRICS_FILE
    total = config.run.steps
    per_call = config.run.steps_per_call
    bar = _progress(total, step, progress)
    start = time.perf_counter()
    last_good = checkpoints.steps()[-1] if checkpoints.steps() else 0
    try:
        while step < total:
            # Chunks end on multiples of steps_per_call, so a resumed run splits alike.
            length = min(per_call - step % per_call, total - step)
            model, opt_state, metrics = train_chunk(
                trainer, model, opt_state, train_key, jnp.asarray(step), length
            )
            losses = np.asarray(metrics["loss"])
            if not np.all(np.isfinite(losses)):
                bad = step + int(np.argmin(np.isfinite(losses)))
                raise TrainingDiverged(
                    f"The training loss became non-finite at step {bad}; the run stopped. Its last "
                    f"good checkpoint (step {last_good}) is kept in {checkpoints.directory}. "
                    "Lower --outer.lr or --inner.lr, or clip gradients harder (--outer.clip)."
                )
            step += length
            row = {"step": step, "pool": "train", **_floats(jtu.tree_map(jnp.mean, metrics))}
            row["time"] = time.perf_counter() - start
            rows = [row]
            if (config.eval.every and step % config.eval.every == 0) or step == total:
                for pool, values in evaluate(model, task, config).items():
                    rows.append({"step": step, "pool": pool, **values})
                if found := identification(model, task, config):
                    rows.append({"step": step, "pool": "identification", **found})
            _write_metrics(metrics_path, rows)
            if step % config.run.checkpoint_every == 0 or step == total:
                checkpoints.save(step, model, opt_state, jr.key_data(train_key))
                last_good = step
            bar.update(length)
            bar.set_postfix(_postfix(row))
    finally:
        bar.close()
    return out


def _postfix(row: dict) -> dict[str, str]:
    """What the progress bar shows: the loss and accuracy of the last chunk."""
    return {k: f"{row[k]:.4f}" for k in ("loss", "accuracy") if k in row}


def _progress(total: int, initial: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc="meta-train", unit="step", disable=not enabled)


# --------------------------------------------------------------------------- loading


def load(directory: Path | str, step: int | None = None) -> Loaded:
    """The trained model of a run directory, its config and the step it was saved at.

    Needs no training code: the model's structure is rebuilt (abstractly, without computing
    anything) from `config.json` and its arrays come from the newest readable checkpoint (or
    the one at `step`).
    """
    directory = Path(directory)
    config = read_config(directory)
    _, model = eqx.filter_eval_shape(build, config)
    checkpoints = Checkpoints(directory, keep=config.run.keep)
    if step is not None and step not in checkpoints.steps():
        raise RunError(
            f"No checkpoint at step {step} in {directory}; there are {checkpoints.steps()}."
        )
    restored = checkpoints.restore(model, None, at=step)
    if restored is None:
        raise RunError(f"{directory} has no readable checkpoint.")
    step, model, _ = restored
    return Loaded(model, config, step)
