"""Pretrained models: the shippable layout of a trained model, written from a finished run by
`export` (`zoo export RUN_DIR --to DIR`) and read back by `runs.load(DIR)` or, for one a
package registers in the entry-point group `zoo.pretrained` (a `plugins.PretrainedSpec`), by
`runs.load("pretrained:NAME")`.

    DIR/model/         an Orbax checkpoint of the model's arrays alone (no optimizer state),
                       a tree keyed by field paths as in a run's checkpoints (`runs.checkpoint`)
    DIR/config.json    the run's whole `TrainConfig`, from which the model's structure is rebuilt
    DIR/digests.json   the sha256 of every other file
    DIR/card.json      the model card: name, paper, preset, task, model, seed, steps, commit,
                       host kind, final metrics, licence, what it is not, size in bytes
    DIR/card.md        the card as a short text

Everything is checked before anything compiles: the digests, that the card's model and task
are installed, and that the saved arrays have the shapes and dtypes the config builds.
"""

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import equinox as eqx
import numpy as np

import plugins

from .checkpoint import Checkpoints, _abstract_tree, _paths, from_tree, to_tree
from .run import (
    CONFIG_FILE,
    Loaded,
    RunError,
    UnfinishedRunWarning,
    _factory,
    build,
    read_config,
    read_history,
    read_metrics,
)
from .run import load as load_run

PREFIX = "pretrained:"
"""What `runs.load` reads as the name of a registered pretrained model."""
HUB_PREFIX = "hf:"
"""What `runs.load` reads as a Hugging Face Hub repository (`hf:OWNER/REPO[@REVISION]`)
holding an export, fetched into the Hub's cache by `huggingface_hub` (the `hub` extra)."""
MODEL_DIR = "model"
DIGESTS_FILE = "digests.json"
CARD_FILE = "card.json"
CARD_TEXT = "card.md"
LICENCE = "MIT"
FORMAT = 1


class PretrainedError(RunError):
    """A pretrained model cannot be exported or loaded; the message says why."""


# --------------------------------------------------------------------------- exporting


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _files(directory: Path) -> list[Path]:
    """Every file under `directory` but the digests, as paths relative to it, sorted."""
    return sorted(
        p.relative_to(directory)
        for p in directory.rglob("*")
        if p.is_file() and p.relative_to(directory) != Path(DIGESTS_FILE)
    )


_UNMEASURED = ("step", "pool", "kind", "time", "fps")
"""Fields of a metrics row that are no measurement of the model (or depend on the host)."""


def _final_metrics(directory: Path) -> dict[str, Any]:
    """The last value of every metric the run logged: training metrics (`train/NAME`) and each
    pool's evaluation (`POOL/NAME`), with the step they were measured at."""
    out: dict[str, Any] = {}
    for row in read_metrics(directory):
        prefix = row.get("pool") or "train"
        for key, value in row.items():
            if key in _UNMEASURED or not isinstance(value, int | float):
                continue
            out[f"{prefix}/{key}"] = value
        if "step" in row:
            out[f"{prefix}/step"] = row["step"]
    return out


def _paper(preset: str | None) -> str | None:
    if not preset:
        return None
    try:
        return plugins.experiment_spec(preset.partition("/")[0]).paper or None
    except plugins.PluginError:
        return None


def _card_text(card: dict[str, Any]) -> str:
    lines = [f"# {card['name']}", ""]
    if card.get("paper"):
        lines += [f"From {card['paper']}.", ""]
    lines += [
        f"Model `{card['model']}` trained on task `{card['task']}`"
        + (f" (preset `{card['preset']}`)" if card.get("preset") else "")
        + f", seed {card['seed']}, {card['steps']} steps, commit {card.get('commit') or '?'}"
        + f", host {card.get('host_kind') or '?'}.",
        "",
        f"Not: {card['not']}." if card.get("not") else "Not: (unstated).",
        "",
        "Metrics at release (the last evaluation of the run):",
        "",
    ]
    metrics = {k: v for k, v in card["metrics"].items() if not k.endswith("/step")}
    evaluated = {k: v for k, v in metrics.items() if not k.startswith("train/")}
    lines += [f"- {k}: {v:.6g}" for k, v in evaluated.items()] or ["- (no evaluation)"]
    trained = {k: v for k, v in metrics.items() if k.startswith("train/")}
    if trained:
        lines += ["", "Training metrics of the last step logged:", ""]
        lines += [f"- {k}: {v:.6g}" for k, v in trained.items()]
    check = card.get("check")
    if check:
        overrides = ", ".join(f"{k}={v}" for k, v in (check.get("eval") or {}).items())
        lines += ["", f"A small fixed evaluation (eval: {overrides or 'as trained'}):", ""]
        lines += [f"- {k}: {v:.6g}" for k, v in check["metrics"].items()]
    for what, command in (card.get("commands") or {}).items():
        lines += ["", f"{what.capitalize()}: `{command}`"]
    lines += [
        "",
        f"Licence {card['licence']}; {card['size']} bytes. Load it with "
        f"`runs.load(DIR)` or `zoo eval DIR`.",
        "",
    ]
    return "\n".join(lines)


