"""The compositional preferences grid world of Schug et al. 2024 (Section 4.2, Appendix C.3).

Details follow `docs/specs/gridworlds.md`, section A1 (the authors' code,
`metax/data/envs/preference.py` and `metax/data/imitation.py`):

- Grid: a fixed 7x7 four-room layout (`LAYOUT`) with 19 free cells. Each instance places
  `num_objects` (4) objects and the agent on distinct free cells, uniformly; each object has a
  feature drawn uniformly with replacement from `num_features` (8).
- Actions (5): 0 NOTHING (terminates), 1 UP, 2 RIGHT, 3 DOWN, 4 LEFT; moving into a wall stays.
  Entering the cell of an available object collects it (reward paid on entry, the object
  disappears).
- Task: a mask of 1..K of M modules; the code `w` puts continuous weights in (0.5, 1) on the
  active modules (`e ~ Exp(1)` masked, `e / (sum e + 1)`, `0.5 e + 0.5`), drawn afresh for
  every sample. The reward of an object of feature `f` is `(B^T w)[f]`, with the module bank
  `B ~ N(0, 1)` `[M, num_features]` drawn from the build key.
- Targets: per instance, state = (agent cell, availability bitmask) (19 * 2^4 = 304 states),
  `Q^H` by `horizon` (8) Bellman backups with discount 0.9 from `Q_0 = 0`, NOTHING a
  zero-reward self-loop; a greedy rollout (`argmax`, first index on ties) of `horizon` steps;
  at each step the observation before the action and the 5-vector `Q^H(s_t, .)`; the mask is
  `not done before t` (the step that chooses NOTHING is included, later steps are masked).
- Observation: `[7, 7, num_features + 2]` (one-hot feature of each available object at its
  cell, the agent, the walls), flattened to 490 float32.
- Episodes: `shots_support` + `shots_query` (16 + 16) trajectories, each a fresh instance with
  the same `w`, flattened to rows: `x [shots * horizon, 490]`,
  `y = {"q": [rows, 5], "mask": [rows]}`. The authors evaluate with 1 query trajectory; here
  query sizes are the same in every pool (shapes are fixed).
- Loss: `0.5 * sum over actions of (pred - q)^2`, averaged over valid rows, divided by
  `max(number of valid rows, 1)` so that a minibatch without a valid row gives 0, not NaN.
- Splits (`make_split`): all masks with 1..K active, ordered by number active then
  `itertools.combinations` order; "compositional" = a permutation from the build key, the last
  `int(n * ood_fraction)` OOD (every module must train); "non-compositional" = OOD iff module
  `held_out` is active; "connected" (one-hots and pairs (i, i+1), (i, i+2) mod M) and
  "disconnected" (1- and 2-hots within either half), K = 2, both with OOD = masks in neither
  set. M=8: 69/23, 63/29, 24/10, 20/10.
- Pools: "train", "test" (the training masks, fresh weights and instances), "ood", and
  "ood_{h}" for h = K+1..M (random h-hot masks, all OOD).
"""

import itertools
import math
from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray

from tasks import gridworld
from tasks._base import AbstractTask, Episode, Split
from tasks.config import CompositionalPreferencesConfig
from tasks.gridworld import MOVES, move, value_iteration
from zoo.io import IOSpec

SplitKind = Literal["compositional", "non-compositional", "connected", "disconnected"]

LAYOUT: tuple[str, ...] = (
    "wwwwwww",
    "w..w..w",
    "w..w..w",
    "ww...ww",
    "w..w..w",
    "w..w..w",
    "wwwwwww",
)
"""The four-room layout (`w` = wall, `.` = free): four 2x2 rooms joined through the middle row."""

WALLS: Bool[np.ndarray, "7 7"] = np.array([[ch == "w" for ch in row] for row in LAYOUT])
"""`LAYOUT` as a boolean array, True at walls."""

FREE_CELLS: Int[np.ndarray, "19 2"] = np.argwhere(~WALLS).astype(np.int32)
"""The free cells (row, column), in row-major order; a cell's index is its row here."""

NUM_ACTIONS = 5
ACTION_NAMES: tuple[str, ...] = ("NOTHING", "UP", "RIGHT", "DOWN", "LEFT")
"""Action 0 terminates; actions 1..4 are the rows of `gridworld.MOVES`."""


