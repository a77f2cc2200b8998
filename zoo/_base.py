"""What every learner provides, in Equinox's abstract-or-final pattern.

The hierarchy has one root, `AbstractLearner`: a model that labels each of its leaves with the
part it plays in training (`labels()`). Beneath it:

- `AbstractMetaLearner`: a model `x -> prediction` whose `"fast"` leaves adapt per task by
  gradient steps on a support set (bilevel meta-learning).
- `AbstractInContextLearner`: a model that reads the support set beside each query and adapts
  without any weight update (e.g. Lake 2019's meta seq2seq).
- `AbstractActorCritic`: a recurrent agent acting in an environment (policy logits, value,
  memory), trained by reinforcement learning (e.g. Madan et al. 2021's LSTM and RIMs agents).

Capabilities are abstract marker classes a concrete model inherits beside its kind, never hooks
that return `None`:

- `AbstractSplitForward`: the forward pass splits into `features` (reads no fast leaf: computed
  once per task, outside the inner loop) and `predict`.
- `AbstractIdentifiable`: the model has an inferred task representation, `embedding()` (for the
  linear decodability of the ground-truth task latent).
- `AbstractModuleActivity`: an agent whose modules are active or not at each step says
  which were (`activity()`).
- `AbstractModular`: an identifiable model whose `modules()` line up with a task's ground-truth
  modules (for module alignment).

Every class here is abstract; concrete models are final (never subclassed). A model implements
the abstract methods; the few concrete ones with a default (`AbstractActorCritic`'s `encode`,
`encode_batch`, `step`, `unroll` and `reset_memory`) it may override where its own is faster or
its memory starts elsewhere, always with the default's result.
"""

import abc
from typing import Final, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.tree_util as jtu
from jaxtyping import Array, Bool, Float, Key, PRNGKeyArray, PyTree

Label = Literal["fast", "meta", "fixed", "slow"]
"""The part a leaf plays in training:

- `"fast"`: adapted per task by the inner loop, from a meta-learned initialization (the value
  held in the module);
- `"fixed"`: adapted per task by the inner loop, from a fixed start that is not learned (e.g.
  an output bias reset to zero for every task);
- `"meta"`: learned across tasks by the outer loop only;
- `"slow"`: learned on the slow timescale of a two-timescale algorithm (Meta-RIMs)."""

FAST: Final = "fast"
META: Final = "meta"
FIXED: Final = "fixed"
SLOW: Final = "slow"
LABELS: Final = (FAST, META, FIXED, SLOW)
_ADAPTED = (FAST, FIXED)


class AbstractLearner(eqx.Module):
    """Any model the zoo trains: an `eqx.Module` (non-array leaves such as activation functions
    or strings included) that labels its leaves."""

    @abc.abstractmethod
    def labels(self) -> PyTree[str]:
        """A pytree with the structure of `self` holding a `Label` at every leaf (non-array
        leaves included; their label is ignored)."""

    def fast_filter(self) -> PyTree[bool]:
        """`True` at the floating-point array leaves adapted per task (labelled `"fast"` or
        `"fixed"`)."""
        return jtu.tree_map(
            lambda label, leaf: label in _ADAPTED and _is_param(leaf), checked_labels(self), self
        )

    def fixed_start_filter(self) -> PyTree[bool]:
        """`True` at the adapted leaves whose per-task start is fixed (labelled `"fixed"`)."""
        return jtu.tree_map(
            lambda label, leaf: label == FIXED and _is_param(leaf), checked_labels(self), self
        )

    def partition(self) -> tuple[PyTree, PyTree]:
        """`(fast, rest)` halves of `self` (combine them with `eqx.combine(fast, rest)`)."""
        fast, rest = eqx.partition(self, self.fast_filter())
        return fast, rest


class AbstractMetaLearner(AbstractLearner):
    """A model whose `"fast"` (and `"fixed"`) leaves adapt per task by gradient steps on the
    support loss; the values held in the module are their meta-learned initialization."""

    @abc.abstractmethod
    def __call__(self, x: Array) -> Array:
        """Predictions for a batch of inputs `x` of shape `(n, ...)`."""