def export(
    run: Path | str,
    to: Path | str,
    *,
    name: str | None = None,
    preset: str | None = None,
    paper: str | None = None,
    not_: str = "",
    check: dict[str, Any] | None = None,
    commands: dict[str, str] | None = None,
) -> Path:
    """Write the pretrained layout of the finished run `run` into `to` (which must not exist or
    be empty): the model of its last step alone, its config, a model card and the digests.

    **Arguments:**

    - `name`: the card's name (default: `to`'s folder name).
    - `preset`: the preset the run was trained with (its experiment's paper goes on the card).
    - `paper`: the paper, if no preset names it.
    - `not_`: what the model is not (e.g. "CPU scale, not the paper's size").
    - `check`: a small fixed evaluation to record on the card, `{"eval": {FIELD: VALUE},
      "metrics": {POOL/NAME: VALUE}}` (what `measure` gives): the run's `EvalConfig` with
      these fields replaced, and what it measured at release. `recheck` measures it again.
    - `commands`: the commands that re-create it, by what they do (e.g. `{"train": ...,
      "check": ...}`), shown on the card.

    **Raises:** `PretrainedError` (a `runs.RunError`) if `run` is no run directory, the run is
    not finished, or `to` is not empty; nothing is written then.

    **Returns:** `to`."""
    run, to = Path(run), Path(to)
    if not (run / CONFIG_FILE).is_file():
        raise PretrainedError(f"{run} holds no zoo run (no {CONFIG_FILE}); pass a run directory.")
    if to.exists() and (not to.is_dir() or any(to.iterdir())):
        raise PretrainedError(f"{to} is not empty: export into a new or empty directory.")
    config = read_config(run)
    if not (run / "checkpoints").is_dir():
        raise PretrainedError(f"{run} has no checkpoints/ folder: the run saved no checkpoint.")
    saved = Checkpoints(run, keep=config.run.keep, read_only=True).steps()
    if not saved or saved[-1] < config.run.steps:
        raise PretrainedError(
            f"{run} is not finished: its newest checkpoint is of step "
            f"{saved[-1] if saved else 'none'}, of {config.run.steps}. Resume it (zoo train "
            f"--out {run}) before exporting it."
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnfinishedRunWarning)
        model, config, step = load_run(run, step=saved[-1])
    history = read_history(run)
    start = history[0] if history else {}
    card: dict[str, Any] = {
        "format": FORMAT,
        "name": name or to.absolute().name,
        "paper": paper or _paper(preset),
        "preset": preset,
        "task": config.task_name,
        "model": config.model_name,
        "algorithm": config.algorithm_name,
        "seed": config.run.seed,
        "steps": step,
        "commit": start.get("commit"),
        "dirty": start.get("dirty"),
        "version": start.get("version"),
        "host_kind": start.get("device_kind"),
        "cpu": start.get("cpu"),
        "metrics": _final_metrics(run),
        "licence": LICENCE,
        "not": not_,
    }
    if check is not None:
        card["check"] = check
    if commands:
        card["commands"] = commands
    to.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{to.name}.", dir=to.absolute().parent))
    try:
        import orbax.checkpoint as ocp

        checkpointer = ocp.StandardCheckpointer()
        checkpointer.save(staging.absolute() / MODEL_DIR, to_tree(model))
        checkpointer.wait_until_finished()
        shutil.copyfile(run / CONFIG_FILE, staging / CONFIG_FILE)
        model_bytes = sum((staging / p).stat().st_size for p in _files(staging))
        card["size"] = model_bytes  # weights and config; the card itself is a few hundred bytes
        (staging / CARD_FILE).write_text(json.dumps(card, indent=2) + "\n")
        (staging / CARD_TEXT).write_text(_card_text(card))
        digests = {str(p): _sha256(staging / p) for p in _files(staging)}
        (staging / DIGESTS_FILE).write_text(json.dumps(digests, indent=2) + "\n")
        if to.exists():
            to.rmdir()
        os.replace(staging, to)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return to


