"""Runs: train, resume, evaluate and load a run directory.

A run directory holds `config.json` (the whole `TrainConfig`), `metrics.jsonl` (one JSON
object per line: training metrics per chunk of steps, evaluation metrics per pool) and
`checkpoints/` (Orbax, the whole `TrainState`). Everything a run does is fixed by its config:
the same config gives the same numbers, and a resumed run gives the same numbers as an
uninterrupted one.

Training is a short loop over a `TrainState`: the run's algorithm (`runs.algorithms`) takes
compiled chunks of steps, and hooks `(hook, every)` log metrics, evaluate, checkpoint and show
progress every so many steps.
"""

import dataclasses
import importlib.metadata
import json
import os
import shutil
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import equinox as eqx
import jax
import jax.random as jr
from jaxtyping import PRNGKeyArray

import plugins
from tasks import AbstractEnvironment, AbstractTask
from zoo import AbstractLearner

from . import algorithms, checks
from .algorithms.base import AbstractAlgorithm
from .checkpoint import Checkpoints, OldCheckpointError
from .config import InnerConfig, PluginSource, TrainConfig, from_dict, to_dict
from .distributed import barrier, is_primary, multiprocess
from .hooks import Hook
from .lock import LOCK_FILE, DirectoryLock, LockedError, atomic_write_text
from .provenance import provenance
from .sharding import make_mesh, replicate
from .trainer import RunInterrupted, Trainer, TrainingDiverged  # noqa: F401 (raised by `train`)

CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.jsonl"


class RunError(ValueError):
    """A run cannot start as configured; the message says what to change."""


class UnfinishedRunWarning(UserWarning):
    """`load` read a checkpoint before the run's last step."""


class Loaded(NamedTuple):
    """What `load` gives back."""

    model: AbstractLearner
    config: TrainConfig
    step: int


# --------------------------------------------------------------------------- building


def _keys(seed: int) -> tuple[PRNGKeyArray, PRNGKeyArray, PRNGKeyArray]:
    """(build, train, eval) keys of a run."""
    root = jr.key(seed)
    return jr.fold_in(root, 0), jr.fold_in(root, 1), jr.fold_in(root, 2)


_KINDS = {"task": "tasks", "model": "models"}
"""The run's plugins: the field prefix in `TrainConfig` -> the kind of `plugins.KINDS`."""


def resolve(config: TrainConfig) -> TrainConfig:
    """Fill in `task_name`/`model_name` from the config types if missing, check that the
    configs belong to the named plugins, and record the distribution (and version) providing
    each (`task_source`, `model_source`), through which a saved run finds them again.

    **Raises:** `RunError` if a plugin cannot be found or its config does not fit."""
    changes: dict[str, Any] = {}
    for kind, plural in _KINDS.items():
        cfg, name = getattr(config, kind), getattr(config, f"{kind}_name")
        if not name:
            matches = [e for e in plugins.entries(plural) if type(cfg) is e.spec.config]
            if len(matches) != 1:
                raise RunError(
                    f"Cannot tell which {kind} plugin {type(cfg).__name__} belongs to; set {kind}_name."
                )
            name = f"{matches[0].dist}:{matches[0].name}"
            changes[f"{kind}_name"] = name
        entry = plugin_entry(dataclasses.replace(config, **changes), kind)
        if not isinstance(cfg, entry.spec.config):
            raise RunError(
                f"The {kind} config is a {type(cfg).__name__}, but {kind} {name!r} takes a "
                f"{entry.spec.config.__name__}."
            )
        changes[f"{kind}_source"] = PluginSource(entry.dist, entry.version)
    if config.algorithm is not None and not config.algorithm_name:
        # The algorithm whose config class the settings are (e.g. a preset's BilevelConfig).
        matches = [s for s in algorithms.specs() if type(config.algorithm) is s.config]
        if len(matches) == 1:
            changes["algorithm_name"] = matches[0].name
    return dataclasses.replace(config, **changes)


def plugin_entry(config: TrainConfig, kind: str) -> plugins.Entry:
    """The registry entry of the run's `kind` (`"task"` or `"model"`) plugin: looked up
    through the distribution its config records (`task_source`, `model_source`), or by name in
    a config that records none.

    **Raises:** `RunError` naming the package to install if the recorded distribution is not
    installed or no longer provides the plugin, or the lookup's own message otherwise."""
    name, source = getattr(config, f"{kind}_name"), getattr(config, f"{kind}_source")
    query = name if source is None else f"{source.dist}:{name.rpartition(':')[2]}"
    try:
        return plugins.entry(_KINDS[kind], query)
    except plugins.UnknownPluginError as error:
        if source is None:
            raise RunError(str(error)) from None
        raise RunError(_missing_plugin(kind, name, source, str(error))) from None
    except plugins.PluginError as error:
        raise RunError(str(error)) from None


