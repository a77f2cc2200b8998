"""The determinism contract of the README ("Same seed, same numbers"): a run's checkpoints and
evaluation rows are bit-identical whatever the process, the chunking (`steps_per_call`), a
resume and the devices visible but not used; its history records what they do depend on.
Checked on a tiny teacher-student run, the task whose module alignments differed between
sessions (docs/papers/schug2024.md, Fig. 2C)."""

import dataclasses
import os
import pathlib
import subprocess
import sys

import jax
import orbax.checkpoint as ocp
import pytest
from conftest import make_tiny_config

import runs.run
from runs.checkpoint import Checkpoints
from runs.config import EvalConfig, InnerConfig
from runs.run import read_history, save_config, train
from tasks.config import TeacherStudentConfig
from zoo.config import ShallowHypernetConfig

REPO = pathlib.Path(__file__).resolve().parents[1]
STEPS = 4
# Two chunks of 2 steps, a checkpoint and an evaluation (the test pool and the module alignment)
# after each; one device, although the tests' process has two (conftest).
BASE = make_tiny_config(steps=STEPS, devices=1)
CONFIG = dataclasses.replace(
    BASE,
    task=TeacherStudentConfig(
        num_modules=4,
        in_features=3,
        hidden=4,
        out_features=2,
        shots_support=8,
        shots_query=8,
        eval_h=(1,),
    ),
    task_name="teacher-student",
    model=ShallowHypernetConfig(hidden=6, num_modules=5),
    model_name="shallow-hypernet",
    algorithm=dataclasses.replace(
        BASE.algorithm, inner=InnerConfig(steps=5, lr=0.05, weight_decay=0.0, mode="equilibrium")
    ),
    eval=EvalConfig(every=2, tasks=4, batch=2, pools=("test",)),
)


def _with_run(config, eval_every: int | None = None, **run):
    """`config` with other run settings (and evaluation interval)."""
    return dataclasses.replace(
        config,
        run=dataclasses.replace(config.run, **run),
        eval=dataclasses.replace(
            config.eval, every=config.eval.every if eval_every is None else eval_every
        ),
    )


def _digests(directory: pathlib.Path) -> dict[int, dict]:
    """The digests saved with each checkpoint of a run: of every array of its model and state."""
    checkpoints = Checkpoints(directory, read_only=True)
    args = ocp.args.Composite(digests=ocp.args.JsonRestore())  # pyright: ignore[reportCallIssue]
    return {s: checkpoints.manager.restore(s, args=args)["digests"] for s in checkpoints.steps()}


def _rows(directory: pathlib.Path, train_rows: bool = True) -> list[dict]:
    """Metrics rows without their wall-clock `time` (and without the training rows, which
    summarize a chunk and so follow `steps_per_call`, unless `train_rows`)."""
    return [
        {k: v for k, v in row.items() if k != "time"}
        for row in runs.run.read_metrics(directory)
        if train_rows or row["pool"] != "train"
    ]


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The run of `CONFIG`, uninterrupted, in this process."""
    out = train(CONFIG, tmp_path_factory.mktemp("reference") / "run", progress=False)
    rows = runs.run.read_metrics(out)
    assert [r["step"] for r in rows if r["pool"] == "identification"] == [2, STEPS]
    assert all("alignment" in r for r in rows if r["pool"] == "identification")
    return out


def test_the_same_run_twice_in_one_process(reference: pathlib.Path, tmp_path: pathlib.Path):
    again = train(CONFIG, tmp_path / "again", progress=False)
    assert list(_digests(again)) == [0, 2, STEPS]
    assert _digests(again) == _digests(reference)
    assert _rows(again) == _rows(reference)


def test_chunking_changes_no_number(reference: pathlib.Path, tmp_path: pathlib.Path):
    """All 4 steps in one compiled call: the same state and evaluation at step 4. (The training
    rows are means over a chunk, so they follow the chunking.)"""
    config = _with_run(CONFIG, steps_per_call=STEPS, checkpoint_every=STEPS, eval_every=STEPS)
    whole = train(config, tmp_path / "whole", progress=False)
    assert _digests(whole)[STEPS] == _digests(reference)[STEPS]
    at_end = [r for r in _rows(reference, train_rows=False) if r["step"] == STEPS]
    assert _rows(whole, train_rows=False) == at_end


def test_a_resumed_run_is_the_uninterrupted_one(reference: pathlib.Path, tmp_path: pathlib.Path):
    """2 steps, then resumed to 4 (the only setting a resume may change is the step count;
    the tiny config's learning rate is constant, so the 2-step run is the first half of the
    4-step one)."""
    out = train(_with_run(CONFIG, steps=2), tmp_path / "resumed", progress=False)
    assert train(CONFIG, out, resume=True, progress=False) == out
    assert _digests(out) == _digests(reference)
    assert _rows(out) == _rows(reference)
    assert [h["event"] for h in read_history(out)] == ["start", "resume"]


_CHILD = """\
import sys
from runs.run import read_config, train
train(read_config(sys.argv[1]), sys.argv[2], progress=False)
"""


def test_devices_visible_but_unused_change_no_number(
    reference: pathlib.Path, tmp_path: pathlib.Path
):
    """The same run in another process, which sees one device where this one sees two (the
    run uses one in both)."""
    assert len(jax.devices()) == 2, "conftest asks XLA for 2 simulated CPU devices"
    staging, out = tmp_path / "staging", tmp_path / "child"
    save_config(CONFIG, staging)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        "XLA_FLAGS": "--xla_force_host_platform_device_count=1",
    }
    child = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", _CHILD, str(staging), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == 0, child.stderr[-3000:]
    assert read_history(out)[0]["devices"] == read_history(reference)[0]["devices"] == 1
    assert _digests(out) == _digests(reference)
    assert _rows(out) == _rows(reference)


def test_the_history_names_what_the_numbers_depend_on(reference: pathlib.Path):
    """Commit, JAX and jaxlib versions, the host's processor and cores and the devices used:
    the things the contract holds fixed, recorded at every start and resume."""
    (start,) = read_history(reference)
    assert start["jax"] == jax.__version__ and start["jaxlib"]
    assert {"commit", "dirty", "cpu"} <= set(start)
    if hasattr(os, "sched_getaffinity"):
        assert start["cores"] == len(os.sched_getaffinity(0))
    assert start["devices"] == 1 and start["device_kind"] == jax.devices()[0].device_kind
