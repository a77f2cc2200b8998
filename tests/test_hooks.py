"""The training loop's public hooks: a user's hook sees every call at its interval, changes no
number, and the TensorBoard and Weights & Biases loggers write what `metrics.jsonl` holds
(read back from their own files; wandb offline, with the network shut)."""

import json
import socket
import struct

import pytest
from conftest import make_tiny_config

import plugins
import runs
from runs.hooks import Hook


class Recorder(Hook):
    def __init__(self, every: int):
        self.every = every
        self.calls: list[tuple[str, int]] = []

    def on_start(self, info):
        self.calls.append(("start", info.step))

    def on_step(self, info):
        assert info.row["step"] == info.step and info.row["pool"] == "train"
        self.calls.append(("step", info.step))

    def on_evaluation(self, info, results):
        assert "test" in results
        self.calls.append(("evaluation", info.step))

    def on_checkpoint(self, info):
        self.calls.append(("checkpoint", info.step))

    def on_end(self, info):
        self.calls.append(("end", info.step))


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("plain") / "run"
    return runs.train(make_tiny_config(steps=4, eval_every=4), out, progress=False)


def _rows(out):
    return [{k: v for k, v in r.items() if k not in ("time",)} for r in runs.read_metrics(out)]


def test_a_hook_sees_each_call_at_its_interval_and_changes_nothing(plain_run, tmp_path):
    recorder = Recorder(every=4)
    out = runs.train(
        make_tiny_config(steps=4, eval_every=4), tmp_path / "run", progress=False, hooks=[recorder]
    )
    assert recorder.calls == [
        ("start", 0),
        ("checkpoint", 2),  # checkpoint_every 2; the hook's own `every` is 4
        ("evaluation", 4),
        ("checkpoint", 4),
        ("step", 4),  # after the built-in hooks of the same step
        ("end", 4),
    ]
    assert _rows(out) == _rows(plain_run)


def _tfrecords(path):
    """The records of a TFRecord file (length, crc, data, crc)."""
    data = path.read_bytes()
    i = 0
    while i < len(data):
        (length,) = struct.unpack("<Q", data[i : i + 8])
        yield data[i + 12 : i + 12 + length]
        i += 12 + length + 4


def _scalars(folder):
    from tensorboardX.proto import event_pb2

    found = {}
    for file in folder.glob("events.out.tfevents.*"):
        for record in _tfrecords(file):
            event = event_pb2.Event.FromString(record)
            for value in event.summary.value:
                found[value.tag, event.step] = value.simple_value
    return found


def test_tensorboard_events_hold_the_metrics(tmp_path):
    spec = plugins.hook_spec("tensorboard")
    out = tmp_path / "run"
    hook = spec.load()(spec.config(), out=out)
    runs.train(make_tiny_config(steps=4, eval_every=4), out, progress=False, hooks=[hook])
    scalars = _scalars(out / "tensorboard")
    rows = runs.read_metrics(out)
    for row in rows:
        prefix = "train" if row["pool"] == "train" else row["pool"]
        for key in ("loss", "accuracy"):
            if key in row:
                assert scalars[f"{prefix}/{key}", row["step"]] == pytest.approx(row[key])
    assert ("test/accuracy", 4) in scalars and ("train/loss", 2) in scalars


def _wandb_records(path):
    """The records of a `.wandb` file (a LevelDB-style log: a 7-byte header, then 32 KiB
    blocks of chunks, each with a 7-byte header: CRC, length, type full/first/middle/last)."""
    data = path.read_bytes()
    ident = struct.unpack("<4sHB", data[:7])[0]
    assert ident == b":W&B", ident
    i, pending = 7, b""
    while i + 7 <= len(data):
        left = 32768 - i % 32768
        if left < 7:  # the block's tail is padding
            i += left
            continue
        _, length, kind = struct.unpack("<IHB", data[i : i + 7])
        chunk = data[i + 7 : i + 7 + length]
        i += 7 + length
        if kind == 0 and length == 0:
            continue
        pending += chunk
        if kind in (1, 4):  # full, last
            yield pending
            pending = b""


def _wandb_history(path) -> dict[int, dict[str, float]]:
    from wandb.proto import wandb_internal_pb2

    history: dict[int, dict[str, float]] = {}
    for data in _wandb_records(path):
        record = wandb_internal_pb2.Record.FromString(data)
        if record.WhichOneof("record_type") == "history":
            items = {
                i.key or "/".join(i.nested_key): json.loads(i.value_json)
                for i in record.history.item
            }
            history.setdefault(int(items["_step"]), {}).update(items)
    return history


def test_wandb_logs_offline_with_no_network(tmp_path, monkeypatch):
    wandb = pytest.importorskip("wandb")

    connect = socket.socket.connect

    def local_only(self, address):  # wandb talks to its own local service process
        host = address[0] if isinstance(address, tuple) else "local"
        if host not in ("local", "127.0.0.1", "localhost", "::1"):
            raise AssertionError(f"wandb tried to reach the network ({address})")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", local_only)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.netrc: offline by default
    spec = plugins.hook_spec("wandb")
    out = tmp_path / "run"
    hook = spec.load()(spec.config(), out=out)
    assert hook.mode == "offline"
    runs.train(make_tiny_config(steps=4, eval_every=4), out, progress=False, hooks=[hook])
    (file,) = (out / "wandb").glob("offline-run-*/*.wandb")
    history = _wandb_history(file)
    assert sorted(history) == [2, 4]
    for row in runs.read_metrics(out):
        prefix = "train" if row["pool"] == "train" else row["pool"]
        for key in ("loss", "accuracy"):
            if key in row:
                assert history[row["step"]][f"{prefix}/{key}"] == pytest.approx(row[key])
    del wandb


def test_an_unknown_hook_on_the_cli_names_the_installed_ones(capsys, tmp_path):
    from runs.cli import main

    code = main(
        [
            "train",
            "hyperteacher",
            "linear-hypernet",
            "--out",
            str(tmp_path / "r"),
            "--hooks",
            "tensorbord",
        ]
    )
    assert code == 2
    assert "tensorboard" in capsys.readouterr().err