def _missing_plugin(kind: str, name: str, source: PluginSource, lookup: str) -> str:
    """What to do when the distribution recorded for a run's plugin does not provide it."""
    bare = name.rpartition(":")[2]
    saved = f" {source.version}" if source.version else ""
    pin = f"{source.dist}=={source.version}" if source.version else source.dist
    failed = [line for line in lookup.splitlines() if "failed to load" in line]
    if source.dist == "__main__":
        return (
            f"The run's {kind} {bare!r} was added with plugins.register (distribution "
            "'__main__') in the process that made the run; register the same spec again "
            "before loading it."
        )
    try:
        installed = importlib.metadata.version(source.dist)
    except importlib.metadata.PackageNotFoundError:
        return (
            f"The run's {kind} {bare!r} comes from the distribution {source.dist!r}{saved}, "
            f"which is not installed. Install it: pip install '{pin}'"
        )
    if failed:
        return (
            f"The run's {kind} {bare!r} comes from the distribution {source.dist!r}{saved} "
            f"(installed: {installed}), whose plugin fails to load:\n" + "\n".join(failed)
        )
    return (
        f"The run's {kind} {bare!r} comes from the distribution {source.dist!r}{saved}; the "
        f"installed {source.dist} {installed} provides no {kind} of that name. Install the "
        f"version the run was made with: pip install '{pin}'"
    )


def _factory(config: TrainConfig, kind: str) -> tuple[plugins.Entry, Callable[..., Any]]:
    """The run's `kind` plugin and its imported factory.

    **Raises:** `RunError` if the factory cannot be imported or called as factories are."""
    entry = plugin_entry(config, kind)
    try:
        factory = entry.spec.load()
    except Exception as error:
        # A class of an older plugin API says more than what that made fail (e.g. its factory).
        checks.check_classes(entry, kind, also=f"{type(error).__name__}: {error}")
        hint = ""
        if isinstance(error, ModuleNotFoundError) and entry.dist != "__main__":
            hint = (
                f" The distribution {entry.dist!r} declares it: reinstall it (pip install "
                f"--force-reinstall {entry.dist}), or mend the spec's factory string."
            )
        raise RunError(
            f"The {kind} plugin {entry.name!r} of {entry.dist!r} cannot be built: its factory "
            f"{entry.spec.factory!r} does not load ({type(error).__name__}: {error}).{hint}"
        ) from None
    checks.check_classes(entry, kind)
    return entry, factory


def _check_built(entry: plugins.Entry, kind: str, built: Any) -> None:
    """Refuse what a factory returned if it is not a task (model), before anything is written:
    later it would fail deep in the engine or in Orbax, past the creation of the run folder."""
    expected = (AbstractTask, AbstractEnvironment) if kind == "task" else (AbstractLearner,)
    factory = (
        f"The factory {entry.spec.factory!r} of the {kind} plugin {entry.name!r} ({entry.dist!r})"
    )
    if not isinstance(built, expected):
        names = " or ".join(f"{c.__module__.split('.')[0]}.{c.__name__}" for c in expected)
        raise RunError(f"{factory} returned a {type(built).__name__}; it must return a {names}.")
    if kind == "model" and not jax.tree_util.tree_leaves(eqx.filter(built, eqx.is_array)):
        raise RunError(
            f"{factory} returned a {type(built).__name__} with no array leaves: nothing to "
            "train or to checkpoint. Hold the parameters as JAX arrays (e.g. in eqx.nn layers)."
        )


def build_task(config: TrainConfig, key: PRNGKeyArray | None = None) -> AbstractTask:
    """The task of a run (built from its seed unless `key` is given)."""
    key = _keys(config.run.seed)[0] if key is None else key
    entry, factory = _factory(config, "task")
    try:
        task = factory(config.task, key=jr.fold_in(key, 0))
    except TypeError as error:  # e.g. an abstract class of an older plugin API
        checks.check_instantiation(entry, "task", error)
        raise
    _check_built(entry, "task", task)
    return task


def build(config: TrainConfig) -> tuple[AbstractTask, AbstractLearner]:
    """The task and the freshly initialized model of a run.

    **Raises:** `RunError` if a plugin's factory cannot be loaded or returns no task (model)."""
    key = _keys(config.run.seed)[0]
    task = build_task(config, key)
    entry, factory = _factory(config, "model")
    try:
        model = factory(config.model, io=task.io, key=jr.fold_in(key, 1))
    except TypeError as error:
        checks.check_instantiation(entry, "model", error)
        raise
    _check_built(entry, "model", model)
    return task, model


# --------------------------------------------------------------------------- config files


def save_config(config: TrainConfig, directory: Path) -> None:
    """Write `config.json` whole or not at all (a temporary file renamed over it)."""
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write_text(directory / CONFIG_FILE, json.dumps(to_dict(config), indent=2) + "\n")


