"""What every meta-learner provides: a forward pass and the split of its leaves into fast
(adapted per task in the inner loop) and meta (learned across tasks in the outer loop)."""

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.tree_util as jtu
from jaxtyping import Array, Float, PRNGKeyArray, PyTree


class AbstractMetaLearner(eqx.Module):
    """A model whose fast leaves adapt per task.

    The values of the fast leaves held in the module are their meta-learned initialization.
    Subclasses implement `fast_filter`; models that adapt in context return all `False`.
    """

    @abc.abstractmethod
    def __call__(self, x: Array) -> Array:
        """Predictions for a batch of inputs `x` of shape `(n, in_features)`."""

    @abc.abstractmethod
    def fast_filter(self) -> PyTree[bool]:
        """A pytree with the structure of `self`: `True` at the leaves that adapt per task."""

    def fixed_start_filter(self) -> PyTree[bool]:
        """`True` at fast leaves whose per-task starting value is fixed, not meta-learned
        (e.g. an output bias reset to zero for each task). Default: none."""
        return jtu.tree_map(lambda _: False, self)

    def features(self, x: Array) -> Array:
        """The part of the forward pass that reads no fast leaf (e.g. ANIL's body).

        The engine computes it once per task, outside the inner loop, and adapts on
        `predict(features(x))`; a model must satisfy `self(x) == self.predict(self.features(x))`.
        Default: the identity (everything depends on fast leaves)."""
        return x

    def predict(self, features: Array) -> Array:
        """Predictions from `features(x)`. Default: `self(features)`, which fits the default
        identity `features`."""
        return self(features)

    def embedding(self) -> Float[Array, " dim"] | None:
        """The model's inferred task representation (read after adaptation), for linear
        decodability of the ground-truth task latent; `None` if the model has none."""
        return None

    def modules(self) -> Float[Array, "modules ..."] | None:
        """The model's modules, one per entry of `embedding()`, in the layout of the task's
        ground-truth modules (for module alignment); `None` if the model has none."""
        return None

    def partition(self) -> tuple[PyTree, PyTree]:
        """`(fast, meta)` halves of `self` (combine with `eqx.combine(fast, meta)`)."""
        fast, meta = eqx.partition(self, self.fast_filter())
        return fast, meta


class AbstractInContextLearner(eqx.Module):
    """A model that adapts in context: it reads the support set beside each query and has no
    fast leaves (e.g. Lake 2019's meta seq2seq). The engine runs no inner loop for it: the
    query loss of `self(support, query)` is the outer loss.

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

    def training_queries(
        self, support_x: Array, support_y: Array, query_x: Array, query_y: Array
    ) -> tuple[Array, Array]:
        """The queries scored in training (e.g. with the support items added). Default: the
        episode's queries."""
        del support_x, support_y
        return query_x, query_y

    def fast_filter(self) -> PyTree[bool]:
        """No leaf adapts per task."""
        return jtu.tree_map(lambda _: False, self)

    def fixed_start_filter(self) -> PyTree[bool]:
        return jtu.tree_map(lambda _: False, self)

    def embedding(self) -> Float[Array, " dim"] | None:
        return None

    def modules(self) -> Float[Array, "modules ..."] | None:
        return None

    def partition(self) -> tuple[PyTree, PyTree]:
        """`(fast, meta)`: nothing is fast."""
        fast, meta = eqx.partition(self, self.fast_filter())
        return fast, meta


Learner = AbstractMetaLearner | AbstractInContextLearner
"""Any model the engine trains."""


def _is_param(x) -> bool:
    if isinstance(x, jax.ShapeDtypeStruct):  # an abstract model from `eqx.filter_eval_shape`
        return bool(jnp.issubdtype(x.dtype, jnp.inexact))
    return eqx.is_inexact_array(x)


def count_params(tree: PyTree) -> int:
    """Number of scalars in the inexact array leaves of `tree` (concrete or abstract)."""
    leaves = jtu.tree_leaves(eqx.filter(tree, _is_param))
    return int(sum(leaf.size for leaf in leaves))


def param_counts(model: AbstractMetaLearner | AbstractInContextLearner) -> dict[str, int]:
    """`{"meta": ..., "fast": ...}` parameter counts as the papers report them: meta counts the
    meta-learned values (including fast initializations that are meta-learned), fast counts
    every leaf that adapts per task."""
    fast, _ = model.partition()
    fixed, _ = eqx.partition(model, model.fixed_start_filter())
    arrays = eqx.filter(model, _is_param)
    return {
        "meta": count_params(arrays) - count_params(fixed),
        "fast": count_params(fast),
    }
