"""The multi-task teacher-student setting of Schug et al. 2024 (Section 3.1, Appendix C.1).

A fixed random teacher is a 2-layer ReLU MLP `in -> hidden -> out` without biases whose first
layer is a linear combination of M modules weighted by the task code `z`:

    y = relu(x @ (sum_m z[m] * modules[m]) / sqrt(in)) @ readout

A task is a code `z` drawn on a binary *mask* (which modules are active); the training masks
are the *support* (Table A9 of the paper). Details follow the authors' code (`run_theory.py`
of smonsays/modular-hyperteacher; `docs/authors-settings.md`, Schug 2024, "Multi-task
teacher-student") where it differs from the paper:

- Teacher: modules `[M, in, hidden]` and readout `[hidden, out]` drawn as haiku's default
  `hk.Linear` weights, which the authors' teacher is made of: a truncated normal cut at two
  standard deviations of its parameter `sigma = 1/sqrt(fan_in)`, *not* rescaled afterwards, so
  the realized standard deviation is `0.8796 * sigma` (see `truncated_normal`). The fan-in of
  the modules is M (the authors generate the layer as `Linear(M -> in * hidden)` of the code),
  so `sigma = 1/sqrt(M)`; of the readout, `hidden`. No biases; the layer is NTK-style,
  `relu(x @ W / sqrt(in))`. Defaults 16 -> 16 -> 4 with M = 6.
- Inputs `x ~ U[-sqrt(3), sqrt(3)]^in` (zero mean, unit variance); targets are the teacher's
  outputs (noiseless regression). Support and query sets are independent inputs of one task.
  The authors draw 256 fresh inputs at every inner step: with `shots_support = steps * batch`
  and the inner loop's `sequential` minibatches (`runs.config.InnerConfig.minibatches`) every
  step reads its own fresh slice of the support set.
- Codes (see `code_from_mask`): 'discrete' = `mask / ||mask||`; 'continuous' follows the
  authors' code, not Algorithm 1: M exponential(1) draws `e`, zeroed off the mask, divided by
  *their sum plus one* (`w = e / (sum(e) + 1)`, Algorithm 1 divides by the sum alone), then
  `z = (w + 1) / 2` on the mask, so active entries lie in [0.5, 1) and inactive ones are 0.
- Codes of the pools other than "train" and "test" ("ood" and "h_{h}") are continuous
  whatever `distribution` says, as in the authors' evaluation; "test" draws codes as "train".
- Supports (see `support_masks`), given for M = 6 by Table A9 and generalized to any even
  M >= 4 (halves: `{0..M/2-1}` and `{M/2..M-1}`):
    - 'connected': the ring of neighbouring pairs `{i, i+1 mod M}`;
    - 'disconnected': every pair within each half (for M = 6 the two triangles);
    - with the 'discrete' distribution the M one-hots are added to both (Table A9; the ring
      alone has no one-hot codes);
    - 'connected-triples': `{2i, 2i+1, 2i+2 mod M}` for `i < M/2` (M = 6: 012, 234, 450);
    - 'disconnected-one-hots': the M one-hots;
    - 'disconnected-triples': each whole half plus every pair within each half (M = 6: 012,
      345 and the two triangles, the last column of Table A9).
- Loss: `0.5 * mean((pred - y)^2)`, the mean over samples *and* output units (the reference's
  0.5 * MSE); metric `mse` = `mean((pred - y)^2)`.
- Pools: "train" (a mask uniform over the support, then a code on it), "test" (the same
  distribution, for evaluation), "ood" (masks with
  1..max(eval_h) active modules that are not training masks; left out when there are none),
  and "h_{h}" for each h in `eval_h` (a mask uniform over every mask with exactly h active
  modules, training masks included).
"""

import itertools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, PRNGKeyArray, Shaped

from tasks._base import AbstractTask, Episode, Split
from tasks.config import TeacherStudentConfig, TeacherStudentDistribution, TeacherStudentSupport
from zoo.io import IOSpec

# --------------------------------------------------------------------------------------------
# Masks: plain numpy, deterministic, inspectable.
# --------------------------------------------------------------------------------------------


