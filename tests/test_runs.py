"""Run directories: train, load, resume (after a kill, after a corrupt checkpoint), divergence,
and the errors raised before anything is compiled."""

import dataclasses
import hashlib
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import textwrap
import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
import numpy as np
import pytest
from conftest import make_tiny_config

import plugins
import runs.algorithms
import runs.checkpoint
import runs.run
import runs.trainer
from runs.checkpoint import Checkpoints, CheckpointWarning
from runs.config import OuterConfig, PluginSource, RunConfig
from runs.run import RunError, TrainingDiverged, build, build_task, load, read_config, train
from tasks.config import HyperteacherConfig
from zoo.linear_hypernet import LinearHypernet

REPO = pathlib.Path(__file__).resolve().parents[1]
STEPS = 6
# Checkpoints at 0, 2, 4, 6; evaluation only at the end (a killed run never compiles it).
CONFIG = make_tiny_config(steps=STEPS, eval_every=0)
EVAL_POOLS = {"test", "ood", "ood_1", "ood_2"}


def _source(kind: str, name: str) -> PluginSource:
    entry = plugins.entry(kind, name)
    return PluginSource(entry.dist, entry.version)


# As saved: the algorithm chosen from the kinds of task and model is named, and the
# distributions providing the task and the model are recorded.
SAVED = dataclasses.replace(
    CONFIG,
    algorithm_name="bilevel",
    task_source=_source("tasks", "hyperteacher"),
    model_source=_source("models", "linear-hypernet"),
)


def _with_outer(config, **outer):
    """`config` with its (bilevel) algorithm's outer optimizer settings changed."""
    changed = dataclasses.replace(config.algorithm.outer, **outer)
    return dataclasses.replace(
        config, algorithm=dataclasses.replace(config.algorithm, outer=changed)
    )


def _arrays(tree) -> list[np.ndarray]:
    return [np.asarray(x) for x in jtu.tree_leaves(eqx.filter(tree, eqx.is_array))]


def _assert_same_arrays(a, b) -> None:
    a, b = _arrays(a), _arrays(b)
    assert len(a) == len(b) > 0
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)


def _rows(directory: pathlib.Path) -> list[dict]:
    """Metrics rows without their wall-clock `time`."""
    return [
        {k: v for k, v in row.items() if k != "time"} for row in runs.run.read_metrics(directory)
    ]


