"""Devices: a 1-D mesh over the devices of every process, replication onto it or a split over it,
and sharded means.

Shared by every algorithm: a batch of independent items (tasks, environments) is split over the
mesh axis with `jax.shard_map`, each device computes on its share, and the results (gradients,
metrics) are averaged with `lax.pmean`.
"""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from jaxtyping import PyTree

AXIS = "batch"
"""Name of the mesh axis the batch is split over."""


class MeshError(ValueError):
    """The devices asked for cannot split the batch."""


def make_mesh(devices: int | None, batch: int, *, name: str = "outer.meta_batch") -> Mesh:
    """A 1-D mesh over `devices` devices (default: the most that divide `batch`): the local
    devices, or in a multi-process run (`runs.distributed`) the devices of every process, all
    of them (each process must take part), process 0's first.

    **Raises:** `MeshError` if more devices are asked for than are visible, if they do not
    divide `batch` (`name` says which setting `batch` is, for the message), or if a
    multi-process mesh would leave a process's devices out."""
    available = jax.devices()
    if jax.process_count() > 1:
        if devices not in (None, len(available)):
            raise MeshError(
                f"A run over {jax.process_count()} processes splits the batch over all their "
                f"{len(available)} devices; drop --devices or pass --devices {len(available)}."
            )
        devices = len(available)
    if devices is None:
        devices = max(n for n in range(1, len(available) + 1) if batch % n == 0)
    if devices > len(available):
        raise MeshError(
            f"{devices} devices asked for but only {len(available)} are visible; "
            f"pass --devices {len(available)} or fewer."
        )
    if batch % devices:
        raise MeshError(
            f"{name} ({batch}) must be divisible by the number of devices ({devices}); "
            "change one of them."
        )
    return Mesh(available[:devices], (AXIS,))


def replicate(tree: PyTree, mesh: Mesh) -> PyTree:
    """`tree` with its array leaves placed on every device of `mesh` (as the outputs of a
    compiled step are placed), so that later calls hit the same compiled program. In a
    multi-process run every process passes the same values (each places its own copy)."""
    return _place(tree, NamedSharding(mesh, PartitionSpec()))


def split(tree: PyTree, mesh: Mesh) -> PyTree:
    """`tree` with its array leaves split along their first axis over the devices of `mesh`
    (as `jax.shard_map` places outputs of `PartitionSpec(AXIS)`): a batch of independent items,
    such as environments, that each device steps on its share of. In a multi-process run every
    process passes the whole batch, the same values, and keeps its devices' slices."""
    return _place(tree, NamedSharding(mesh, PartitionSpec(AXIS)))


def _place(tree: PyTree, sharding: NamedSharding) -> PyTree:
    """`tree` with its array leaves placed by `sharding`, from every process's whole copy."""
    arrays, static = eqx.partition(tree, eqx.is_array)
    if sharding.mesh.is_multi_process:
        arrays = jax.tree_util.tree_map(lambda x: _global(x, sharding), arrays)
    else:
        arrays = jax.device_put(arrays, sharding)
    return eqx.combine(arrays, static)


def _global(x: jax.Array, sharding: NamedSharding) -> jax.Array:
    """The array spanning several processes, placed by `sharding`, of this process's copy of
    the whole `x`."""
    if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        data = _global(jax.random.key_data(x), sharding)
        return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x))
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        return x  # already global
    local = np.asarray(x)
    return jax.make_array_from_callback(local.shape, sharding, lambda index: local[index])


def sharded_mean(
    fn: Callable[[PyTree, PyTree], PyTree], mesh: Mesh, replicated: PyTree, split: PyTree
) -> PyTree:
    """`fn(replicated, share)` on every device of `mesh`, where `share` is the device's slice
    (along the first axis) of the array leaves of `split`, averaged over the devices.

    The array leaves of `replicated` are marked device-varying inside: every derivative taken
    in `fn` is then the device's own (left invariant, their cotangents would be summed over
    devices, mixing the shares of different devices). Non-array leaves pass through as static
    values. `fn` must return a pytree of arrays, each a mean over the device's share."""
    params, static = eqx.partition(replicated, eqx.is_array)
    split_params, split_static = eqx.partition(split, eqx.is_array)

    def local(params, split_params):
        params = jax.lax.pcast(params, AXIS, to="varying")
        out = fn(eqx.combine(params, static), eqx.combine(split_params, split_static))
        return jax.lax.pmean(out, AXIS)

    return jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(PartitionSpec(), PartitionSpec(AXIS)),
        out_specs=PartitionSpec(),
    )(params, split_params)
