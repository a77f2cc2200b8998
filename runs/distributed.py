"""Many processes: `zoo train --distributed` through `jax.distributed`, JAX's own runtime.

Every process runs the same command; `initialize` joins them (before any JAX computation) and
the run's mesh then spans the devices of every process (`runs.sharding.make_mesh`). The
compiled step is the same program as on one process with as many devices: each device draws
its own share of the meta-batch from the replicated step key, so each process feeds its own
shard without any data being sent. Process 0 writes the run directory (config, metrics,
history, the lock); every process takes part in saving and restoring checkpoints (Orbax
coordinates them), which hold whole arrays and so restore with any number of processes.
"""

import os
from typing import Any

import equinox as eqx
import jax
import numpy as np
from jax.experimental import multihost_utils
from jaxtyping import PyTree

from .config import DistributedConfig, DistributedError


def initialize(config: DistributedConfig) -> None:
    """Join the other processes of the run (nothing if `config.distributed` is off). Must run
    before any JAX computation. On CPU, collectives between processes go through Gloo."""
    if not config.distributed:
        return
    if "JAX_CPU_COLLECTIVES_IMPLEMENTATION" not in os.environ:  # e.g. "mpi", the user's choice
        # Collectives between the CPU devices of different processes (JAX 0.10's default, made
        # explicit); only the CPU client reads it, so it is harmless on GPUs and TPUs.
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize(
            coordinator_address=config.coordinator,
            num_processes=config.num_processes,
            process_id=config.process_id,
        )
    except (ValueError, RuntimeError) as error:
        raise DistributedError(
            f"jax.distributed.initialize failed ({type(error).__name__}: {error}). Outside a "
            "cluster JAX detects, pass --coordinator HOST:PORT --num-processes N --process-id I."
        ) from None


def is_primary() -> bool:
    """Whether this is the process that writes the run directory (process 0)."""
    return jax.process_index() == 0


def multiprocess() -> bool:
    """Whether the run spans several processes."""
    return jax.process_count() > 1


def barrier(name: str) -> None:
    """Wait until every process reaches the barrier `name` (nothing on one process)."""
    if multiprocess():
        multihost_utils.sync_global_devices(name)


def fetch(x: Any) -> np.ndarray:
    """The value of `x` (an array, or a NumPy array or scalar) on the host: read directly if
    this process holds all of it (a replicated output), else gathered from every process
    (then every process must call it)."""
    if not isinstance(x, jax.Array) or x.is_fully_addressable or x.is_fully_replicated:
        return np.asarray(x)
    return np.asarray(multihost_utils.process_allgather(x, tiled=True))


def local(tree: PyTree) -> PyTree:
    """`tree` with every replicated array leaf spanning several processes replaced by this
    process's copy (on one local device), for computations of this process alone (e.g. the
    evaluation)."""

    def one(x):
        if isinstance(x, jax.Array) and not x.is_fully_addressable:
            if not x.is_fully_replicated:
                raise ValueError("only replicated arrays have a whole local copy")
            return x.addressable_data(0)
        return x

    arrays, static = eqx.partition(tree, eqx.is_array)
    return eqx.combine(jax.tree_util.tree_map(one, arrays), static)