def _snapshot(directory: pathlib.Path) -> dict[str, tuple[int, str]]:
    """Modification time and content hash of every file under `directory` but the writer's
    lock file (which names whoever last held it)."""
    return {
        str(p.relative_to(directory)): (
            p.stat().st_mtime_ns,
            hashlib.sha1(p.read_bytes()).hexdigest(),
        )
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def _no_training(*args, **kwargs):
    raise AssertionError("the run went on to checkpoint or train before its settings were checked")


@pytest.fixture
def no_training(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if `train` gets as far as opening checkpoints or compiling a chunk."""
    monkeypatch.setattr(runs.trainer, "train_chunk", _no_training)
    monkeypatch.setattr(runs.run, "Checkpoints", _no_training)


def _env(**changes: str) -> dict[str, str]:
    """This process's environment, with the repository first on `PYTHONPATH`."""
    env = {**os.environ, **changes}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    return env


KILLED_AT = 4

_KILL_SCRIPT = """\
import os, signal, sys
import runs.checkpoint
from runs.run import read_config, train

save = runs.checkpoint.Checkpoints.save

def save_then_die(self, state):
    save(self, state)
    if int(state.step) == {step}:
        os.kill(os.getpid(), signal.SIGKILL)

runs.checkpoint.Checkpoints.save = save_then_die
train(read_config(sys.argv[1]), sys.argv[2], progress=False)
"""


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory: pytest.TempPathFactory):
    """A run of `CONFIG` in a child process that dies the hard way (SIGKILL) right after saving
    step 4. Started at once and awaited by `wait()`, so that it overlaps other work."""
    root = tmp_path_factory.mktemp("killed")
    staging, out = root / "staging", root / "run"
    runs.run.save_config(CONFIG, staging)
    log = root / "stderr.txt"
    with log.open("w") as stderr:  # a file, not a pipe: the child never waits on a reader
        child = subprocess.Popen(
            [sys.executable, "-c", _KILL_SCRIPT.format(step=KILLED_AT), str(staging), str(out)],
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )

    def wait() -> pathlib.Path:
        child.wait(timeout=600)
        assert child.returncode == -signal.SIGKILL, log.read_text()[-3000:]
        return out

    yield wait
    if child.poll() is None:
        child.kill()
        child.wait()


@pytest.fixture(scope="module")
def run_a(killed_run, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """An uninterrupted run of `CONFIG` (trained while the killed run's child works)."""
    return train(CONFIG, tmp_path_factory.mktemp("runs") / "a", progress=False)


def test_run_directory(run_a: pathlib.Path):
    assert (run_a / "config.json").is_file() and (run_a / "metrics.jsonl").is_file()
    assert read_config(run_a) == SAVED
    assert Checkpoints(run_a).steps() == [0, 2, 4, 6]

    rows = runs.run.read_metrics(run_a)
    train_rows = [r for r in rows if r["pool"] == "train"]
    assert [r["step"] for r in train_rows] == [2, 4, 6]
    for row in train_rows:
        assert {"loss", "accuracy", "grad_norm", "time"} <= set(row)
        assert all(np.isfinite(row[k]) for k in ("loss", "accuracy", "grad_norm"))
    found = [r for r in rows if r["pool"] == "identification"]
    assert [r["step"] for r in found] == [STEPS]
    assert set(found[0]) == {"step", "pool", "r2_test", "r2_ood"}
    eval_rows = [r for r in rows if r["pool"] not in ("train", "identification")]
    assert set(build_task(CONFIG).pools()) - {"train"} == EVAL_POOLS
    # The history names the code that ran: this checkout's commit (None outside git).
    (start,) = runs.run.read_history(run_a)
    head = subprocess.run(
        ["git", "-C", str(pathlib.Path(runs.__file__).parent), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
    )
    assert start["event"] == "start" and start["step"] == 0 and start["jax"] == jax.__version__
    assert start["commit"] == (head.stdout.strip() if head.returncode == 0 else None)
    assert sorted(r["pool"] for r in eval_rows) == sorted(EVAL_POOLS)
    for row in eval_rows:
        assert row["step"] == STEPS
        assert set(row) == {"step", "pool", "loss", "accuracy"}
        assert np.isfinite(row["loss"]) and 0.0 <= row["accuracy"] <= 1.0


def test_load(run_a: pathlib.Path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", CheckpointWarning)
        loaded = load(run_a)
        first = load(run_a, step=0)
        middle = load(run_a, step=4)
    assert isinstance(loaded.model, LinearHypernet)
    assert loaded.step == STEPS and loaded.config == SAVED
    # Step 0 holds the initialization, which the run's seed rebuilds exactly.
    _, initial = build(CONFIG)
    assert first.step == 0
    _assert_same_arrays(first.model, initial)
    # Training moved the meta parameters, step by step.
    assert middle.step == 4
    for model in (middle.model, initial):
        assert not np.allclose(loaded.model.weight_generators[0], model.weight_generators[0])
    x = jnp.linspace(-1.0, 1.0, 3 * CONFIG.task.in_features).reshape(3, -1)
    pred = loaded.model(x)
    assert pred.shape == (3, CONFIG.task.out_features) and bool(jnp.all(jnp.isfinite(pred)))
    with pytest.raises(RunError, match=r"No checkpoint at step 3"):
        load(run_a, step=3)
    with pytest.raises(RunError, match="holds no zoo run"):
        load(run_a / "checkpoints")


def test_load_on_a_machine_with_one_device(run_a: pathlib.Path, tmp_path: pathlib.Path):
    """A run saved from a 2-device mesh loads in a process that has a single device."""
    out = tmp_path / "leaves.npz"
    script = textwrap.dedent(
        f"""\
        import warnings, jax, numpy as np, equinox as eqx
        assert len(jax.devices()) == 1, jax.devices()
        from runs.run import load
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            model, config, step = load({str(run_a)!r})
        leaves = jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_array))
        np.savez({str(out)!r}, step=step, *[np.asarray(x) for x in leaves])
        """
    )
    env = _env(JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)
    result = subprocess.run(
        [sys.executable, "-W", "ignore::DeprecationWarning", "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    saved = np.load(out)
    assert int(saved["step"]) == STEPS
    expected = _arrays(load(run_a).model)
    assert len(saved.files) == len(expected) + 1
    for i, leaf in enumerate(expected):
        np.testing.assert_array_equal(saved[f"arr_{i}"], leaf)


def test_same_seed_same_numbers(run_a: pathlib.Path, killed_run):
    """The killed run (another process, same config) has the same numbers as run A up to the
    step it died at, metrics and checkpoints alike."""
    killed = killed_run()
    assert Checkpoints(killed).steps() == [0, 2, KILLED_AT]
    rows = _rows(killed)
    assert [r["step"] for r in rows] == [2, KILLED_AT]
    assert rows == [r for r in _rows(run_a) if r["step"] <= KILLED_AT]
    for step in (2, KILLED_AT):
        _assert_same_arrays(load(killed, step=step).model, load(run_a, step=step).model)


def test_resume_after_a_kill_is_bit_identical(
    run_a: pathlib.Path, killed_run, tmp_path: pathlib.Path
):
    out = tmp_path / "resumed"
    shutil.copytree(killed_run(), out)
    assert Checkpoints(out).steps()[-1] == KILLED_AT

    assert train(CONFIG, out, resume=True, progress=False) == out
    assert Checkpoints(out).steps() == [0, 2, 4, 6]
    assert _rows(out) == _rows(run_a)
    resumed, original = load(out), load(run_a)
    assert resumed.step == original.step == STEPS
    _assert_same_arrays(resumed.model, original.model)


def test_corrupt_newest_checkpoint(run_a: pathlib.Path, tmp_path: pathlib.Path):
    out = tmp_path / "corrupt"
    shutil.copytree(run_a, out)
    newest = out / "checkpoints" / str(STEPS)
    files = [p for p in newest.rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])

    with pytest.warns(CheckpointWarning, match=rf"step {STEPS}"):
        loaded = load(out)
    assert loaded.step == STEPS - 2
    _assert_same_arrays(loaded.model, load(run_a, step=STEPS - 2).model)

    # Resuming goes on from the previous checkpoint and ends where the intact run ended.
    with pytest.warns(CheckpointWarning):
        train(CONFIG, out, resume=True, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CheckpointWarning)
        resumed = load(out)
    assert resumed.step == STEPS
    _assert_same_arrays(resumed.model, load(run_a).model)
    assert _rows(out) == _rows(run_a)


def test_non_finite_loss_stops_the_run(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path):
    real = runs.trainer.train_chunk
    calls = []

    def second_chunk_diverges(*args, **kwargs):
        state, metrics = real(*args, **kwargs)
        calls.append(None)
        if len(calls) >= 2:  # the second step of the second chunk (step 3) goes bad
            metrics = {**metrics, "loss": metrics["loss"].at[1].set(jnp.nan)}
        return state, metrics

    monkeypatch.setattr(runs.trainer, "train_chunk", second_chunk_diverges)
    out = tmp_path / "diverged"
    with pytest.raises(TrainingDiverged) as info:
        train(CONFIG, out, progress=False)
    message = str(info.value)
    assert "non-finite at step 3" in message
    assert "last good checkpoint (step 2)" in message
    assert "The loss itself overflowed (0 step(s) with a non-finite gradient" in message
    assert len(calls) == 2
    assert Checkpoints(out).steps() == [0, 2]
    assert [r["step"] for r in runs.run.read_metrics(out)] == [2]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CheckpointWarning)
        loaded = load(out)
    assert loaded.step == 2
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in _arrays(loaded.model))


def test_resuming_a_finished_run_changes_nothing(run_a: pathlib.Path, tmp_path: pathlib.Path):
    out = tmp_path / "finished"
    shutil.copytree(run_a, out)
    before = _snapshot(out / "checkpoints")
    rows = (out / "metrics.jsonl").read_text()
    assert train(CONFIG, out, resume=True, progress=False) == out
    assert _snapshot(out / "checkpoints") == before
    assert (out / "metrics.jsonl").read_text() == rows
    assert read_config(out) == SAVED


def test_resume_refuses_when_no_checkpoint_reads(run_a: pathlib.Path, tmp_path: pathlib.Path):
    """Checkpoints exist but none reads: resuming stops with a message and changes nothing
    (it does not restart from step 0 over the run's metrics and checkpoints)."""
    out = tmp_path / "unreadable"
    shutil.copytree(run_a, out)
    for path in (out / "checkpoints").rglob("*"):
        if path.is_file() and path.parent.name != "checkpoints":
            path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    before = _snapshot(out)
    with pytest.warns(CheckpointWarning), pytest.raises(RunError, match="none of them reads"):
        train(CONFIG, out, resume=True, progress=False)
    assert _snapshot(out) == before


def test_a_checkpoint_is_a_readable_tree_for_plain_orbax(run_a: pathlib.Path):
    """Plain Orbax, knowing nothing of zoo, restores the model and train state as trees keyed
    by field paths."""
    import orbax.checkpoint as ocp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = ocp.CheckpointManager(run_a / "checkpoints").restore(STEPS)
    model = load(run_a).model
    np.testing.assert_array_equal(tree["model"]["embeddings"]["1"], model.embeddings[1])
    np.testing.assert_array_equal(tree["model"]["out_bias"], model.out_bias)
    assert int(tree["train_state"]["step"]) == STEPS
    assert set(tree["train_state"]) == {"step", "key", "opt_state"}


def test_the_readmes_plain_orbax_snippet_runs_as_written(
    run_a: pathlib.Path, tmp_path: pathlib.Path, monkeypatch, caplog, capsys
):
    """The README's plain-Orbax block, executed as it stands from a directory holding the main
    job's run (here `run_a` in its place), prints the model's array and logs no warning."""
    import logging
    import re

    readme = (pathlib.Path(__file__).parents[1] / "README.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "orbax" in b]
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "quickstart").symlink_to(run_a)
    monkeypatch.chdir(tmp_path)
    with caplog.at_level(logging.WARNING):
        exec(compile(block, "README.md", "exec"), {})
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    shape = load(run_a).model.embeddings[0].shape
    assert capsys.readouterr().out.strip() == f"{shape} ['key', 'opt_state', 'step']"


def test_a_run_saved_in_the_old_checkpoint_format_loads_but_does_not_resume(
    run_a: pathlib.Path, tmp_path: pathlib.Path
):
    """Format 1 (anonymous leaf lists in items `model`, `opt_state`, `state`): `load` reads the
    model; `--resume` says why it cannot continue, and changes nothing."""
    import orbax.checkpoint as ocp

    out = tmp_path / "old"
    out.mkdir()
    shutil.copy(run_a / "config.json", out / "config.json")
    shutil.copy(run_a / "metrics.jsonl", out / "metrics.jsonl")
    model = load(run_a).model
    leaves = [np.asarray(x) for x in _arrays(model)]
    manager = ocp.CheckpointManager(
        (out / "checkpoints").absolute(),
        options=ocp.CheckpointManagerOptions(create=True, enable_async_checkpointing=False),
    )
    manager.save(
        STEPS,
        args=ocp.args.Composite(
            model=ocp.args.StandardSave(leaves),  # pyright: ignore[reportCallIssue]
            opt_state=ocp.args.StandardSave([np.zeros(3)]),  # pyright: ignore[reportCallIssue]
            state=ocp.args.StandardSave(  # pyright: ignore[reportCallIssue]
                {"key": np.zeros(2, np.uint32), "step": np.asarray(STEPS, np.int32)}
            ),
        ),
    )
    manager.wait_until_finished()
    loaded = load(out)
    assert loaded.step == STEPS
    _assert_same_arrays(loaded.model, model)
    before = _snapshot(out)
    with pytest.raises(RunError, match="older zoo"):
        train(CONFIG, out, resume=True, progress=False)
    assert _snapshot(out) == before


LEGACY_RUNS = {
    "bilevel": "docs/figures/schug2024-fig3-cpu/fig3b-cpu/anil-compositional/seed_0",
    "in-context": "docs/figures/lake2019/mutual-exclusivity/mutual-exclusivity/seed_0",
    "ppo": "docs/figures/madan2021-doorkey-cpu/doorkey-5x5-lstm/seed_0",
}
"""Run directories saved by 0.1 (committed), one of each built-in algorithm."""
LEGACY_SECTIONS = {"bilevel": ("inner", "outer"), "in-context": ("outer",), "ppo": ()}
"""The 0.1 sections of `config.json` each algorithm's config holds now."""


@pytest.mark.parametrize("algorithm", list(LEGACY_RUNS))
def test_a_run_saved_by_0_1_reads_in_the_new_shape(algorithm: str, tmp_path: pathlib.Path):
    """0.1 saved the inner loop and outer optimizer as top-level sections of `config.json`:
    `read_config` moves those the run's algorithm has into its config, every value as saved
    (those it has not were the defaults, which it never read); all else reads as saved."""
    from runs.config import to_dict
    from runs.run import config_from_dict

    saved = json.loads((REPO / LEGACY_RUNS[algorithm] / "config.json").read_text())
    assert {"inner", "outer"} <= set(saved) and saved["algorithm_name"] == algorithm
    (tmp_path / "config.json").write_text(json.dumps(saved))
    config = read_config(tmp_path)
    assert config.algorithm_name == algorithm
    assert type(config.algorithm) is runs.algorithms.get(algorithm).config
    read = to_dict(config)
    assert "inner" not in read and "outer" not in read
    expected = {**saved["algorithm"], **{s: saved[s] for s in LEGACY_SECTIONS[algorithm]}}
    assert expected and {k: read["algorithm"][k] for k in expected} == expected
    for name in set(read["algorithm"]) - set(expected):  # added since (PPO's slow_lr_factor)
        default = getattr(type(config.algorithm)(), name)
        assert read["algorithm"][name] == to_dict(default), name
    for key in set(saved) - {"inner", "outer", "algorithm", "task_source", "model_source"}:
        if key == "run":  # fields added since read as their defaults (0.2's run.init)
            assert read["run"] == {**to_dict(runs.RunConfig()), **saved["run"]}, key
            continue
        assert read[key] == saved[key], key
    for key in ("task_source", "model_source"):  # runs older than sources saved none
        if saved.get(key) is not None:
            assert read[key]["version"] == saved[key]["version"]
        else:
            assert read[key] is None
    assert config_from_dict(read) == config  # saved again, in the new shape, it reads back


# --------------------------------------------------------------------------- errors


def test_an_existing_run_needs_resume(run_a: pathlib.Path, no_training: None):
    before = _snapshot(run_a)
    with pytest.raises(RunError, match="--resume") as info:
        train(CONFIG, run_a, progress=False)
    assert "nothing there was changed" in str(info.value)
    assert _snapshot(run_a) == before


def test_a_non_empty_directory_without_a_run(tmp_path: pathlib.Path, no_training: None):
    (tmp_path / "notes.txt").write_text("mine\n")
    for resume in (False, True):
        with pytest.raises(RunError, match="not empty"):
            train(CONFIG, tmp_path, resume=resume, progress=False)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_resume_with_other_settings(run_a: pathlib.Path, no_training: None):
    before = _snapshot(run_a)
    changed = dataclasses.replace(
        CONFIG,
        algorithm=dataclasses.replace(
            CONFIG.algorithm, outer=dataclasses.replace(CONFIG.algorithm.outer, lr=0.5)
        ),
        task=dataclasses.replace(CONFIG.task, temperature=0.2),
    )
    with pytest.raises(RunError, match=r"only run\.steps and run\.keep may change") as info:
        train(changed, run_a, resume=True, progress=False)
    message = str(info.value)
    assert "algorithm.outer.lr: saved 0.01, given 0.5" in message
    assert "task.temperature" in message
    assert "run.steps" not in message.split("):\n")[1]  # the differences listed
    assert _snapshot(run_a) == before


def test_too_many_devices(tmp_path: pathlib.Path, no_training: None):
    config = dataclasses.replace(CONFIG, run=dataclasses.replace(CONFIG.run, devices=64))
    with pytest.raises(RunError, match="64 devices asked for"):
        train(config, tmp_path / "new", progress=False)
    assert not (tmp_path / "new").exists()


def test_config_validation():
    with pytest.raises(ValueError, match="max_active=5 exceeds num_modules=4"):
        HyperteacherConfig(num_modules=4, max_active=5)
    with pytest.raises(ValueError, match="steps must be >= 0"):
        RunConfig(steps=-1)
    with pytest.raises(ValueError, match="multiple of steps_per_call"):
        RunConfig(steps_per_call=3, checkpoint_every=4)
    with pytest.raises(ValueError, match="meta_batch must be >= 1"):
        OuterConfig(meta_batch=0)
    with pytest.raises(ValueError, match=r"eval.every \(3\) must be a multiple"):
        make_tiny_config(eval_every=3)


def test_divergence_after_skipped_gradients_names_the_cause(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
):
    """Gradients went non-finite first (and were skipped) while the loss was finite, then the
    loss: the message says so, counts the skipped steps and names the inner Adam's eps_root."""
    real = runs.trainer.train_chunk
    calls = []

    def gradients_then_loss(*args, **kwargs):
        state, metrics = real(*args, **kwargs)
        calls.append(None)
        if len(calls) == 2:  # steps 2 and 3 (counted from 0): non-finite gradients, skipped
            metrics = {**metrics, "grad_finite": metrics["grad_finite"] * 0}
        if len(calls) == 3:  # step 5: the loss
            metrics = {**metrics, "loss": metrics["loss"].at[1].set(jnp.inf)}
        return state, metrics

    monkeypatch.setattr(runs.trainer, "train_chunk", gradients_then_loss)
    with pytest.raises(TrainingDiverged) as info:
        train(CONFIG, tmp_path / "diverged", progress=False)
    message = str(info.value)
    assert "non-finite at step 5" in message
    assert "gradient became non-finite first, at step 2" in message
    assert "2 step(s) before it had a non-finite gradient" in message
    assert "--algorithm.inner.eps-root" in message and "last good checkpoint (step 4)" in message


# ------------------------------------------------------------- integrity (issue 21)


def test_a_silently_corrupted_checkpoint_is_rejected(tmp_path: pathlib.Path):
    """64 bytes XOR-ed into the data file of an 8,192-value array (same size): Orbax reads
    it back without an error, the digests saved with the checkpoint catch it, and the
    previous checkpoint is used."""
    from runs.state import TrainState

    w = jnp.asarray(np.random.default_rng(0).normal(size=8192), jnp.float32)
    checkpoints = Checkpoints(tmp_path)
    for step in (1, 2):
        checkpoints.save(
            TrainState(step=jnp.asarray(step), model={"w": w * step}, opt_state=(), key=jr.key(0))
        )
    data = [p for p in (tmp_path / "checkpoints" / "2" / "model").rglob("*") if p.is_file()]
    biggest = max(data, key=lambda p: p.stat().st_size)
    raw = bytearray(biggest.read_bytes())
    middle = len(raw) // 2
    raw[middle : middle + 64] = bytes(b ^ 0x5A for b in raw[middle : middle + 64])
    biggest.write_bytes(bytes(raw))
    with pytest.warns(CheckpointWarning, match="step 2 .* do(es)? not match the digests"):
        step, model = Checkpoints(tmp_path).restore_model({"w": w})
    assert step == 1
    np.testing.assert_array_equal(model["w"], w)


def test_digests_are_saved_with_every_checkpoint(run_a: pathlib.Path):
    from runs.checkpoint import digests, to_tree

    for step in Checkpoints(run_a).steps():
        assert (run_a / "checkpoints" / str(step) / "digests").is_dir()
    import orbax.checkpoint as ocp

    args = ocp.args.Composite(digests=ocp.args.JsonRestore())  # pyright: ignore[reportCallIssue]
    saved = Checkpoints(run_a).manager.restore(STEPS, args=args)["digests"]
    assert saved["model"] == digests(to_tree(load(run_a).model))


def test_a_second_writer_is_refused(tmp_path: pathlib.Path, no_training: None):
    from runs.lock import DirectoryLock

    out = tmp_path / "locked"
    with DirectoryLock(out, "zoo train"):
        with pytest.raises(RunError, match=rf"process {os.getpid()} .*zoo train"):
            train(CONFIG, out, progress=False)
        assert [p.name for p in out.iterdir()] == [".lock"]
    # Released with its holder: the lock file alone does not block the next writer.
    with DirectoryLock(out, "zoo train"):
        pass


def test_the_lock_is_released_when_its_holder_dies(tmp_path: pathlib.Path):
    out = tmp_path / "dead"
    code = "import sys, os; from runs.lock import DirectoryLock; DirectoryLock(sys.argv[1], 'x').acquire(); os._exit(0)"
    subprocess.run([sys.executable, "-c", code, str(out)], check=True, env=_env())
    from runs.lock import DirectoryLock

    with DirectoryLock(out, "zoo train"):
        assert (out / ".lock").is_file()
    assert not (out / ".lock").exists()  # released: removed


def test_a_finished_run_leaves_no_lock(run_a: pathlib.Path):
    assert not (run_a / ".lock").exists()


def test_a_lock_file_removed_under_a_waiting_writer_is_not_shared(tmp_path: pathlib.Path):
    """A writer that opened the lock file just before its holder released (and removed) it
    does not lock the removed file: it locks the one at the path, which a third writer sees."""
    from runs.lock import DirectoryLock, LockedError

    first = DirectoryLock(tmp_path, "first").acquire()
    opened = open(tmp_path / ".lock", "a+")  # noqa: SIM115 - the second writer's `open`
    first.release()
    real_open = open

    def late_open(path, mode="r", *args, **kwargs):  # the second writer: the old file first
        nonlocal opened
        if opened is not None and str(path).endswith(".lock"):
            f, opened = opened, None
            return f
        return real_open(path, mode, *args, **kwargs)

    import builtins

    builtins.open = late_open
    try:
        second = DirectoryLock(tmp_path, "second").acquire()
    finally:
        builtins.open = real_open
    with pytest.raises(LockedError, match="second"):
        DirectoryLock(tmp_path, "third").acquire()
    second.release()
    assert not (tmp_path / ".lock").exists()


def test_a_start_that_fails_at_its_first_compile_can_be_retried(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
):
    """The step-0 checkpoint is saved before the first compile: a start that fails there takes
    it (and its config and lock) back, so that the same command runs again without --resume."""

    def fail(*args, **kwargs):
        raise RuntimeError("compilation failed")

    monkeypatch.setattr(runs.trainer, "train_chunk", fail)
    out = tmp_path / "compile"
    with pytest.raises(RuntimeError, match="compilation failed"):
        train(CONFIG, out, progress=False)
    assert not out.exists()


def test_a_torn_last_metrics_line_is_tolerated_and_repaired(
    run_a: pathlib.Path, tmp_path: pathlib.Path
):
    out = tmp_path / "torn"
    shutil.copytree(run_a, out)
    whole = (out / "metrics.jsonl").read_text()
    (out / "metrics.jsonl").write_text(whole + '{"step": 8, "pool": "tr')
    assert _rows(out) == _rows(run_a)
    train(CONFIG, out, resume=True, progress=False)  # finished: only the repair happens
    assert (out / "metrics.jsonl").read_text() == whole
    (out / "metrics.jsonl").write_text('{"step": 2, "po\n' + whole)
    with pytest.raises(RunError, match="line 1, is not JSON"):
        runs.run.read_metrics(out)


def test_a_run_is_finished_when_its_final_checkpoint_is(
    run_a: pathlib.Path, tmp_path: pathlib.Path
):
    """Killed between the final metrics rows and the final checkpoint: the sweep does not
    count it finished, `load` says which step it read, and a resume completes it."""
    from runs.run import UnfinishedRunWarning
    from runs.sweeps import _finished

    assert _finished(run_a, STEPS)
    out = tmp_path / "no-final-checkpoint"
    shutil.copytree(run_a, out)
    shutil.rmtree(out / "checkpoints" / str(STEPS))
    assert not _finished(out, STEPS)
    with pytest.warns(UnfinishedRunWarning, match=rf"step {STEPS - 2}; the run was set to {STEPS}"):
        assert load(out).step == STEPS - 2
    train(CONFIG, out, resume=True, progress=False)
    assert _finished(out, STEPS)
    assert _rows(out) == _rows(run_a)


def test_a_start_killed_before_its_config_is_adopted(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
):
    """What a start killed early leaves (an empty `checkpoints/`, a lock file) does not block
    the next start; the config is written before anything else. A start that fails (rather
    than being killed) before its first checkpoint takes back what it wrote."""
    out = tmp_path / "half"
    (out / "checkpoints").mkdir(parents=True)
    (out / ".lock").write_text("")
    seen = []

    def checkpoints(directory, **kwargs):
        seen.append(read_config(directory))
        _no_training()

    monkeypatch.setattr(runs.run, "Checkpoints", checkpoints)
    monkeypatch.setattr(runs.trainer, "train_chunk", _no_training)
    with pytest.raises(AssertionError, match="before its settings were checked"):
        train(CONFIG, out, progress=False)  # gets past every check to the checkpoints
    assert seen == [SAVED]
    assert sorted(p.name for p in out.iterdir()) == []  # the stale lock file too


@pytest.mark.parametrize("existed", [False, True])
def test_a_start_that_fails_before_its_first_checkpoint_can_be_retried(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, existed: bool
):
    """An error between writing `config.json` and committing the first checkpoint (Orbax
    failing, say) leaves no half-made run that would refuse the same command."""
    out = tmp_path / "half"
    if existed:
        out.mkdir()

    def fail(self, state):
        raise RuntimeError("disk full")

    monkeypatch.setattr(runs.checkpoint.Checkpoints, "save", fail)
    monkeypatch.setattr(runs.trainer, "train_chunk", _no_training)
    with pytest.raises(RuntimeError, match="disk full"):
        train(CONFIG, out, progress=False)
    if existed:
        assert sorted(p.name for p in out.iterdir()) == []
    else:
        assert not out.exists()


@pytest.mark.parametrize("where", ["file", "under-file"])
def test_an_out_that_cannot_be_a_directory(tmp_path: pathlib.Path, where: str, no_training):
    (tmp_path / "f").write_text("x")
    out = tmp_path / "f" if where == "file" else tmp_path / "f" / "run"
    with pytest.raises(RunError, match="is a file"):
        train(CONFIG, out, progress=False)
    assert (tmp_path / "f").read_text() == "x"


def test_a_hand_edited_config_is_named(run_a: pathlib.Path, tmp_path: pathlib.Path):
    out = tmp_path / "edited"
    shutil.copytree(run_a, out)
    (out / "config.json").write_text((out / "config.json").read_text()[:-20])
    with pytest.raises(RunError, match=r"config.json cannot be read"):
        load(out)


def test_ctrl_c_saves_the_newest_state_and_resumes_exactly(
    run_a: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
):
    """Ctrl-C while the second chunk computes: that chunk is finished, logged and saved, the
    run stops with `RunInterrupted`, and `--resume` ends exactly where the straight run did."""
    from runs.run import RunInterrupted

    real, calls = runs.trainer.train_chunk, []

    class Pending(dict):
        interrupted = False

        def items(self):  # the first host read of the chunk's metrics is interrupted
            if not Pending.interrupted:
                Pending.interrupted = True
                raise KeyboardInterrupt
            return super().items()

    def interrupted(*args, **kwargs):
        state, metrics = real(*args, **kwargs)
        calls.append(None)
        return state, (Pending(metrics) if len(calls) == 2 else metrics)

    monkeypatch.setattr(runs.trainer, "train_chunk", interrupted)
    out = tmp_path / "interrupted"
    with pytest.raises(RunInterrupted, match="Interrupted at step 4 of 6"):
        train(CONFIG, out, progress=False)
    assert Checkpoints(out).steps() == [0, 2, 4]
    assert [r["step"] for r in runs.run.read_metrics(out)] == [2, 4]
    monkeypatch.setattr(runs.trainer, "train_chunk", real)
    train(CONFIG, out, resume=True, progress=False)
    _assert_same_arrays(load(out).model, load(run_a).model)
    assert _rows(out) == _rows(run_a)


def test_load_writes_nothing(run_a: pathlib.Path, tmp_path: pathlib.Path):
    out = tmp_path / "read-only"
    shutil.copytree(run_a, out)
    before = {str(p.relative_to(out)) for p in out.rglob("*")}, _snapshot(out)
    load(out)
    load(out, step=2)
    assert ({str(p.relative_to(out)) for p in out.rglob("*")}, _snapshot(out)) == before


@pytest.mark.parametrize(
    "flags", [["--tasks", "0"], ["--inner-steps", "-1"], ["--step", "-2"]], ids=str
)
def test_zoo_eval_refuses_bad_numbers_before_loading(
    run_a: pathlib.Path, flags: list[str], capsys: pytest.CaptureFixture
):
    from runs.cli import main

    before = _snapshot(run_a)
    assert main(["eval", str(run_a), *flags]) == 2
    assert f"{flags[0]} must be >=" in capsys.readouterr().err
    assert _snapshot(run_a) == before


def test_resume_with_changed_optimizer_settings_when_asked(
    run_a: pathlib.Path, tmp_path: pathlib.Path
):
    """The divergence advice can be followed: `--resume --allow-changes` accepts a lower
    learning rate (recorded in history.jsonl and config.json), never a change of shapes."""
    out = tmp_path / "changed"
    shutil.copytree(run_a, out)
    lower = _with_outer(CONFIG, lr=1e-3)
    with pytest.raises(RunError, match=r"with --allow-changes, also .*algorithm\.outer\.lr"):
        train(lower, out, resume=True, progress=False)
    wider = _with_outer(lower, meta_batch=8)
    with pytest.raises(RunError, match=r"algorithm\.outer\.meta_batch"):
        train(wider, out, resume=True, progress=False, allow_changes=True)
    before = (out / "history.jsonl").read_text()
    assert [json.loads(line)["event"] for line in before.splitlines()] == ["start"]
    assert (out / "history.jsonl").read_text() == before  # the refusals recorded nothing
    train(lower, out, resume=True, progress=False, allow_changes=True)  # finished: no step
    assert read_config(out).algorithm.outer.lr == 1e-3
    history = [json.loads(line) for line in (out / "history.jsonl").read_text().splitlines()]
    assert history[-1]["event"] == "resume" and history[-1]["step"] == STEPS
    assert history[-1]["changes"] == ["algorithm.outer.lr: saved 0.01, given 0.001"]
    assert history[-1]["commit"] == history[0]["commit"]  # the code's provenance, every time


def test_an_inner_batch_larger_than_the_support_is_refused_before_compiling(
    tmp_path: pathlib.Path, no_training: None
):
    task = eqx.filter_eval_shape(build_task, CONFIG)
    support = eqx.filter_eval_shape(lambda t: t.sample(jr.key(0)), task).support.x.shape[0]
    inner = dataclasses.replace(CONFIG.algorithm.inner, batch=support + 1)
    big = dataclasses.replace(CONFIG, algorithm=dataclasses.replace(CONFIG.algorithm, inner=inner))
    with pytest.raises(
        RunError, match=rf"algorithm\.inner\.batch={support + 1} exceeds the {support}"
    ):
        train(big, tmp_path / "big", progress=False)
    assert not (tmp_path / "big").exists()


def test_loading_a_run_logs_no_orbax_warnings(run_a: pathlib.Path, caplog):
    """`load` opens the checkpoints read-only; Orbax would warn about that (three absl lines a
    user cannot act on)."""
    import logging

    with caplog.at_level(logging.INFO):
        load(run_a)
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