def read_config(directory: Path) -> TrainConfig:
    """The `TrainConfig` saved in a run directory.

    **Raises:** `RunError` if there is none, it does not read, or a plugin it names is missing
    (the message names the package to install, where `config.json` records it)."""
    path = Path(directory) / CONFIG_FILE
    if not path.is_file():
        raise RunError(f"{directory} holds no zoo run (no {CONFIG_FILE}); pass a run directory.")
    try:
        return config_from_dict(json.loads(path.read_text()))
    except RunError as error:
        raise RunError(f"{directory}: {error}") from None
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise RunError(
            f"{path} cannot be read as a zoo run's config ({type(error).__name__}: {error}). "
            "Was it edited by hand? Restore it, or start a new run in another --out."
        ) from None


def config_from_dict(data: dict) -> TrainConfig:
    """The `TrainConfig` of `to_dict(config)`: the task, model and algorithm settings are
    rebuilt as the config classes of the task and model plugins (found through the
    distributions the config records, see `plugin_entry`) and of the algorithm it names.
    Configs saved by older versions are read too (a `"step"` schedule is the piecewise
    schedule's default; no algorithm means the one chosen from the kinds; no recorded
    distribution means the one that provides the name, or whose config class reads the saved
    settings).

    **Raises:** `RunError` if a plugin is missing (see `plugin_entry`)."""
    data = json.loads(json.dumps(data))  # a copy to migrate
    algorithm = data.pop("algorithm", None) or {}
    # Before 0.2 the inner loop and outer optimizer were sections of the run's config.
    legacy = {section: data.pop(section) for section in _LEGACY_SECTIONS if section in data}
    for outer in (legacy.get("outer", {}), algorithm.get("outer", {})):
        if isinstance(outer, dict) and outer.get("schedule") == "step":
            outer["schedule"] = "piecewise"
    config = from_dict(TrainConfig, data)
    changes: dict[str, Any] = {}
    for kind in _KINDS:
        source = getattr(config, f"{kind}_source")
        if source is None:
            entry, chosen = _legacy_entry(config, kind, data[kind])
            if chosen:  # the name alone would not find it again
                changes[f"{kind}_source"] = PluginSource(entry.dist)
        else:
            entry = plugin_entry(config, kind)
            # The distribution as installed now (a former name of ours becomes the current one).
            changes[f"{kind}_source"] = PluginSource(entry.dist, source.version)
        cls = entry.spec.config
        changes[kind] = from_dict(cls, _with_legacy_defaults(cls, data[kind]))
    config = dataclasses.replace(config, **changes)
    if not config.algorithm_name and (legacy or algorithm):  # its algorithm left unnamed
        named = with_algorithm(config, *eqx.filter_eval_shape(build, config))
        config = dataclasses.replace(config, algorithm_name=named.algorithm_name)
    if config.algorithm_name:
        spec = algorithms.get(config.algorithm_name)
        fields = {f.name for f in dataclasses.fields(spec.config)}
        # A legacy section goes to the algorithm that reads it; the others' were defaults.
        algorithm = {**{k: v for k, v in legacy.items() if k in fields}, **algorithm}
        algorithm = _with_legacy_defaults(spec.config, algorithm)
        config = dataclasses.replace(config, algorithm=from_dict(spec.config, algorithm))
    return config


_LEGACY_SECTIONS = ("inner", "outer")
"""Sections of `TrainConfig` before 0.2, now fields of the algorithms' configs."""


def _legacy_entry(config: TrainConfig, kind: str, saved: Any) -> tuple[plugins.Entry, bool]:
    """The `kind` plugin of a config saved before the providing distribution was recorded:
    the one its name resolves to, or, where several distributions provide the name, the one
    whose config class reads the saved settings (then with `True`: chosen among several)."""
    name = getattr(config, f"{kind}_name")
    try:
        return plugins.entry(_KINDS[kind], name), False
    except plugins.AmbiguousPluginError as error:
        bare = name.strip().lower().replace("_", "-")
        candidates = [e for e in plugins.entries(_KINDS[kind]) if e.name == bare]
        fits = []
        for candidate in candidates:
            cls = candidate.spec.config
            try:
                from_dict(cls, _with_legacy_defaults(cls, saved))
            except (ValueError, TypeError):
                continue
            fits.append(candidate)
        if len(fits) == 1:
            return fits[0], True
        raise RunError(
            f"{error} The run's config.json was saved before runs recorded which distribution "
            f'provides each plugin; add e.g. "{kind}_source": {{"dist": "{candidates[0].dist}"}} '
            "to it to say which."
        ) from None
    except plugins.UnknownPluginError as error:
        raise RunError(
            f"{error}\nThe run's config.json was saved before runs recorded which distribution "
            f"provides each plugin: install the package that provides the {kind} {name!r}."
        ) from None