# --------------------------------------------------------------------------------------------
# Splits: plain numpy, deterministic, inspectable.
# --------------------------------------------------------------------------------------------


def _exactly(num_modules: int, h: int) -> Int[np.ndarray, "n m"]:
    rows = np.zeros((math.comb(num_modules, h), num_modules), np.int32)
    for i, active in enumerate(itertools.combinations(range(num_modules), h)):
        rows[i, list(active)] = 1
    return rows


def all_masks(num_modules: int, max_active: int) -> Int[np.ndarray, "n m"]:
    """All 0/1 masks with 1..`max_active` of `num_modules` active, ordered by number active,
    then as `itertools.combinations` (M=8, K=3: 92 masks)."""
    return np.concatenate([_exactly(num_modules, h) for h in range(1, max_active + 1)])


def _rows_in(masks: Int[np.ndarray, "n m"], subset: Int[np.ndarray, "s m"]) -> np.ndarray:
    keys = {row.tobytes() for row in np.ascontiguousarray(subset, np.int32)}
    return np.array([row.tobytes() in keys for row in np.ascontiguousarray(masks)], bool)


def make_split(
    num_modules: int,
    max_active: int,
    kind: SplitKind,
    permutation: Int[np.ndarray, " n"] | None = None,
    ood_fraction: float = 0.25,
    held_out: int = 7,
) -> tuple[Int[np.ndarray, "n_train m"], Int[np.ndarray, "n_ood m"]]:
    """Split the masks of `all_masks` into training and out-of-distribution (OOD) masks.

    **Arguments:**

    - `num_modules`: M.
    - `max_active`: K.
    - `kind`: `"compositional"`: `permutation` of the masks, its last
        `int(n * ood_fraction)` OOD; every module must be active in some training mask, else
        `ValueError`. `"non-compositional"`: OOD iff module `held_out` is active.
        `"connected"`: training = one-hots and pairs (i, i+1), (i, i+2) mod M;
        `"disconnected"`: training = 1- and 2-hots within the first or the last M/2 modules;
        for both (K = 2, M even) OOD = the masks in neither training set.
    - `permutation`: a permutation of `range(n)` (only for `"compositional"`).
    - `ood_fraction`: OOD share of `"compositional"`.
    - `held_out`: the held-out module of `"non-compositional"`.

    **Returns:**

    `(train_masks, ood_masks)`, int32 0/1 arrays, training masks in permutation order for
    `"compositional"`, else both in `all_masks` order.
    """
    masks = all_masks(num_modules, max_active)
    n = len(masks)
    if kind == "compositional":
        if permutation is None or sorted(np.asarray(permutation).tolist()) != list(range(n)):
            raise ValueError(f"kind='compositional' needs a permutation of range({n}).")
        n_ood = int(n * ood_fraction)
        if not 1 <= n_ood <= n - 1:
            raise ValueError(
                f"ood_fraction={ood_fraction} of {n} masks leaves {n_ood} OOD masks; set "
                "ood_fraction so that both sides are non-empty."
            )
        shuffled = masks[np.asarray(permutation)]
        train, ood = shuffled[: n - n_ood], shuffled[n - n_ood :]
        missing = np.flatnonzero(~train.astype(bool).any(axis=0))
        if len(missing):
            raise ValueError(
                f"The compositional split leaves module(s) {missing.tolist()} out of every "
                "training mask, so OOD masks would need modules never trained; lower "
                "ood_fraction or build with another key."
            )
        return train, ood
    if kind == "non-compositional":
        if not 0 <= held_out < num_modules:
            raise ValueError(f"held_out={held_out} must lie in 0..{num_modules - 1}.")
        ood = masks[:, held_out] == 1
        return masks[~ood], masks[ood]
    if kind in ("connected", "disconnected"):
        if max_active != 2 or num_modules % 2 or num_modules <= 4:
            raise ValueError(
                f"kind={kind!r} needs max_active=2 and an even num_modules > 4, got "
                f"max_active={max_active}, num_modules={num_modules}."
            )
        eye = np.eye(num_modules, dtype=np.int32)
        connected = np.concatenate([eye, eye + np.roll(eye, 1, 1), eye + np.roll(eye, 2, 1)])
        half = num_modules // 2
        parts = []
        for offset in (0, half):
            for h in (1, 2):
                sub = _exactly(half, h)
                block = np.zeros((len(sub), num_modules), np.int32)
                block[:, offset : offset + half] = sub
                parts.append(block)
        disconnected = np.concatenate(parts)
        in_c, in_d = _rows_in(masks, connected), _rows_in(masks, disconnected)
        train = masks[in_c] if kind == "connected" else masks[in_d]
        return train, masks[~(in_c | in_d)]
    raise ValueError(
        f"Unknown split kind {kind!r}; use 'compositional', 'non-compositional', 'connected' "
        "or 'disconnected'."
    )