def measure(
    model: Any, config: Any, eval_overrides: dict[str, Any] | None = None
) -> dict[str, float]:
    """The evaluation of `model` as its run's config says (`runs.evaluate_all`, with the run's
    fixed evaluation key), with the fields `eval_overrides` of its `EvalConfig` replaced (e.g.
    `{"tasks": 16}` for a small fixed one), flattened to `{POOL/NAME: VALUE}`."""
    from .run import build_task, evaluate_all

    if eval_overrides:
        config = dataclasses.replace(
            config, eval=dataclasses.replace(config.eval, **eval_overrides)
        )
    task = build_task(config)
    found = evaluate_all(model, task, config)
    return {
        f"{pool}/{name}": float(value)
        for pool, values in found.items()
        for name, value in values.items()
        if isinstance(value, int | float | np.floating | np.integer) or np.ndim(value) == 0
    }


def recheck(source: Path | str) -> tuple[dict[str, float], dict[str, float]]:
    """The small fixed evaluation a card records (`check`), measured again on the shipped
    weights: `(recorded, measured)`, both `{POOL/NAME: VALUE}`.

    **Raises:** `PretrainedError` if the card records no check, or (as `load`) the files do not
    match their digests."""
    directory = resolve(source)
    loaded = load(directory)
    card = read_card(directory)
    check = card.get("check")
    if not check:
        raise PretrainedError(
            f"{directory / CARD_FILE} records no check (a small fixed evaluation); export it "
            "with check= (scripts/train_pretrained.py does)."
        )
    measured = measure(loaded.model, loaded.config, check.get("eval") or {})
    return dict(check["metrics"]), {k: measured[k] for k in check["metrics"] if k in measured}


# --------------------------------------------------------------------------- loading


def is_export(directory: Path | str) -> bool:
    """Whether `directory` holds the pretrained layout (a card and a model)."""
    directory = Path(directory)
    return (directory / CARD_FILE).is_file() and (directory / MODEL_DIR).is_dir()