def _with_legacy_defaults(cls: Any, data: Any) -> Any:
    """A plugin config's saved `data` with the fields it lacks, of those its class added later,
    at the values the runs saved before them ran with (the class's `LEGACY_DEFAULTS`, if any;
    e.g. the SCAN episodes' `validation`, Meta-RIMs' `outer_data`). Task, model and algorithm
    configs alike."""
    legacy = getattr(cls, "LEGACY_DEFAULTS", None)
    if not legacy or not isinstance(data, dict):
        return data
    return {**legacy, **data}


def _differences(a: Any, b: Any, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += _differences(a.get(k), b.get(k), f"{prefix}{k}.")
        return out
    return [] if a == b else [f"{prefix[:-1]}: saved {a!r}, given {b!r}"]


def with_algorithm(config: TrainConfig, task: Any, model: Any) -> TrainConfig:
    """`config` with its algorithm named and configured: the one it names, checked against the
    kinds of `task` and `model` (concrete or abstract), or the first that accepts them.

    **Raises:** `RunError` if no algorithm fits, or the one named does not."""
    try:
        spec = algorithms.choose(task, model, config.algorithm_name)
    except algorithms.AlgorithmError as error:
        raise RunError(str(error)) from None
    settings = spec.config() if config.algorithm is None else config.algorithm
    if not isinstance(settings, spec.config):
        raise RunError(
            f"The algorithm config is a {type(settings).__name__}, but algorithm {spec.name!r} "
            f"takes a {spec.config.__name__}: pass --algorithm NAME for the algorithm whose "
            "config it is, or give its settings as that algorithm's config."
        )
    return dataclasses.replace(config, algorithm_name=spec.name, algorithm=settings)


def build_algorithm(
    config: TrainConfig, task: AbstractTask, model: AbstractLearner, devices: int | None = None
) -> AbstractAlgorithm:
    """The algorithm of a run, over a mesh of `config.run.devices` devices (or `devices`)."""
    config = with_algorithm(config, task, model)
    spec = algorithms.get(config.algorithm_name)
    devices = config.run.devices if devices is None else devices
    mesh = make_mesh(devices, spec.batch(config), name=spec.split)
    return spec.load()(config, task, model, mesh)


def changeable(config: TrainConfig) -> frozenset[str]:
    """The settings `--resume --allow-changes` may change in a run of `config` (dotted paths
    into `TrainConfig`): those its algorithm's config declares in `CHANGEABLE` (optimizer
    scalars, which leave the shapes of the state alone), under `algorithm.`."""
    declared = getattr(type(config.algorithm), "CHANGEABLE", frozenset())
    return frozenset(f"algorithm.{name}" for name in declared)


HISTORY_FILE = "history.jsonl"


def prepare(
    config: TrainConfig, out: Path, resume: bool, allow_changes: bool = False
) -> TrainConfig:
    """Check everything that can be checked before compiling; return the resolved config
    (plugins and algorithm named)."""
    config = resolve(config)
    for kind in _KINDS:  # imported outside any trace: a module-level array is no tracer
        _factory(config, kind)
    try:  # builds task and model abstractly: their own checks run, nothing is computed
        task, model = eqx.filter_eval_shape(build, config)
    except ValueError as error:
        raise RunError(str(error)) from None
    if config.run.init and not (resume and (Path(out) / CONFIG_FILE).exists()):
        from .pretrained import check_init

        check_init(config.run.init, model)
    task_entry, model_entry = plugin_entry(config, "task"), plugin_entry(config, "model")
    checks.check_episode(task_entry, task)
    checks.check_predictions(task_entry, model_entry, task, model)
    pools = task.pools() if isinstance(task, AbstractTask) else ()
    unknown = [pool for pool in config.eval.pools if pool not in pools]
    if unknown:
        raise RunError(
            f"eval.pools names {unknown}, which the task does not have; its pools are "
            f"{list(pools)}."
        )
    config = with_algorithm(config, task, model)
    spec = algorithms.get(config.algorithm_name)
    try:
        make_mesh(config.run.devices, spec.batch(config), name=spec.split)
    except ValueError as error:
        raise RunError(str(error)) from None
    try:  # the algorithm's own checks (e.g. the model's labels)
        eqx.filter_eval_shape(lambda t, m: build_algorithm(config, t, m), task, model)
    except ValueError as error:
        raise RunError(str(error)) from None
    inner = getattr(config.algorithm, "inner", None)
    if isinstance(inner, InnerConfig) and inner.batch and isinstance(task, AbstractTask):
        _check_inner_batch(inner, task)
    _check_directory(config, Path(out), resume, task, model, allow_changes)
    return config


def _check_inner_batch(inner: InnerConfig, task: AbstractTask) -> None:
    """`--algorithm.inner.batch` (and sequential minibatches) fit the support set of an episode, read
    from the shapes of an abstract sample (nothing is computed)."""
    episode = eqx.filter_eval_shape(lambda t, k: t.sample(k), task, jr.key(0))
    num = jax.tree_util.tree_leaves(episode.support.x)[0].shape[0]
    if inner.batch > num:
        raise RunError(
            f"algorithm.inner.batch={inner.batch} exceeds the {num} support examples of an episode; set "
            f"--algorithm.inner.batch to at most {num} (0 uses them all)."
        )
    steps = max(inner.steps, inner.eval_steps or 0)
    if inner.minibatches == "sequential" and inner.batch * steps > num:
        raise RunError(
            f"--algorithm.inner.minibatches sequential takes {steps} steps x {inner.batch} = "
            f"{steps * inner.batch} support examples, but an episode has {num}; give the task "
            "a larger support set, or lower --algorithm.inner.batch or the inner steps."
        )


def _is_blank(out: Path) -> bool:
    """Whether `out` holds nothing of a run: missing, empty, or only what a start killed before
    writing `config.json` leaves (a lock file, a `checkpoints/` folder with no checkpoint)."""
    if not out.exists():
        return True
    for entry in out.iterdir():
        if entry.name == LOCK_FILE:
            continue
        if entry.name == "checkpoints" and entry.is_dir() and not any(entry.iterdir()):
            continue
        return False
    return True


def _check_directory(
    config: TrainConfig, out: Path, resume: bool, task, model, allow_changes: bool = False
) -> list[str]:
    """`out` can take this run: blank, or (with `resume`) a run with the same settings (or,
    with `allow_changes`, optimizer scalars of `changeable(config)` changed). The changes made."""
    if out.exists() and not out.is_dir():
        raise RunError(f"--out {out} is a file; choose a directory.")
    if not out.exists():
        parent = out.parent
        while not parent.exists():
            parent = parent.parent
        if not parent.is_dir():
            raise RunError(f"--out {out} lies under {parent}, which is a file; choose a directory.")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise RunError(f"--out {out}: {parent} is not writable; choose another directory.")
    elif not os.access(out, os.W_OK | os.X_OK):
        raise RunError(f"--out {out} is not writable; choose another directory.")
    if (out / CONFIG_FILE).exists():
        if not resume:
            raise RunError(
                f"{out} already holds a run. Pass --resume to continue it, or choose another --out; "
                "nothing there was changed."
            )
        saved = read_config(out)
        if not saved.algorithm_name:  # saved before algorithms were named
            saved = with_algorithm(saved, task, model)
        saved, given = to_dict(saved), to_dict(config)
        for key in ("steps", "keep"):  # neither changes a number
            saved["run"].pop(key, None)
            given["run"].pop(key, None)
        for key in ("task_source", "model_source"):
            if saved[key] is None or given[key] is None:  # saved before it was recorded
                del saved[key], given[key]
            else:  # a plugin's upgrade may continue a run
                del saved[key]["version"], given[key]["version"]
        diff = _differences(saved, given)
        allowed = changeable(config)
        changes = [d for d in diff if d.split(":")[0] in allowed] if allow_changes else []
        refused = [d for d in diff if d not in changes]
        if refused:
            raise RunError(
                f"--resume: the settings differ from the run saved in {out} (only run.steps "
                f"and run.keep may change; with --allow-changes, also {', '.join(sorted(allowed)) or 'nothing else'}):\n  "
                + "\n  ".join(refused)
            )
        evaluated = max((r["step"] for r in read_metrics(out) if r["pool"] != "train"), default=0)
        if evaluated > 0 and not (out / "checkpoints").is_dir():
            raise RunError(
                f"--resume: {out} holds evaluations up to step {evaluated} but no checkpoints "
                "(a run exported, or copied from an export, without them), so it cannot "
                "continue; nothing there was changed. Train it again in another --out."
            )
        return changes
    elif not _is_blank(out):
        raise RunError(
            f"{out} is not empty and holds no zoo run; choose a new or empty --out directory."
        )
    return []


# --------------------------------------------------------------------------- metrics


def _append_history(
    out: Path, event: str, step: int, changes: list[str], mesh: jax.sharding.Mesh
) -> None:
    """One line of `history.jsonl` for each start and resume: the step, the time, the settings
    changed with --allow-changes, the code's provenance (version, git commit, JAX, host CPU)
    and the devices the batch is split over (their number and kind): what a run's exact numbers
    depend on (README, "Same seed, same numbers")."""
    record = {"event": event, "step": step, "time": time.time()}
    if changes:
        record["changes"] = changes
    record |= provenance()
    record["devices"] = int(mesh.devices.size)
    if multiprocess():
        record["processes"] = jax.process_count()
    record["device_kind"] = mesh.devices.flat[0].device_kind
    with (out / HISTORY_FILE).open("a") as f:
        f.write(json.dumps(record) + "\n")


def read_history(directory: Path) -> list[dict]:
    """The records of a run's `history.jsonl` (a start, then one per resume; runs saved before
    it existed have none). A torn last line is left out."""
    path = Path(directory) / HISTORY_FILE
    if not path.exists():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    return records


def _write_metrics(path: Path, rows: list[dict]) -> None:
    with path.open("a") as f:
        f.write("".join(json.dumps(row) + "\n" for row in rows))
        f.flush()


def read_metrics(directory: Path) -> list[dict]:
    """All rows of a run's `metrics.jsonl`. A torn last line (a process killed, or the disk
    full, in the middle of an append) is left out; a bad line elsewhere is an error that names
    the file and the line."""
    path = Path(directory) / METRICS_FILE
    if not path.exists():
        return []
    text = path.read_text()
    lines = text.split("\n")
    rows = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            if i == len(lines) and not text.endswith("\n"):  # torn: the append never finished
                break
            raise RunError(
                f"{path}, line {i}, is not JSON: {line[:80]!r}. Remove or mend that line."
            ) from None
    return rows


def _truncate_metrics(directory: Path, step: int) -> None:
    """Drop rows written after `step` (by a run killed after its last checkpoint) and a torn
    last line, rewriting the file atomically."""
    rows = [r for r in read_metrics(directory) if r["step"] <= step]
    text = "".join(json.dumps(r) + "\n" for r in rows)
    atomic_write_text(directory / METRICS_FILE, text)


def evaluate_all(
    model: AbstractLearner,
    task: AbstractTask,
    config: TrainConfig,
    *,
    inner_steps: int | None = None,
    key: PRNGKeyArray | None = None,
) -> dict[str, dict[str, float]]:
    """Every evaluation of the run's algorithm: metrics per pool of `task` other than `train`,
    plus what the algorithm adds (`identification`, `test_episodes`). The same tasks and data
    at every call with the same config (they come from the run's eval key).

    `inner_steps` overrides the inner steps at evaluation (`inner.eval_steps`)."""
    key = _keys(config.run.seed)[2] if key is None else key
    if inner_steps is not None:
        inner = getattr(config.algorithm, "inner", None)
        if not isinstance(inner, InnerConfig):
            raise RunError(
                f"inner_steps={inner_steps} is given, but the run's algorithm "
                f"{config.algorithm_name!r} has no inner loop."
            )
        inner = dataclasses.replace(inner, eval_steps=inner_steps)
        config = dataclasses.replace(
            config, algorithm=dataclasses.replace(config.algorithm, inner=inner)
        )
    algorithm = build_algorithm(config, task, model, devices=1)
    return algorithm.evaluate(task, model, key, config.eval)


def evaluate(
    model: AbstractLearner,
    task: AbstractTask,
    config: TrainConfig,
    *,
    inner_steps: int | None = None,
    key: PRNGKeyArray | None = None,
) -> dict[str, dict[str, float]]:
    """Query metrics of `model` on every pool of `task` other than `train` (and the task's
    fixed test episodes, for in-context learners); see `evaluate_all`."""
    results = evaluate_all(model, task, config, inner_steps=inner_steps, key=key)
    results.pop("identification", None)
    return results


def identification(
    model: AbstractLearner,
    task: AbstractTask,
    config: TrainConfig,
    *,
    inner_steps: int | None = None,
    key: PRNGKeyArray | None = None,
) -> dict[str, float]:
    """Identification metrics of `model` (`r2_test`, `r2_ood`, `alignment`; see
    `runs.algorithms.bilevel.Bilevel.identification`); empty if the model is not a
    `zoo.AbstractIdentifiable`."""
    found = evaluate_all(model, task, config, inner_steps=inner_steps, key=key)
    return found.get("identification", {})


def describe_evaluation(task: Any, config: TrainConfig) -> str:
    """What an evaluation of the run does, in words for the screen: `"evaluating test, ood
    (256 tasks each)"`, or for an environment `"evaluating 256 episodes"`."""
    if not isinstance(task, AbstractTask):
        return f"evaluating {config.eval.tasks} episodes"
    pools = [p for p in task.pools() if p != "train" and p in (config.eval.pools or (p,))]
    return f"evaluating {', '.join(pools)} ({config.eval.tasks} tasks each)"


# --------------------------------------------------------------------------- training


def _divergence_message(
    bad: int, first_bad_grad: int | None, skipped: int, last_good: int, where: Path
) -> str:
    if first_bad_grad is not None and first_bad_grad < bad:
        cause = (
            f"The gradient became non-finite first, at step {first_bad_grad}, while the loss "
            f"was still finite: {skipped} step(s) before it had a non-finite gradient (skipped, "
            "up to --algorithm.outer.max-nonfinite in a row; then one is applied and the parameters go "
            "non-finite). In "
            "bilevel runs this is usually the second-order gradient through the inner Adam's "
            "square root at zero (a dead ReLU unit): raise --algorithm.inner.eps-root (the authors use "
            "float32 epsilon, 1.2e-7) or pass --algorithm.inner.mode first-order."
        )
    else:
        cause = (
            f"The loss itself overflowed ({skipped} step(s) with a non-finite gradient "
            "before it): lower --algorithm.outer.lr or --algorithm.inner.lr, or clip gradients harder "
            "(--algorithm.outer.clip)."
        )
    return (
        f"The training loss became non-finite at step {bad}; the run stopped. {cause} Its last "
        f"good checkpoint (step {last_good}) is kept in {where}; to continue from it with "
        "changed optimizer settings, run the same command with --resume --allow-changes and "
        "the new values (e.g. --algorithm.outer.lr)."
    )


def train(
    config: TrainConfig,
    out: Path | str,
    *,
    resume: bool = False,
    progress: bool = True,
    allow_changes: bool = False,
    hooks: Sequence[Hook] = (),
) -> Path:
    """Train as `config` says, writing the run directory `out`.

    With `resume=True` an existing run in `out` continues from its newest readable checkpoint
    (its settings must match `config`, except `run.steps` and, with `allow_changes=True`, the
    optimizer scalars its algorithm's config declares in `CHANGEABLE`, recorded in `history.jsonl`); an empty `out` starts
    afresh.
    `hooks` (`runs.hooks.Hook`s) are called after the built-in ones (metrics file, evaluation,
    checkpoints, progress bar), in process 0 only.
    Raises `RunError` before compiling anything if the settings cannot work (or if a run to
    resume has checkpoints and none of them reads: nothing is changed then), and
    `TrainingDiverged` if the loss becomes non-finite (the last good checkpoint stays).
    """
    out = Path(out)
    config = prepare(config, out, resume, allow_changes)
    if multiprocess():
        return _train_multiprocess(config, out, progress, allow_changes, hooks)
    fresh = _is_blank(out)
    created = not out.exists()
    try:
        lock = DirectoryLock(out, "zoo train").acquire()
    except LockedError as error:
        raise RunError(str(error)) from None
    try:
        return _train(config, out, progress, allow_changes, hooks=hooks)
    except BaseException:
        if fresh and not _trained(out):  # failed before its first step (at its first compile)
            lock.release()
            _remove_unfinished_start(out, created)
        raise
    finally:
        lock.release()


def _train_multiprocess(
    config: TrainConfig, out: Path, progress: bool, allow_changes: bool, hooks: Sequence[Hook]
) -> Path:
    """`train` as one of several processes (`runs.distributed`): every process has checked
    `out` before any writes to it; process 0 alone locks and writes it (and shows progress)."""
    resuming = (out / CONFIG_FILE).exists()
    barrier("zoo-train-checked")  # no process sees what another has written yet
    if not is_primary():
        return _train(config, out, False, allow_changes, resuming, hooks)
    lock = DirectoryLock(out, "zoo train").acquire()  # the others' locks would be the same
    try:
        return _train(config, out, progress, allow_changes, resuming, hooks)
    finally:
        lock.release()


def _trained(out: Path) -> bool:
    """Whether the run in `out` has trained: a committed checkpoint of a step after 0 (Orbax
    names it by its step once the save is complete), or a metrics row of one."""
    folder = out / "checkpoints"
    if folder.is_dir() and any(p.name.isdigit() and int(p.name) > 0 for p in folder.iterdir()):
        return True
    try:
        return any(row.get("step", 0) > 0 for row in read_metrics(out))
    except RunError:  # a metrics file we cannot read is not ours to remove
        return True


def _remove_unfinished_start(out: Path, created: bool) -> None:
    """Remove what a start that failed before its first step wrote into `out` (its config, the
    step-0 checkpoint; all of it, if it made `out`), so that the same command can be run
    again without `--resume`."""
    if created:
        shutil.rmtree(out, ignore_errors=True)
        return
    for name in (CONFIG_FILE, METRICS_FILE, HISTORY_FILE, "checkpoints"):
        path = out / name
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)