def _rows(num_modules: int, groups: list[tuple[int, ...]]) -> Bool[np.ndarray, "n m"]:
    """One bool mask per group of active module indices, duplicates dropped (first kept)."""
    out: list[np.ndarray] = []
    seen: set[bytes] = set()
    for group in groups:
        row = np.zeros(num_modules, bool)
        row[list(group)] = True
        if row.tobytes() not in seen:
            seen.add(row.tobytes())
            out.append(row)
    return np.stack(out) if out else np.zeros((0, num_modules), bool)


def masks_with(num_modules: int, h: int) -> Bool[np.ndarray, "n m"]:
    """Every mask with exactly `h` of `num_modules` modules active, `[C(M, h), M]`, in the
    lexicographic order of the active indices (as `itertools.combinations`)."""
    if not 0 <= h <= num_modules:
        raise ValueError(f"Need 0 <= h <= num_modules, got h={h}, num_modules={num_modules}.")
    return _rows(num_modules, list(itertools.combinations(range(num_modules), h)))


def support_masks(
    num_modules: int,
    support: TeacherStudentSupport,
    distribution: TeacherStudentDistribution,
) -> Bool[np.ndarray, "n m"]:
    """The training masks of `support` (Table A9 of Schug et al. 2024, for M = 6; see the
    module docstring for the generalization to any even M >= 4).

    **Arguments:**

    - `num_modules`: M, even and at least 4.
    - `support`: 'connected', 'disconnected', 'connected-triples', 'disconnected-one-hots' or
      'disconnected-triples'.
    - `distribution`: 'discrete' adds the M one-hots (first) to 'connected' and
      'disconnected'; the other supports do not depend on it.

    **Returns:**

    A bool array `[n_masks, M]` without duplicates. For M = 6, 'connected' gives the pairs
    01, 12, 23, 34, 45, 50 (in that order) and 'disconnected' 01, 02, 12, 34, 35, 45.
    """
    m = num_modules
    if m < 4 or m % 2:
        raise ValueError(f"num_modules={m}: the supports need an even number of modules >= 4.")
    if distribution not in ("discrete", "continuous"):
        raise ValueError(
            f"distribution={distribution!r} is unknown; use 'discrete' or 'continuous'."
        )
    half = m // 2
    halves = [tuple(range(half)), tuple(range(half, m))]
    one_hots = [(i,) for i in range(m)]
    half_pairs = [pair for part in halves for pair in itertools.combinations(part, 2)]
    if support == "connected":
        groups = [(i, (i + 1) % m) for i in range(m)]
    elif support == "disconnected":
        groups = half_pairs
    elif support == "connected-triples":
        groups = [(2 * i, 2 * i + 1, (2 * i + 2) % m) for i in range(half)]
    elif support == "disconnected-one-hots":
        groups = one_hots
    elif support == "disconnected-triples":
        groups = halves + half_pairs
    else:
        raise ValueError(
            f"support={support!r} is unknown; use 'connected', 'disconnected', "
            "'connected-triples', 'disconnected-one-hots' or 'disconnected-triples'."
        )
    if distribution == "discrete" and support in ("connected", "disconnected"):
        groups = one_hots + groups
    return _rows(m, groups)


def is_connected(masks: Shaped[np.ndarray, "n m"]) -> bool:
    """Whether the masks form one connected component (Definition 3.2): nodes are the masks,
    two are joined when they share an active module. `masks` is bool or 0/1; `False` for no
    masks."""
    masks = np.asarray(masks, bool)
    n = len(masks)
    if n == 0:
        return False
    adjacent = (masks.astype(np.int64) @ masks.T.astype(np.int64)) > 0
    reached = np.zeros(n, bool)
    reached[0] = True
    frontier = reached.copy()
    while frontier.any():
        new = adjacent[frontier].any(axis=0) & ~reached
        reached |= new
        frontier = new
    return bool(reached.all())


def covers_all(masks: Shaped[np.ndarray, "n m"]) -> bool:
    """Whether every module is active in some mask (compositional support, Definition 3.1);
    `masks` is bool or 0/1."""
    masks = np.asarray(masks, bool)
    return bool(len(masks)) and bool(masks.any(axis=0).all())