class AbstractInContextLearner(AbstractLearner):
    """A model that adapts in context: it reads the support set beside each query and has no
    fast leaves (e.g. Lake 2019's meta seq2seq). The in-context algorithm runs no inner loop
    for it: the query loss of `self(support, query)` is the training loss.

    Inputs and targets are token arrays (`[n, length]`, padded with 0); `__call__` gives the
    predictions for the query targets it is given (e.g. teacher-forced logits).
    """

    @abc.abstractmethod
    def __call__(
        self,
        support_x: Array,
        support_y: Array,
        query_x: Array,
        query_y: Array,
        *,
        key: PRNGKeyArray | None = None,
        inference: bool = False,
    ) -> Array:
        """Predictions for the queries `query_x` (scored against `query_y`), given the support
        set; `key` drives dropout, which `inference=True` turns off."""

    @abc.abstractmethod
    def generate(self, support_x: Array, support_y: Array, query_x: Array, length: int) -> Array:
        """The model's own outputs for the queries, `length` tokens each (greedy, no dropout):
        what exact-match accuracy is scored on."""

    @abc.abstractmethod
    def training_queries(
        self, support_x: Array, support_y: Array, query_x: Array, query_y: Array
    ) -> tuple[Array, Array]:
        """The queries scored in training (e.g. the episode's queries with the support items
        added)."""

    def labels(self) -> PyTree[str]:
        """Every leaf is `"meta"`: nothing adapts by gradient steps."""
        return jtu.tree_map(lambda _: META, self)


class AbstractActorCritic(AbstractLearner):
    """A recurrent agent acting in an environment: from one observation and its memory, the
    logits of a policy over actions, a value estimate, and the next memory.

    An agent knows nothing of the environment: it is built from the environment's `IOSpec` and
    reads observations as dicts of arrays (`"image"`, `"direction"`, and `"mission"` token ids
    where the environment has a mission; see `tasks.AbstractEnvironment`). It acts in one
    environment at a time; algorithms vmap it over a batch of environments. Its labels say
    which leaves are fast (`"fast"`) and which slow (`"slow"`) for two-timescale training
    (Meta-RIMs); single-timescale PPO trains every inexact leaf.
    """

    @abc.abstractmethod
    def initial_memory(self) -> PyTree[Array]:
        """The recurrent state at the start of an episode (one environment)."""

    @abc.abstractmethod
    def __call__(
        self,
        obs: dict[str, Array],
        memory: PyTree[Array],
        *,
        key: PRNGKeyArray | None = None,
    ) -> tuple[Float[Array, " actions"], Float[Array, ""], PyTree[Array]]:
        """`(logits, value, next_memory)` for one observation; `key` drives dropout (none
        without a key)."""

    def encode(self, obs: dict[str, Array]) -> PyTree[Array]:
        """The part of a step that does not read the memory (the encoders of the image and the
        mission), for one observation. An algorithm that replays a stored sequence of
        observations encodes them all at once, as a batch, before stepping the recurrence:
        `step(encode(obs), memory)` equals `self(obs, memory)`. By default the observation
        itself (an agent without such a part need not override `encode` or `step`)."""
        return obs

    def encode_batch(self, obs: dict[str, Array]) -> PyTree[Array]:
        """`encode` for a batch of observations (leading axis of every leaf); by default
        `jax.vmap(self.encode)(obs)`. Override where a batch is cheaper to encode at once than
        frame by frame (e.g. repeated missions)."""
        return jax.vmap(self.encode)(obs)

    def step(
        self,
        features: PyTree[Array],
        memory: PyTree[Array],
        *,
        key: PRNGKeyArray | None = None,
    ) -> tuple[Float[Array, " actions"], Float[Array, ""], PyTree[Array]]:
        """`(logits, value, next_memory)` from `encode(obs)`; by default `self(features, memory,
        key=key)`."""
        return self(features, memory, key=key)

    def unroll(
        self,
        features: PyTree[Array],
        memory: PyTree[Array],
        mask: Float[Array, "frames envs"],
        keys: Key[Array, "frames envs"] | None = None,
    ) -> tuple[Float[Array, "frames envs actions"], Float[Array, "frames envs"], PyTree[Array]]:
        """The recurrence over a stored sequence of `frames` steps of `envs` environments, as
        a recurrent loss replays it: `(logits, values, last_memory)`.

        **Arguments:**

        - `features`: `encode_batch` of the observations, leaves `[frames, envs, ...]`.
        - `memory`: the memory before the first frame, leaves `[envs, ...]`.
        - `mask`: 0 where an episode starts at that frame (the memory is reset through
            `reset_memory` before the step), 1 elsewhere.
        - `keys`: one key per frame and environment (`[frames, envs]`) for dropout; none
            without them.

        By default a `lax.scan` of `step`, vmapped over the environments. Override where a
        sequence is cheaper at once than step by step (e.g. randomness or input projections
        that read no memory, computed for every frame before the recurrence, or a step
        rematerialized in the backward pass); the result must equal the default's.
        """
        step = jax.vmap(lambda f, m, k: self.step(f, m, key=k))

        def body(memory, inputs):
            features, mask, keys = inputs
            memory = jax.vmap(self.reset_memory)(memory, mask)
            logits, value, memory = step(features, memory, keys)
            return memory, (logits, value)

        memory, (logits, value) = jax.lax.scan(body, memory, (features, mask, keys))
        return logits, value, memory

    def reset_memory(self, memory: PyTree[Array], mask: Float[Array, ""]) -> PyTree[Array]:
        """The memory to act on in one environment: `memory` where `mask` is 1, the start of an
        episode where it is 0 (the step after an episode ended). By default `memory * mask`,
        right for an initial memory of zeros; an agent whose `initial_memory()` is not zeros
        (e.g. learned) overrides it, and the algorithms reset through it."""
        return jtu.tree_map(lambda m: m * mask, memory)

    def shared_leaves(self) -> PyTree[bool]:
        """`True` at the leaves that every timescale of a two-timescale algorithm trains, in
        the fast loop and in the slow one, whatever their label (e.g. encoders shared by both
        loops); by default none."""
        return jtu.tree_map(lambda _: False, self)


