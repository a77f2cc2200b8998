"""`zoo.IOSpec`: what a task's data look like to the model factory."""

import dataclasses
import os
import pathlib
import subprocess
import sys

import pytest

from zoo import IOSpec

REPO = pathlib.Path(__file__).resolve().parents[1]


def test_vectors():
    io = IOSpec.vectors(16, 8)
    assert io == IOSpec(
        x_shape=(16,), x_dtype="float32", y_shape=(8,), y_dtype="float32", out_features=8
    )
    assert io.in_features == 16 and io.out_features == 8
    assert io.x_vocab is io.y_vocab is io.actions is None
    assert hash(io) == hash(IOSpec.vectors(16, 8))  # usable as a static field


def test_sequences():
    io = IOSpec.sequences(x_len=10, y_len=49, x_vocab=15, y_vocab=9)
    assert (io.x_shape, io.y_shape, io.x_dtype, io.y_dtype) == ((10,), (49,), "int32", "int32")
    assert io.in_features == 15  # tokens: the vocabulary, not the sequence length
    assert io.out_features == 9


def test_actions_and_shapes():
    io = IOSpec(
        x_shape=(7, 7, 3),
        x_dtype="uint8",
        y_shape=(),
        y_dtype="int32",
        out_features=4,
        actions=4,
    )
    assert io.x_shape == (7, 7, 3) and io.in_features == 3 and io.actions == 4
    with pytest.raises(dataclasses.FrozenInstanceError):
        io.actions = 5  # pyright: ignore[reportAttributeAccessIssue]


def test_bad_specs_are_refused():
    with pytest.raises(ValueError, match="x_shape"):
        IOSpec(x_shape=(-1,), x_dtype="float32", y_shape=(1,), y_dtype="float32", out_features=1)
    with pytest.raises(ValueError, match="out_features"):
        IOSpec.vectors(3, 0)
    with pytest.raises(ValueError, match="x_vocab is given, so x_dtype"):
        IOSpec(
            x_shape=(3,), x_dtype="float32", y_shape=(), y_dtype="int32", out_features=2, x_vocab=5
        )
    scalar = IOSpec(x_shape=(), x_dtype="float32", y_shape=(), y_dtype="float32", out_features=1)
    with pytest.raises(ValueError, match="no in_features"):
        _ = scalar.in_features
    with pytest.raises(TypeError):
        IOSpec((3,), "float32", (1,), "float32", 1)  # pyright: ignore[reportCallIssue]


def test_imports_no_jax():
    script = (
        "import sys; import zoo; zoo.IOSpec.vectors(2, 1); "
        "assert not {'jax', 'numpy', 'equinox'} & set(sys.modules), sys.modules"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-S", "-c", script], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