def ood_masks(train_masks: Shaped[np.ndarray, "n m"], max_h: int) -> Bool[np.ndarray, "n_ood m"]:
    """Masks with 1..`max_h` active modules that are not among `train_masks`, ordered by the
    number of active modules, then as `masks_with`."""
    train_masks = np.asarray(train_masks, bool)
    m = train_masks.shape[-1]
    seen = {row.tobytes() for row in np.ascontiguousarray(train_masks)}
    rows = [
        row for h in range(1, max_h + 1) for row in masks_with(m, h) if row.tobytes() not in seen
    ]
    return np.stack(rows) if rows else np.zeros((0, m), bool)


# --------------------------------------------------------------------------------------------
# Codes: jittable.
# --------------------------------------------------------------------------------------------


def discrete_code(mask: Float[Array, " m"]) -> Float[Array, " m"]:
    """The unit-norm many-hot code `mask / ||mask||` of a 0/1 mask."""
    mask = jnp.asarray(mask, jnp.float32)
    return mask / jnp.linalg.norm(mask)


def continuous_code(key: PRNGKeyArray, mask: Float[Array, " m"]) -> Float[Array, " m"]:
    """A random code on a 0/1 mask, as the authors' code draws it: M exponential(1) draws,
    zeroed where the mask is 0, divided by their sum plus one (`w = e / (sum(e) + 1)`), then
    `(w + 1) / 2` on the mask. Active entries lie in [0.5, 1), inactive entries are 0.

    Algorithm 1 of the paper divides by the sum alone (uniform on the simplex of the active
    modules, active entries summing to `(1 + h) / 2`); the `+ 1` of the code makes the active
    entries sum to `h / 2 + S / (2 (S + 1))` with `S` the sum of the draws, a little less."""
    mask = jnp.asarray(mask, jnp.float32)
    e = jax.random.exponential(key, mask.shape) * mask
    w = e / (e.sum() + 1.0)
    return 0.5 * (w + 1.0) * mask


def code_from_mask(
    key: PRNGKeyArray, mask: Float[Array, " m"], distribution: TeacherStudentDistribution
) -> Float[Array, " m"]:
    """A task code on `mask`: `discrete_code` or `continuous_code` (`distribution` static)."""
    if distribution == "discrete":
        return discrete_code(mask)
    return continuous_code(key, mask)


# --------------------------------------------------------------------------------------------
# The task generator.
# --------------------------------------------------------------------------------------------


def truncated_normal(key: PRNGKeyArray, shape: tuple[int, ...], sigma: float) -> Array:
    """`sigma` times a standard normal truncated to [-2, 2]: haiku's `TruncatedNormal(sigma)`,
    the default initializer of `hk.Linear` (with `sigma = 1/sqrt(fan_in)`), which the authors'
    teacher and student are made of. Haiku does not rescale it, so the standard deviation is
    `0.8796 * sigma` and every entry lies within `2 * sigma`. (The same formula is
    `zoo.shallow_hypernet.truncated_normal`; `zoo.linear_hypernet.truncated_normal`, used by the
    other learners, rescales to a standard deviation of exactly `sigma`.)"""
    return sigma * jax.random.truncated_normal(key, -2.0, 2.0, shape)


