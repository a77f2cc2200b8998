"""`zoo train --distributed`: two processes on 127.0.0.1 (one CPU device each) train exactly
as one process with two simulated devices, and either run resumes in one process."""

import dataclasses
import os
import pathlib
import socket
import subprocess
import sys

import equinox as eqx
import jax
import numpy as np
import pytest
from test_cli import TINY, TRAIN

import runs
from runs.config import DistributedConfig, DistributedError
from runs.run import read_config, read_history, read_metrics

REPO = pathlib.Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _arrays(model) -> list[np.ndarray]:
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_array))]


def _same_rows(a: list[dict], b: list[dict]) -> None:
    """The same metrics rows but for the wall-clock ones."""
    clock = ("time", "fps")
    assert [{k: v for k, v in r.items() if k not in clock} for r in a] == [
        {k: v for k, v in r.items() if k not in clock} for r in b
    ]


def test_flags_go_with_distributed():
    with pytest.raises(DistributedError, match="go with --distributed"):
        DistributedConfig(num_processes=2)
    with pytest.raises(DistributedError, match="below --num-processes"):
        DistributedConfig(distributed=True, num_processes=2, process_id=2)
    with pytest.raises(DistributedError, match="HOST:PORT"):
        DistributedConfig(distributed=True, coordinator="127.0.0.1")


@pytest.mark.slow  # three processes compiling: about 7 minutes on 2 busy cores (`pytest -m slow`)
def test_two_processes_train_as_one_with_two_devices(tmp_path: pathlib.Path):
    multi = tmp_path / "multi"
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "JAX_PLATFORMS": "cpu",
        "XLA_FLAGS": "--xla_force_host_platform_device_count=1",
    }
    children, logs = [], []
    for i in range(2):
        command = [sys.executable, "-m", "runs.cli", *TRAIN, *TINY, "--steps", "4"]
        command += ["--out", str(multi), "--distributed", "--coordinator", f"127.0.0.1:{port}"]
        command += ["--num-processes", "2", "--process-id", str(i)]
        log = tmp_path / f"process{i}.txt"
        with log.open("w") as f:  # a file, not a pipe: the child never waits on a reader
            children.append(subprocess.Popen(command, env=env, stdout=f, stderr=f))
        logs.append(log)
    try:
        for child, log in zip(children, logs, strict=True):
            assert child.wait(timeout=900) == 0, log.read_text()[-3000:]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    assert "run saved in" in logs[0].read_text()
    assert "process 1 of 2 done" in logs[1].read_text()
    (history,) = read_history(multi)  # written once, by process 0
    assert (history["devices"], history["processes"]) == (2, 2)

    # The same run in this process, over its two simulated devices (conftest).
    config = read_config(multi)
    single = runs.train(
        dataclasses.replace(config, run=dataclasses.replace(config.run, devices=2)),
        tmp_path / "single",
        progress=False,
    )
    # Bit for bit: each device draws its share of the meta-batch from the same keys and
    # the mean over two devices adds the same two numbers, whether they are processes or not.
    a, b = runs.load(multi), runs.load(single)
    assert a.step == b.step == 4
    for x, y in zip(_arrays(a.model), _arrays(b.model), strict=True):
        np.testing.assert_array_equal(x, y)
    _same_rows(read_metrics(multi), read_metrics(single))

    # The checkpoints of two processes resume in one, as those of one process do.
    for directory in (multi, single):
        config = read_config(directory)
        more = dataclasses.replace(config, run=dataclasses.replace(config.run, steps=6))
        runs.train(more, directory, resume=True, progress=False)
    for x, y in zip(_arrays(runs.load(multi).model), _arrays(runs.load(single).model), strict=True):
        np.testing.assert_array_equal(x, y)
    _same_rows(read_metrics(multi), read_metrics(single))