def _train(
    config: TrainConfig,
    out: Path,
    progress: bool,
    allow_changes: bool,
    resuming: bool | None = None,
    hooks: Sequence[Hook] = (),
) -> Path:
    """`train`, its directory checked and locked (`resuming`: whether `out` held a run when
    every process of a multi-process run had checked it)."""
    with _progress(config.run.steps, 0, progress) as bar:  # shown from the start
        return _train_in(config, out, _Status(bar), allow_changes, resuming, hooks)


def _train_in(
    config: TrainConfig,
    out: Path,
    status: "_Status",
    allow_changes: bool,
    resuming: bool | None = None,
    hooks: Sequence[Hook] = (),
) -> Path:
    """`_train` with its progress bar: the run built and restored, then a `Trainer`."""
    status.phase("building the task and model")
    task, model = build(config)
    primary = is_primary()
    if resuming is None:
        # Checked again under the lock: another writer may have started or finished since.
        resuming = (out / CONFIG_FILE).exists()
    # The other processes checked before process 0 could write (`_train_multiprocess`).
    changes = _check_directory(config, out, resuming, task, model, allow_changes) if primary else []
    if config.run.init and not resuming:  # the weights of a trained model; checked in prepare
        from .pretrained import init_model

        status.phase(f"reading the weights of {config.run.init}")
        model = init_model(config.run.init, model)
    algorithm = build_algorithm(config, task, model)
    _, train_key, eval_key = _keys(config.run.seed)
    state = algorithm.init(task, model, train_key)
    if (
        not resuming and primary
    ):  # the config first: a directory with it is a run every command accepts
        save_config(config, out)
    barrier("zoo-train-config")
    checkpoints = Checkpoints(out, keep=config.run.keep)
    if resuming:
        if checkpoints.steps():
            try:
                restored = checkpoints.restore(state)
            except OldCheckpointError as error:
                raise RunError(str(error)) from None
            if restored is None:
                raise RunError(
                    f"--resume: {out} has checkpoints at steps {checkpoints.steps()} but none "
                    "of them reads (see the warnings above); nothing was changed. Start a new "
                    "run in another --out."
                )
            state = restored
        if primary:
            _truncate_metrics(out, int(state.step))
            if changes:  # the config now holds the new values; the history says which and when
                print(f"--allow-changes at step {int(state.step)}: " + "; ".join(changes))
            save_config(config, out)
    if primary:
        _append_history(
            out, "resume" if resuming else "start", int(state.step), changes, algorithm.mesh
        )
    if not checkpoints.steps():
        status.phase("saving the first checkpoint")
        checkpoints.save(state)
    state = algorithm.place(state)
    if multiprocess():  # the task's arrays are inputs of the step over the global mesh
        task = replicate(task, algorithm.mesh)

    Trainer(algorithm, task, state, config, out, checkpoints, status, eval_key, extra=hooks).run()
    return out