class TeacherStudent(AbstractTask):
    """The multi-task teacher-student task generator (build it with `make`).

    Pools: "train", "test", "ood" (when not empty), and "h_{h}" for each h in `config.eval_h` (see the
    module docstring); `pool_masks` lists each pool's masks.
    """

    config: TeacherStudentConfig = eqx.field(static=True)
    module_weights: Float[Array, "m d_in hidden"]
    """The teacher's modules, `truncated_normal` with `sigma = 1/sqrt(M)`."""
    readout: Float[Array, "hidden d_out"]
    """The teacher's shared readout, `truncated_normal` with `sigma = 1/sqrt(hidden)`."""
    masks: dict[str, Float[Array, "n m"]]
    """Per pool, its 0/1 masks as float32 (see `pool_masks`)."""

    @property
    def io(self) -> IOSpec:
        """Inputs `[in_features]`, targets `[out_features]`, float32."""
        return IOSpec.vectors(self.config.in_features, self.config.out_features)

    def pools(self) -> tuple[str, ...]:
        names = ["train", "test"]
        if "ood" in self.masks:
            names.append("ood")
        names.extend(f"h_{h}" for h in self.config.eval_h)
        return tuple(names)

    def _pool_array(self, pool: str) -> Float[Array, "n m"]:
        if pool == "test":  # fresh tasks and inputs on the training masks
            pool = "train"
        if pool not in self.masks:
            raise ValueError(
                f"Unknown pool {pool!r}; this teacher-student task has {self.pools()}."
            )
        return self.masks[pool]

    def pool_masks(self, pool: str = "train") -> Bool[np.ndarray, "n m"]:
        """The masks `[n, M]` of `pool`, as a bool numpy array (call outside `jit`)."""
        return np.asarray(self._pool_array(pool)) > 0

    def modules(self) -> Float[Array, "m d_in hidden"]:
        """The teacher's modules `[M, in, hidden]`: a task's first layer is
        `sum_m z[m] * modules[m]`."""
        return self.module_weights

    def teacher(
        self, code: Float[Array, " m"], x: Float[Array, "n d_in"]
    ) -> Float[Array, "n d_out"]:
        """The teacher's output `relu(x @ (sum_m code[m] * modules[m]) / sqrt(in)) @ readout`."""
        w = jnp.tensordot(code, self.module_weights, axes=1)
        hidden = jax.nn.relu(x @ w / math.sqrt(self.module_weights.shape[1]))
        return hidden @ self.readout

    def sample(self, key: PRNGKeyArray, pool: str = "train") -> Episode:
        """Draw a mask uniformly from `pool`, a code on it and i.i.d. support and query inputs
        `U[-sqrt(3), sqrt(3)]`, labelled by the teacher.

        `pool` is a static Python string. "train" and "test" draw codes as
        `config.distribution` says, the other pools continuous codes (as the authors'
        evaluation). `latent` is the code `[M]`; support and query are `x: [shots, in]`,
        `y: [shots, out]`.
        """
        masks = self._pool_array(pool)
        k_mask, k_code, k_support, k_query = jax.random.split(key, 4)
        mask = masks[jax.random.randint(k_mask, (), 0, masks.shape[0])]
        training = pool in ("train", "test")
        distribution = self.config.distribution if training else "continuous"
        code = code_from_mask(k_code, mask, distribution)
        c = self.config
        bound = math.sqrt(3.0)
        x_s = jax.random.uniform(
            k_support, (c.shots_support, c.in_features), minval=-bound, maxval=bound
        )
        x_q = jax.random.uniform(
            k_query, (c.shots_query, c.in_features), minval=-bound, maxval=bound
        )
        return Episode(
            support=Split(x=x_s, y=self.teacher(code, x_s)),
            query=Split(x=x_q, y=self.teacher(code, x_q)),
            latent=code,
        )

    def loss(self, pred: Float[Array, "n d_out"], y: Float[Array, "n d_out"]) -> Float[Array, ""]:
        """`0.5 * mean((pred - y)^2)`, the mean over samples and output units."""
        return 0.5 * jnp.mean((pred - y) ** 2)

    def metrics(
        self, pred: Float[Array, "n d_out"], y: Float[Array, "n d_out"]
    ) -> dict[str, Float[Array, ""]]:
        """`mse`: the mean over samples and output units of `(pred - y)^2`."""
        return {"mse": jnp.mean((pred - y) ** 2)}


def make(config: TeacherStudentConfig, *, key: PRNGKeyArray) -> TeacherStudent:
    """Build a teacher-student task: the teacher's modules and readout from `key`, the pools'
    masks from `config.support`, `config.distribution` and `config.eval_h`.

    **Arguments:**

    - `config`: a `TeacherStudentConfig`.
    - `key`: a JAX PRNG key (keyword-only).

    **Returns:**

    A `TeacherStudent`.
    """
    c = config
    m = c.num_modules
    k_modules, k_readout = jax.random.split(key)
    train = support_masks(m, c.support, c.distribution)
    pools = {"train": train}
    ood = ood_masks(train, max(c.eval_h, default=0))
    if len(ood):
        pools["ood"] = ood
    for h in c.eval_h:
        pools[f"h_{h}"] = masks_with(m, h)
    return TeacherStudent(
        config=c,
        module_weights=truncated_normal(k_modules, (m, c.in_features, c.hidden), 1 / math.sqrt(m)),
        readout=truncated_normal(k_readout, (c.hidden, c.out_features), 1 / math.sqrt(c.hidden)),
        masks={name: jnp.asarray(masks, jnp.float32) for name, masks in pools.items()},
    )
