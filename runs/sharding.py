"""Devices: a 1-D mesh over local devices, replication onto it, and sharded means.

Shared by every algorithm: a batch of independent items (tasks, environments) is split over the
mesh axis with `jax.shard_map`, each device computes on its share, and the results (gradients,
metrics) are averaged with `lax.pmean`.
"""

from collections.abc import Callable

import equinox as eqx
import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from jaxtyping import PyTree

AXIS = "batch"
"""Name of the mesh axis the batch is split over."""


class MeshError(ValueError):
    """The devices asked for cannot split the batch."""


def make_mesh(devices: int | None, batch: int, *, name: str = "outer.meta_batch") -> Mesh:
    """A 1-D mesh over `devices` local devices (default: the most that divide `batch`).

    **Raises:** `MeshError` if more devices are asked for than are visible, or if they do not
    divide `batch` (`name` says which setting `batch` is, for the message)."""
    available = jax.local_devices()
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
    compiled step are placed), so that later calls hit the same compiled program."""
    sharding = NamedSharding(mesh, PartitionSpec())
    arrays, static = eqx.partition(tree, eqx.is_array)
    return eqx.combine(jax.device_put(arrays, sharding), static)


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