def _frames_per_step(config: TrainConfig) -> int:
    """Environment frames per training step (0 for algorithms that act in no environment)."""
    return getattr(config.algorithm, "frames_per_step", 0)


def _progress(total: int, initial: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc="train", unit="step", disable=not enabled)


class _Status:
    """Says what a run is doing while nothing else moves on the screen (building, compiling,
    evaluating). With a progress bar: in the bar's description, `train - compiling ...`, the
    bar shown from the start. Without one (`--no-progress`, e.g. a sweep's log): a line on stderr
    for the long phases only, the compilation of the training step and the final evaluation."""

    def __init__(self, bar: Any):
        self.bar = bar

    def phase(self, words: str | None, line: bool = False) -> None:
        """Show `words` as the current phase (None: training again); with no bar, print them
        on a line of stderr if `line`."""
        if not self.bar.disable:
            self.bar.set_description_str("train" if words is None else f"train - {words}")
        elif line and words is not None:
            print(f"{words}...", file=sys.stderr, flush=True)

    def start(self, step: int) -> Any:
        """The bar, restarted at `step` (the clock too: the start-up is not training time)."""
        bar = self.bar
        if not bar.disable:
            bar.initial = bar.n = bar.last_print_n = step
            bar.start_t = bar.last_print_t = time.time()
            bar.refresh()
        return bar