# --------------------------------------------------------------------------------------------
# The task generator.
# --------------------------------------------------------------------------------------------


class CompositionalPreferences(AbstractTask):
    """The compositional preferences task generator (build it with `make`).

    Pools: `"train"`, `"test"` (training masks; sampling is identical), `"ood"`, and
    `"ood_{h}"` for h = K+1..M (see the module docstring).
    """

    config: CompositionalPreferencesConfig = eqx.field(static=True)
    walls: Bool[Array, "7 7"]
    """The layout, True at walls."""
    cells: Int[Array, "cells 2"]
    """The free cells (row, column)."""
    cell_next: Int[Array, "cells 5"]
    """Index of the free cell reached from each free cell by each action (NOTHING stays)."""
    bank: Float[Array, "m f"]
    """The module bank `B ~ N(0, 1)`: preference vector of a code `w` is `B^T w`."""
    train_masks: Float[Array, "n_train m"]
    """0/1 masks of the training masks (pools "train" and "test")."""
    ood_masks: Float[Array, "n_ood m"]
    """0/1 masks of the OOD masks (pool "ood")."""

    @property
    def io(self) -> IOSpec:
        """Inputs: flattened observations `[7 * 7 * (num_features + 2)]` float32; targets: `q`
        rows `[5]` float32 (with a `mask` beside them in `y`); predictions of 5 action values."""
        return IOSpec(
            x_shape=(self.obs_size,),
            x_dtype="float32",
            y_shape=(NUM_ACTIONS,),
            y_dtype="float32",
            out_features=NUM_ACTIONS,
        )

    @property
    def obs_size(self) -> int:
        """Size of a flattened observation, `7 * 7 * (num_features + 2)` (490)."""
        h, w = self.walls.shape
        return h * w * (self.config.num_features + 2)

    @property
    def num_states(self) -> int:
        """States of an instance: free cells x availability bitmasks (19 * 2^4 = 304)."""
        return self.cells.shape[0] * 2**self.config.num_objects

    def pools(self) -> tuple[str, ...]:
        c = self.config
        return (
            "train",
            "test",
            "ood",
            *(f"ood_{h}" for h in range(c.max_active + 1, c.num_modules + 1)),
        )

    def pool_masks(self, pool: str = "train") -> Float[Array, "n m"]:
        """The 0/1 masks of `"train"`, `"test"` or `"ood"` (`ood_{h}` masks are drawn at
        random by `sample_mask`)."""
        if pool in ("train", "test"):
            return self.train_masks
        if pool == "ood":
            return self.ood_masks
        raise ValueError(f"Pool {pool!r} has no fixed masks; this task has {self.pools()}.")

    def sample_mask(self, key: PRNGKeyArray, pool: str = "train") -> Float[Array, " m"]:
        """A mask drawn uniformly from `pool` (a static string)."""
        if pool not in self.pools():
            raise ValueError(f"Unknown pool {pool!r}; this task has {self.pools()}.")
        if pool.startswith("ood_"):
            h = int(pool[4:])
            u = jax.random.uniform(key, (self.config.num_modules,))
            return (jnp.argsort(jnp.argsort(u)) < h).astype(jnp.float32)
        masks = self.pool_masks(pool)
        return masks[jax.random.randint(key, (), 0, masks.shape[0])]

    def code(self, key: PRNGKeyArray, mask: Float[Array, " m"]) -> Float[Array, " m"]:
        """The task code `w` of a mask: continuous weights in (0.5, 1) on the active modules
        (`config.continuous`), else the mask itself."""
        if not self.config.continuous:
            return mask
        e = jax.random.exponential(key, mask.shape) * mask
        e = e / (e.sum() + 1.0)
        return (0.5 * e + 0.5) * mask

    def preferences(self, w: Float[Array, " m"]) -> Float[Array, " f"]:
        """Reward of collecting an object of each feature: `B^T w`."""
        return self.bank.T @ w

    def instance(
        self, key: PRNGKeyArray
    ) -> tuple[Int[Array, " o"], Int[Array, " o"], Int[Array, ""]]:
        """A random instance: `(object_cells, features, agent_cell)`, cells as indices into
        `cells` (all distinct), features uniform with replacement."""
        k_pos, k_feat = jax.random.split(key)
        n = self.config.num_objects
        chosen = jax.random.permutation(k_pos, self.cells.shape[0])[: n + 1]
        features = jax.random.randint(k_feat, (n,), 0, self.config.num_features)
        return chosen[:n], features, chosen[n]

    def tables(
        self,
        object_cells: Int[Array, " o"],
        object_rewards: Float[Array, " o"],
    ) -> tuple[Float[Array, "s 5"], Int[Array, "s 5"]]:
        """Reward and next-state tables of an instance over all states `cell * 2^o + avail`
        (bit i of `avail` = object i is available)."""
        n = self.config.num_objects
        states = jnp.arange(self.num_states)
        cell, avail = states // 2**n, states % 2**n
        nxt = self.cell_next[cell]  # [s, 5]
        obj_at = jnp.full((self.cells.shape[0],), -1).at[object_cells].set(jnp.arange(n))
        obj = obj_at[nxt]
        safe = jnp.maximum(obj, 0)
        is_move = jnp.arange(NUM_ACTIONS) > 0
        hit = (obj >= 0) & (((avail[:, None] >> safe) & 1) == 1) & is_move
        rewards = jnp.where(hit, object_rewards[safe], 0.0)
        new_avail = jnp.where(hit, avail[:, None] & ~(1 << safe), avail[:, None])
        return rewards, nxt * 2**n + new_avail

    def observe(
        self,
        state: Int[Array, ""],
        object_cells: Int[Array, " o"],
        features: Int[Array, " o"],
    ) -> Float[Array, " obs"]:
        """The flattened observation `[7 * 7 * (F + 2)]` of a state: one-hot features of the
        available objects, the agent (channel F), the walls (channel F + 1)."""
        n, f = self.config.num_objects, self.config.num_features
        cell, avail = state // 2**n, state % 2**n
        available = ((avail >> jnp.arange(n)) & 1).astype(jnp.float32)
        h, w = self.walls.shape
        flat = self.cells[:, 0] * w + self.cells[:, 1]  # [cells]
        at = jax.nn.one_hot(flat[object_cells], h * w)  # [o, h * w]
        kind = jax.nn.one_hot(features, f) * available[:, None]  # [o, f]
        objects = at.T @ kind  # [h * w, f]
        agent = jax.nn.one_hot(flat[cell], h * w)[:, None]
        walls = self.walls.reshape(-1, 1).astype(jnp.float32)
        grid = jnp.concatenate([objects, agent, walls], axis=-1)
        return grid.reshape(-1)

    def rollout(
        self, q: Float[Array, "s 5"], next_state: Int[Array, "s 5"], start: Int[Array, ""]
    ) -> tuple[Int[Array, " t"], Bool[Array, " t"]]:
        """The greedy rollout of `q` (first index on ties) for `horizon` steps from `start`:
        the state before each step and whether the episode was still running (`not done
        before t`)."""

        def step(carry, _):
            s, done = carry
            a = jnp.argmax(q[s])
            s_next = jnp.where(done, s, next_state[s, a])
            return (s_next, done | (a == 0)), (s, ~done)

        # The first step is peeled off so that the scan's carry already has the type of the
        # body's output (under `shard_map`, whether it varies over devices).
        carry, first = step((start, jnp.array(False)), None)
        _, rest = jax.lax.scan(step, carry, None, length=self.config.horizon - 1)
        states, valid = jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), first, rest)
        return states, valid

    def demonstrate(
        self, key: PRNGKeyArray, w: Float[Array, " m"]
    ) -> tuple[Float[Array, "t obs"], Float[Array, "t 5"], Bool[Array, " t"]]:
        """One demonstrated trajectory on a fresh instance for code `w`: observations, target
        action values `Q^H(s_t, .)` and validity mask, one row per step."""
        c = self.config
        object_cells, features, agent = self.instance(key)
        object_rewards = self.preferences(w)[features]
        rewards, next_state = self.tables(object_cells, object_rewards)
        q = value_iteration(rewards, next_state, c.discount, c.horizon)
        start = agent * 2**c.num_objects + (2**c.num_objects - 1)
        states, valid = self.rollout(q, next_state, start)
        obs = jax.vmap(self.observe, in_axes=(0, None, None))(states, object_cells, features)
        return obs, q[states], valid

    def sample(self, key: PRNGKeyArray, pool: str = "train") -> Episode:
        """Draw a mask from `pool`, its code `w`, and `shots_support` + `shots_query`
        demonstrated trajectories on fresh instances.

        `pool` is a static Python string. Support and query hold `x: [shots * horizon, obs]`
        and `y = {"q": [shots * horizon, 5], "mask": [shots * horizon]}` (the mask as
        float32 0/1); `latent` is `w` `[M]`.
        """
        c = self.config
        k_mask, k_code, k_inst = jax.random.split(key, 3)
        w = self.code(k_code, self.sample_mask(k_mask, pool))
        shots = c.shots_support + c.shots_query
        obs, q, valid = jax.vmap(self.demonstrate, in_axes=(0, None))(
            jax.random.split(k_inst, shots), w
        )
        rows = c.shots_support * c.horizon
        x = obs.reshape(shots * c.horizon, -1)
        y = {"q": q.reshape(-1, NUM_ACTIONS), "mask": valid.reshape(-1).astype(jnp.float32)}
        return Episode(
            support=Split(x=x[:rows], y=jax.tree.map(lambda v: v[:rows], y)),
            query=Split(x=x[rows:], y=jax.tree.map(lambda v: v[rows:], y)),
            latent=w,
        )

    def render(
        self,
        x: Float[Array, "t obs"] | Float[np.ndarray, "t obs"],
        mask: Float[Array, " t"] | Float[np.ndarray, " t"] | None = None,
        *,
        scale: int = 16,
    ) -> np.ndarray:
        """A picture of one demonstrated trajectory (NumPy, not jitted; see
        `gridworld.render`): the grid and objects of its first observation, coloured by
        feature, the agent where it starts, and the cells it visits on the valid steps.

        **Arguments:**

        - `x`: the trajectory's observations, `[t, obs]` (e.g. `horizon` consecutive rows
            of a split's `x`).
        - `mask`: its validity mask (`y["mask"]` of the same rows); all valid if omitted.
        - `scale`: pixels per cell side.

        **Returns:**

        A `uint8` array `[7 * scale, 7 * scale, 3]`.
        """
        f = self.config.num_features
        h, w = self.walls.shape
        grid = np.asarray(x, np.float32).reshape(-1, h, w, f + 2)
        valid = np.ones(len(grid), bool) if mask is None else np.asarray(mask) > 0
        first = grid[0]
        objects = np.argwhere(first[..., :f].sum(-1) > 0)
        types = first[objects[:, 0], objects[:, 1], :f].argmax(-1)
        agents = [np.argwhere(g[..., f] > 0)[0] for g in grid[valid]]
        return gridworld.render(
            first[..., f + 1] > 0,
            agent=agents[0] if agents else None,
            objects=objects,
            object_types=types,
            path=np.array(agents, int).reshape(-1, 2),
            scale=scale,
        )

    def show(
        self, episode: Episode, *, trajectories: int = 2, scale: int = 16
    ) -> list[tuple[np.ndarray, str]]:
        """Pictures of one (unbatched) episode (NumPy, not jitted): the first `trajectories`
        demonstrations of the support, then of the query (`render`: objects coloured by
        feature, the agent's start, the visited cells), each titled with the task code `w`
        (the active modules and their weights), and a key of the feature colours with the
        reward `(B^T w)[f]` of collecting each feature as a bar.

        **Returns:**

        `(uint8 RGB image, title)` panels.
        """
        horizon = self.config.horizon
        w = np.asarray(episode.latent, np.float32)
        rewards = np.asarray(self.preferences(jnp.asarray(w)))
        code = "w: " + ", ".join(f"m{i}={w[i]:.2f}" for i in np.flatnonzero(w))
        panels = []
        for name, split in (("support", episode.support), ("query", episode.query)):
            x, mask = np.asarray(split.x), np.asarray(split.y["mask"])
            shots = len(x) // horizon
            for i in range(min(trajectories, shots)):
                rows = slice(i * horizon, (i + 1) * horizon)
                steps = int((mask[rows] > 0).sum())
                panels.append(
                    (
                        self.render(x[rows], mask[rows], scale=scale),
                        f"{name} {i + 1}/{shots} ({steps} steps)\n{code}",
                    )
                )
        values = " ".join(f"{r:+.1f}" for r in rewards)
        panels.append(
            (
                gridworld.swatches(len(rewards), values=rewards, scale=scale),
                f"reward per feature (top=f0)\n{values}",
            )
        )
        return panels

    def loss(self, pred: Float[Array, "n 5"], y: dict[str, Array]) -> Float[Array, ""]:  # pyright: ignore[reportIncompatibleMethodOverride]
        """`0.5 * sum over actions of (pred - q)^2`, averaged over the valid rows
        (`y["mask"]`), divided by `max(number of valid rows, 1)`."""
        mask = y["mask"].astype(pred.dtype)
        per_row = 0.5 * jnp.sum((pred - y["q"]) ** 2, axis=-1)
        return jnp.sum(per_row * mask) / jnp.maximum(mask.sum(), 1.0)

    def metrics(
        self, pred: Float[Array, "n 5"], y: dict[str, Array]
    ) -> dict[str, Float[Array, ""]]:  # pyright: ignore[reportIncompatibleMethodOverride]
        """`mse`: the masked loss (the paper's reported "MSE", as `loss`)."""
        return {"mse": self.loss(pred, y)}