class AbstractModuleActivity(eqx.Module):
    """Capability: an agent made of modules that are active or not at each step (e.g. RIMs'
    top-k), which says which were (for plots of module activity, Madan et al. 2021 Fig. 6b)."""

    @abc.abstractmethod
    def activity(
        self,
        obs: dict[str, Array],
        memory: PyTree[Array],
        *,
        key: PRNGKeyArray | None = None,
    ) -> tuple[Float[Array, " actions"], Float[Array, ""], PyTree[Array], Bool[Array, " modules"]]:
        """As the agent's `__call__`, and a mask of the modules active at this step."""


class AbstractSplitForward(eqx.Module):
    """Capability: the forward pass is `predict(features(x))`, where `features` reads no fast
    leaf (e.g. ANIL's body), so the inner loop computes it once per task and adapts on
    `predict` alone. A model must satisfy `self(x) == self.predict(self.features(x))`."""

    @abc.abstractmethod
    def features(self, x: Array) -> Array:
        """The part of the forward pass that reads no fast leaf."""

    @abc.abstractmethod
    def predict(self, features: Array) -> Array:
        """Predictions from `features(x)`."""


class AbstractIdentifiable(eqx.Module):
    """Capability: the model holds an inferred task representation, read after adaptation, for
    the linear decodability of the ground-truth task latent."""

    @abc.abstractmethod
    def embedding(self) -> Float[Array, " dim"]:
        """The (adapted) task representation, flattened."""


class AbstractModular(AbstractIdentifiable):
    """Capability: an identifiable model whose modules, one per entry of `embedding()`, are laid
    out like a task's ground-truth modules (for module alignment)."""

    @abc.abstractmethod
    def modules(self) -> Float[Array, "modules ..."]:
        """The model's modules, `[modules, ...]`."""


def checked_labels(model: AbstractLearner) -> PyTree[str]:
    """`model.labels()`, checked: the structure of `model`, a known `Label` at every leaf."""
    labels = model.labels()
    if jtu.tree_structure(labels) != jtu.tree_structure(model):
        raise ValueError(
            f"{type(model).__name__}.labels() must return a pytree with the structure of the "
            "model (e.g. `jtu.tree_map(lambda _: 'meta', self)` with some leaves replaced by "
            "`eqx.tree_at`)."
        )
    bad = {label for label in jtu.tree_leaves(labels) if label not in LABELS}
    if bad:
        raise ValueError(
            f"{type(model).__name__}.labels() holds unknown labels {sorted(map(str, bad))}; "
            f"a label is one of {list(LABELS)}."
        )
    return labels


def array_labels(model: AbstractLearner) -> PyTree[str | None]:
    """The labels of `model`'s array leaves, `None` at every other leaf: the structure of
    `eqx.filter(model, eqx.is_array)` (what optimizers see)."""
    return jtu.tree_map(
        lambda label, leaf: label if _is_array(leaf) else None, checked_labels(model), model
    )


def _is_array(x) -> bool:
    return eqx.is_array(x) or isinstance(x, jax.ShapeDtypeStruct)


def _is_param(x) -> bool:
    if isinstance(x, jax.ShapeDtypeStruct):  # an abstract model from `eqx.filter_eval_shape`
        return bool(jnp.issubdtype(x.dtype, jnp.inexact))
    return eqx.is_inexact_array(x)


def count_params(tree: PyTree) -> int:
    """Number of scalars in the inexact array leaves of `tree` (concrete or abstract)."""
    leaves = jtu.tree_leaves(eqx.filter(tree, _is_param))
    return int(sum(leaf.size for leaf in leaves))


def param_counts(model: AbstractLearner) -> dict[str, int]:
    """`{"meta": ..., "fast": ...}` parameter counts as the papers report them: meta counts the
    learned values (meta and slow leaves, and the meta-learned initializations of fast ones),
    fast counts every leaf that adapts per task."""
    fast, _ = model.partition()
    fixed, _ = eqx.partition(model, model.fixed_start_filter())
    arrays = eqx.filter(model, _is_param)
    return {
        "meta": count_params(arrays) - count_params(fixed),
        "fast": count_params(fast),
    }