def _from_hub(reference: str) -> Path:
    """The local snapshot of the Hub repository `OWNER/REPO[@REVISION]`: downloaded into the
    Hub's cache (`HF_HUB_CACHE`) unless it is there; with `HF_HUB_OFFLINE=1`, the cache only."""
    repo_id, _, revision = reference.partition("@")
    if repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise PretrainedError(
            f"{HUB_PREFIX}{reference}: name a Hub repository as hf:OWNER/REPO or "
            "hf:OWNER/REPO@REVISION."
        )
    try:
        import huggingface_hub
    except ImportError:
        raise PretrainedError(
            f"{HUB_PREFIX}{reference} needs huggingface_hub: pip install 'compgen-zoo[hub]' "
            "(or pip install huggingface_hub)."
        ) from None
    from .provenance import _version

    try:
        path = huggingface_hub.snapshot_download(
            repo_id,
            revision=revision or None,
            library_name="compgen-zoo",
            library_version=_version("compgen-zoo"),
        )
    except Exception as error:  # not found, offline with nothing cached, no access
        raise PretrainedError(
            f"{HUB_PREFIX}{reference} could not be fetched from the Hugging Face Hub or its "
            f"cache: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        ) from None
    return Path(str(path))


def resolve(source: str | Path) -> Path:
    """The directory of `source`: `"pretrained:NAME"` (or `"pretrained:dist:NAME"`), a
    registered pretrained model; `"hf:OWNER/REPO[@REVISION]"`, a Hugging Face Hub repository
    holding an export (its snapshot in the Hub's cache); or a path.

    **Raises:** `PretrainedError` if no pretrained model of that name is registered or its
    directory is missing, or the Hub repository cannot be fetched."""
    text = str(source)
    if text.startswith(HUB_PREFIX):
        return _from_hub(text[len(HUB_PREFIX) :])
    if not text.startswith(PREFIX):
        return Path(source)
    name = text[len(PREFIX) :]
    try:
        spec = plugins.pretrained_spec(name)
    except plugins.PluginError as error:
        raise PretrainedError(str(error)) from None
    try:
        return spec.directory()
    except (ValueError, ImportError, FileNotFoundError) as error:
        raise PretrainedError(str(error)) from None


def read_card(directory: Path | str) -> dict[str, Any]:
    """The model card (`card.json`) of an exported directory.

    **Raises:** `PretrainedError` if there is none or it does not read."""
    path = Path(directory) / CARD_FILE
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise PretrainedError(f"{path} cannot be read as a model card ({error}).") from None


def verify(directory: Path | str) -> None:
    """Check every file of an exported directory against its `digests.json`.

    **Raises:** `PretrainedError` naming the files that differ, are missing or are not listed."""
    directory = Path(directory)
    try:
        saved: dict[str, str] = json.loads((directory / DIGESTS_FILE).read_text())
    except (OSError, ValueError) as error:
        raise PretrainedError(f"{directory}: no readable {DIGESTS_FILE} ({error}).") from None
    problems = []
    for name, digest in sorted(saved.items()):
        path = directory / name
        if not path.is_file():
            problems.append(f"{name} is missing")
        elif _sha256(path) != digest:
            problems.append(f"{name} does not match its digest")
    listed = set(saved)
    extra = [str(p) for p in _files(directory) if str(p) not in listed]
    extra = [p for p in extra if p.startswith(f"{MODEL_DIR}/") or p in (CONFIG_FILE, CARD_FILE)]
    problems += [f"{p} is not in {DIGESTS_FILE}" for p in extra]
    if problems:
        shown = "; ".join(problems[:3]) + (
            f" and {len(problems) - 3} more" if len(problems) > 3 else ""
        )
        raise PretrainedError(
            f"{directory} does not match its {DIGESTS_FILE}: {shown}. The files were changed or "
            "corrupted; export or download them again."
        )


def _check_plugins(directory: Path, card: dict[str, Any]) -> None:
    for kind, noun in (("models", "model"), ("tasks", "task")):
        name = card.get(noun)
        if not name:
            raise PretrainedError(f"{directory / CARD_FILE} names no {noun}.")
        bare = str(name).rpartition(":")[2]
        try:
            plugins.entry(kind, name)
        except plugins.UnknownPluginError:
            try:  # the distribution recorded may be another name for one that provides it
                plugins.entry(kind, bare)
            except plugins.PluginError as error:
                raise PretrainedError(
                    f"The pretrained model {card.get('name')!r} ({directory}) needs the {noun} "
                    f"{name!r}, which is not installed: {str(error).splitlines()[0]} Install "
                    "the package that provides it."
                ) from None
        except plugins.PluginError as error:
            raise PretrainedError(str(error)) from None


def _check_fit(directory: Path, like: Any) -> None:
    """Compare the arrays saved under `directory/model` with those the config builds."""
    problem = _misfit(_saved_shapes(directory), like)
    if problem:
        raise PretrainedError(
            f"The weights in {directory / MODEL_DIR} do not fit the model its {CONFIG_FILE} "
            f"builds: {problem}."
        )


def _saved_shapes(directory: Path) -> dict[str, tuple[tuple[int, ...], Any]]:
    """`{PATH: (shape, dtype)}` of the arrays saved under `directory/model`, from Orbax's
    metadata (nothing is read but it)."""
    import orbax.checkpoint as ocp

    metadata = ocp.StandardCheckpointer().metadata((directory / MODEL_DIR).absolute())
    tree = getattr(getattr(metadata, "item_metadata", metadata), "tree", metadata)
    return {".".join(p): (tuple(x.shape), np.dtype(x.dtype)) for p, x in _saved_paths(tree)}


def _misfit(saved: dict[str, tuple[tuple[int, ...], Any]], like: Any) -> str:
    """What differs between the arrays `saved` (`{PATH: (shape, dtype)}`) and those of the
    model `like` (abstract or not), in words; empty if they fit."""
    wanted = {".".join(p): (tuple(x.shape), np.dtype(x.dtype)) for p, x in _paths(like)}
    problems = [f"{k} is missing" for k in sorted(set(wanted) - set(saved))]
    problems += [f"{k} is not in the model" for k in sorted(set(saved) - set(wanted))]
    problems += [
        f"{k} is {saved[k][1]}{list(saved[k][0])}, the config builds {wanted[k][1]}{list(wanted[k][0])}"
        for k in sorted(set(saved) & set(wanted))
        if saved[k] != wanted[k]
    ]
    if not problems:
        return ""
    return "; ".join(problems[:3]) + (f" and {len(problems) - 3} more" if len(problems) > 3 else "")


def _saved_paths(tree: Any, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    if isinstance(tree, dict):
        return [item for k, v in tree.items() for item in _saved_paths(v, (*prefix, str(k)))]
    return [(prefix, tree)]


def load(source: Path | str, step: int | None = None) -> Loaded:
    """The model of an exported directory or of `"pretrained:NAME"`, with its config and step,
    as `runs.load` of a run directory gives them.

    **Raises:** `PretrainedError` (a `runs.RunError`) if a file does not match its digest, the
    card names a model or task that is not installed, or the weights do not fit the config;
    all checked before anything compiles."""
    directory = resolve(source)
    if not is_export(directory):
        raise PretrainedError(
            f"{directory} holds no exported model (no {CARD_FILE} and {MODEL_DIR}/)."
        )
    verify(directory)
    card = read_card(directory)
    _check_plugins(directory, card)
    if step is not None and step != card.get("steps"):
        raise PretrainedError(
            f"{source} holds the model of step {card.get('steps')} only; asked for step {step}."
        )
    config = read_config(directory)
    for kind in ("task", "model"):
        _factory(config, kind)
    _, like = eqx.filter_eval_shape(build, config)
    _check_fit(directory, like)

    import jax
    import orbax.checkpoint as ocp

    device = jax.sharding.SingleDeviceSharding(jax.local_devices()[0])
    restored = ocp.StandardCheckpointer().restore(
        (directory / MODEL_DIR).absolute(), _abstract_tree(like, device)
    )
    model = from_tree(like, restored)
    return Loaded(model, config, int(card.get("steps", config.run.steps)))


# --------------------------------------------------------------------------- starting from one


def _init_source(source: str) -> tuple[Path, bool]:
    """The directory of `run.init` and whether it is an export (else a run directory).

    **Raises:** `PretrainedError` if it is neither."""
    directory = resolve(source)
    if is_export(directory):
        return directory, True
    if (directory / CONFIG_FILE).is_file():
        return directory, False
    raise PretrainedError(
        f"run.init {source!r}: {directory} is neither a pretrained model (zoo pretrained lists "
        "them; pass pretrained:NAME), a directory zoo export wrote, nor a run directory."
    )


def check_init(source: str, like: Any) -> None:
    """Check, before anything compiles, that `run.init` names weights that fit the model
    `like` (abstract, as `eqx.filter_eval_shape` builds it): for a pretrained model its digests,
    plugins and saved shapes; for a run directory its config's shapes and a checkpoint.

    **Raises:** `PretrainedError` saying what does not fit."""
    directory, exported = _init_source(source)
    if exported:
        verify(directory)
        _check_plugins(directory, read_card(directory))
        saved = _saved_shapes(directory)
    else:
        config = read_config(directory)
        steps = Checkpoints(directory, keep=config.run.keep, read_only=True).steps()
        if not steps:
            raise PretrainedError(f"run.init {source!r}: {directory} has saved no checkpoint.")
        _, theirs = eqx.filter_eval_shape(build, config)
        saved = {".".join(p): (tuple(x.shape), np.dtype(x.dtype)) for p, x in _paths(theirs)}
    problem = _misfit(saved, like)
    if problem:
        raise PretrainedError(
            f"run.init {source!r}: its weights do not fit the model this config builds: "
            f"{problem}. Start from a model of the same kind and sizes (its config.json says "
            "which), or leave --init out."
        )


def init_model(source: str, model: Any) -> Any:
    """`model` with every array replaced by those of `run.init` (`check_init` first): a
    pretrained model, an export or a run directory's newest checkpoint. Non-array leaves
    (activations, names, sizes) stay `model`'s."""
    check_init(source, model)
    directory, exported = _init_source(source)
    if exported:
        theirs = load(directory).model
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnfinishedRunWarning)
            theirs = load_run(directory).model
    return from_tree(model, to_tree(theirs))


@dataclasses.dataclass(frozen=True)
class Listed:
    """One row of `zoo pretrained`."""

    name: str
    dist: str
    paper: str
    task: str
    metric: str
    size: int | None
    description: str


def _headline(metrics: dict[str, Any]) -> str:
    """The card's headline metric: an evaluation pool's accuracy or return if there is one,
    else the last training loss."""
    for suffix in ("accuracy", "success", "return", "loss"):
        for key, value in metrics.items():
            if key.endswith(f"/{suffix}") and not key.startswith("train/"):
                return f"{key} {value:.4g}"
    for key, value in metrics.items():
        if key.startswith("train/") and key != "train/step":
            return f"{key} {value:.4g}"
    return "-"


def listing() -> list[Listed]:
    """The registered pretrained models, with what their cards say (a card that cannot be
    read is shown as such, not raised)."""
    rows = []
    for entry in plugins.entries("pretrained"):
        spec = entry.spec
        try:
            card = read_card(spec.directory())  # pyright: ignore[reportAttributeAccessIssue]
        except FileNotFoundError:
            rows.append(Listed(entry.name, entry.dist, "-", "-", "missing: no directory", None, ""))
            continue
        except (PretrainedError, ValueError, ImportError) as error:
            rows.append(Listed(entry.name, entry.dist, "-", "-", f"unreadable: {error}", None, ""))
            continue
        rows.append(
            Listed(
                entry.name,
                entry.dist,
                str(card.get("paper") or "-").partition(",")[0],
                str(card.get("task") or "-").rpartition(":")[2],
                _headline(card.get("metrics") or {}),
                card.get("size"),
                spec.description,
            )
        )
    return rows


# --------------------------------------------------------------------------- the shipped table


def _evaluated(metrics: dict[str, Any]) -> str:
    """The evaluation metrics a reader compares (accuracies, success, losses of the pools)."""
    shown = [
        f"{k} {v:.4g}"
        for k, v in metrics.items()
        if not k.startswith("train/")
        and k.rpartition("/")[2] in ("accuracy", "success", "loss")
        and not k.partition("/")[0].rpartition("_")[2].isdigit()  # not ood_K: one per K
    ]
    return "; ".join(shown) or "-"


def shipped_table(dist: str | None = None) -> str:
    """A Markdown table of the pretrained models `dist` (default: this zoo's distribution)
    registers, from their cards: name, paper, task and model, how long it trained, its
    evaluation at release, the small check, its weight in bytes, and the call that loads it."""
    dist = dist or plugins.own_distribution()
    lines = [
        "| name | paper | task, model, algorithm | trained | evaluation at release | weighs |",
        "|---|---|---|---|---|---|",
    ]
    total = 0
    for entry in plugins.entries("pretrained"):
        if entry.dist != dist:
            continue
        try:
            card = read_card(entry.spec.directory())  # pyright: ignore[reportAttributeAccessIssue]
        except (PretrainedError, ValueError, ImportError, FileNotFoundError):
            lines.append(f"| `{entry.name}` | — | — | — | not exported yet | — |")
            continue
        metrics = card.get("metrics") or {}
        frames = metrics.get("train/frames")
        trained = f"{card['steps']:,} steps" + (f", {frames:,.0f} frames" if frames else "")
        paper = str(card.get("paper") or "-").partition(",")[0]
        total += int(card.get("size") or 0)
        lines.append(
            f"| `{entry.name}` | {paper} | {str(card['task']).rpartition(':')[2]}, "
            f"{str(card['model']).rpartition(':')[2]}, {card.get('algorithm') or '-'} | "
            f"{trained}, seed {card['seed']} | "
            f"{_evaluated(metrics)} | {int(card.get('size') or 0) / 1e6:.2f} MB |"
        )
    lines += ["", f"{len(lines) - 2} models, {total / 1e6:.1f} MB in all.", ""]
    return "\n".join(lines)
