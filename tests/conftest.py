"""Shared test setup: two simulated CPU devices and a tiny meta-training configuration."""

import atexit
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

# Before JAX initializes its backends, so that tests can split meta-batches over 2 devices.
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=2")

# One persistent compilation cache for the session and the subprocesses its tests start
# (they inherit the environment): many tests compile the same tiny programs in new closures
# or new processes, which JAX's in-memory caches miss and this one does not (it halved the CPU
# time of the run tests; measured in docs/papers/engineering.md). Fresh for every session, removed at
# exit: nothing carries over between sessions.
os.environ.setdefault("ZOO_TESTS_JAX_CACHE", tempfile.mkdtemp(prefix="zoo-tests-jax-cache-"))
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.environ["ZOO_TESTS_JAX_CACHE"])
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")

import pytest

from runs.algorithms.config import BilevelConfig
from runs.config import EvalConfig, InnerConfig, OuterConfig, RunConfig, TrainConfig
from tasks.config import HyperteacherConfig
from zoo.config import LinearHypernetConfig

if os.environ["JAX_COMPILATION_CACHE_DIR"] == os.environ["ZOO_TESTS_JAX_CACHE"]:
    # Subprocesses inherit ZOO_TESTS_JAX_CACHE but import no conftest: only the session removes it.
    atexit.register(shutil.rmtree, os.environ["ZOO_TESTS_JAX_CACHE"], ignore_errors=True)

TINY_TASK = HyperteacherConfig(
    num_modules=4,
    max_active=2,
    hidden=8,
    in_features=4,
    out_features=3,
    shots_support=8,
    shots_query=8,
    num_norm_inputs=16,
    ood_h=(1, 2),
)
TINY_MODEL = LinearHypernetConfig(hidden=8, num_hidden=2, num_templates=4)


def make_tiny_config(steps: int = 4, seed: int = 0, eval_every: int = 2, **run) -> TrainConfig:
    """The tiny hyperteacher / linear-hypernet run used throughout the tests (`run` overrides
    fields of its `RunConfig`)."""
    return TrainConfig(
        task=TINY_TASK,
        model=TINY_MODEL,
        task_name="hyperteacher",
        model_name="linear-hypernet",
        algorithm=BilevelConfig(
            inner=InnerConfig(steps=2, lr=0.3), outer=OuterConfig(lr=1e-2, meta_batch=4)
        ),
        eval=EvalConfig(every=eval_every, tasks=4, batch=2),
        run=RunConfig(
            steps=steps,
            seed=seed,
            steps_per_call=2,
            checkpoint_every=2,
            **{"keep": 5, **run},
        ),
    )


@pytest.fixture
def tiny_config() -> TrainConfig:
    """A tiny `TrainConfig`: 4 outer steps, 2 per compiled call, checkpoints and evaluation
    every 2 steps, meta-batch 4, 2 inner steps, 4 evaluation tasks per pool."""
    return make_tiny_config()


def bilevel_for(
    inner: InnerConfig, steps: int | None = None, meta_batch: int = 4, devices: int = 1
):
    """A `Bilevel` algorithm with the inner loop of `inner` (`steps` steps, default
    `inner.steps`) in training and evaluation, plain AdamW outside, on `devices` devices."""
    import optax

    from runs.algorithms.bilevel import Bilevel
    from runs.algorithms.inner import InnerLoop
    from runs.sharding import make_mesh

    loop = InnerLoop.from_config(inner, steps)
    return Bilevel(
        inner=loop,
        eval_inner=loop,
        optimizer=optax.adamw(1e-2),
        meta_batch=meta_batch,
        mesh=make_mesh(devices, meta_batch),
    )


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's compiled programs after each test module. Every compiled program keeps a few
    memory mappings of its machine code; hundreds of test functions compile tens of thousands
    of programs in one process, and past the kernel's `vm.max_map_count` (65,530 by default)
    XLA's next compilation crashes the process (a segmentation fault in
    `backend_compile_and_load`). Set `ZOO_TEST_MAPS_LOG` to a file to log the process's mapping
    count after each module."""
    yield
    import gc

    import jax

    log = os.environ.get("ZOO_TEST_MAPS_LOG")
    if log:
        with open(f"/proc/{os.getpid()}/maps") as maps, open(log, "a") as out:
            out.write(f"before clearing: {sum(1 for _ in maps)}\n")
    jax.clear_caches()
    gc.collect()


def all_presets() -> dict:
    """Every installed experiment's presets, `{full name: (description, config)}`."""
    import runs.experiments

    return {n: (p.description, p.config) for n, p in runs.experiments.presets().items()}


def pip_install_offline(package: pathlib.Path, target: pathlib.Path) -> None:
    """pip-install the package folder `package` into `target` (`--target`), offline: no
    dependencies, no build isolation, no index (what the test plugin packages need)."""
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    offline = ["--root-user-action=ignore", "--no-deps", "--no-build-isolation", "--no-index"]
    subprocess.run([*pip, *offline, "--target", str(target), str(package)], check=True)