def make(config: CompositionalPreferencesConfig, *, key: PRNGKeyArray) -> CompositionalPreferences:
    """Build the compositional preferences task: the module bank and (for
    `"compositional"`) the split permutation from `key`. Traceable (e.g. under
    `eqx.filter_eval_shape`); the split's coverage check runs when `key` is concrete.

    **Arguments:**

    - `config`: a `CompositionalPreferencesConfig`.
    - `key`: a JAX PRNG key (keyword-only).

    **Returns:**

    A `CompositionalPreferences`.
    """
    c = config
    k_bank, k_split = jax.random.split(key)
    masks = all_masks(c.num_modules, c.max_active)
    n = len(masks)
    if c.split == "compositional":
        permutation = jax.random.permutation(k_split, n)
        try:
            concrete = np.asarray(permutation)
        except jax.errors.TracerArrayConversionError:
            # Traced (e.g. under `eqx.filter_eval_shape`): the same pools, unchecked.
            n_ood = int(n * c.ood_fraction)
            shuffled = jnp.asarray(masks)[permutation]
            train, ood = shuffled[: n - n_ood], shuffled[n - n_ood :]
        else:
            train, ood = make_split(c.num_modules, c.max_active, c.split, concrete, c.ood_fraction)
    else:
        train, ood = make_split(c.num_modules, c.max_active, c.split, held_out=c.held_out)
    walls = jnp.asarray(WALLS)
    cells = jnp.asarray(FREE_CELLS)
    deltas = jnp.concatenate([jnp.zeros((1, 2), jnp.int32), MOVES])
    targets = jax.vmap(lambda p: jax.vmap(lambda d: move(walls, p, d))(deltas))(cells)
    index = np.full(WALLS.shape, -1, np.int32)
    index[FREE_CELLS[:, 0], FREE_CELLS[:, 1]] = np.arange(len(FREE_CELLS))
    cell_next = jnp.asarray(index)[targets[..., 0], targets[..., 1]]
    return CompositionalPreferences(
        config=c,
        walls=walls,
        cells=cells,
        cell_next=cell_next,
        bank=jax.random.normal(k_bank, (c.num_modules, c.num_features)),
        train_masks=jnp.asarray(train, jnp.float32),
        ood_masks=jnp.asarray(ood, jnp.float32),
    )