# --------------------------------------------------------------------------- loading


def load(directory: Path | str, step: int | None = None) -> Loaded:
    """The trained model of a run directory, its config and the step it was saved at.

    Needs no training code: the model's structure is rebuilt (abstractly, without computing
    anything) from `config.json` and its arrays come from the newest readable checkpoint (or
    the one at `step`).

    Also reads a pretrained model: `"pretrained:NAME"` (one a package registers in the
    entry-point group `zoo.pretrained`), the directory `zoo export` wrote (`runs.pretrained`),
    or `"hf:OWNER/REPO[@REVISION]"`, such a directory on the Hugging Face Hub (the `hub`
    extra); its files are checked against their digests first.
    """
    from . import pretrained

    if str(directory).startswith(
        (pretrained.PREFIX, pretrained.HUB_PREFIX)
    ) or pretrained.is_export(directory):
        return pretrained.load(directory, step=step)
    directory = Path(directory)
    config = read_config(directory)
    for kind in _KINDS:  # imported outside any trace (see `prepare`)
        _factory(config, kind)
    _, model = eqx.filter_eval_shape(build, config)
    if not (directory / "checkpoints").is_dir():
        raise RunError(f"{directory} has no checkpoints/ folder: the run saved no checkpoint.")
    checkpoints = Checkpoints(directory, keep=config.run.keep, read_only=True)
    if step is not None and step not in checkpoints.steps():
        raise RunError(
            f"No checkpoint at step {step} in {directory}; there are {checkpoints.steps()}."
        )
    at = step
    restored = checkpoints.restore_model(model, at=at)
    if restored is None:
        raise RunError(f"{directory} has no readable checkpoint.")
    step, model = restored
    if at is None and step < config.run.steps:
        warnings.warn(
            f"{directory}: loaded the checkpoint of step {step}; the run was set to "
            f"{config.run.steps} steps and has no readable checkpoint of a later step.",
            UnfinishedRunWarning,
            stacklevel=2,
        )
    return Loaded(model, config, step)
