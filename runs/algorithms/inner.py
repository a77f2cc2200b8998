"""The inner loop of bilevel meta-learning, as an object: an optimizer, a number of steps, a
minibatch size and order, and how gradients flow back through it (the adjoint, after
Diffrax's).

    loop = InnerLoop.from_config(config.algorithm.inner)
    adapted = loop.adapt(model, support, task.loss, key)
    adapted = loop.with_steps(50).adapt(...)            # e.g. more steps at evaluation

Fresh data at every inner step (a teacher-student task may draw 256 new inputs for
each of its 300 inner steps) is `sequential` minibatches over a support set of `steps * batch`
examples that the task draws up front: step `i` reads the `i`-th slice. We chose this over a
task-side sampler called inside the loop because the support stays a plain array: the loop
needs nothing from the task but its loss, so every task, learner and adjoint (second-order
included), the `features` precomputation of `zoo.AbstractSplitForward` models, the device
split and evaluation work unchanged. The price is memory: the whole support of a meta-batch
exists at once. At the paper's size that is 64 tasks x 300 steps x 256 inputs x (16 + 4)
floats, about 393 MB in float32 per outer step (evaluation: `eval.batch` tasks at a time),
which an accelerator holds easily; a sampler would hold only one step's 64 x 256 inputs, but
would tie the engine to a new task protocol. CPU-scale presets may keep a small fixed support.
"""

import abc
import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
import optax
from jaxtyping import Array, Float, PRNGKeyArray, PyTree

from tasks import Split
from zoo import AbstractMetaLearner, AbstractSplitForward

from ..config import InnerConfig, Minibatches
from ..optim import inner_optimizer


def stop_gradient(tree: PyTree) -> PyTree:
    """`jax.lax.stop_gradient` on the array leaves of `tree`; other leaves (activation
    functions, strings) pass through."""
    arrays, static = eqx.partition(tree, eqx.is_array)
    return eqx.combine(jax.lax.stop_gradient(arrays), static)


class AbstractAdjoint(eqx.Module):
    """How the outer gradient flows back through the inner loop to the meta leaves and the
    meta-learned initialization of the fast ones."""

    unroll: eqx.AbstractVar[int]

    @abc.abstractmethod
    def start(self, fast: PyTree, meta: PyTree) -> tuple[PyTree, PyTree]:
        """The fast leaves the loop starts from and the meta leaves it reads."""

    @abc.abstractmethod
    def finish(self, fast0: PyTree, fast: PyTree) -> PyTree:
        """The adapted fast leaves, as the outer gradient sees them (`fast0`: the start)."""

    def step(self, step):
        """The loop's step function, as it runs under this adjoint. Default: as it is."""
        return step


class SecondOrder(AbstractAdjoint):
    """Backpropagate through every inner step (second-order terms included)."""

    remat: bool = False
    """Rematerialize each inner step in the backward pass (less memory, more compute)."""
    unroll: int = 1
    """Inner steps per iteration of the compiled loop (`lax.scan`'s `unroll`)."""

    def start(self, fast, meta):
        return fast, meta

    def finish(self, fast0, fast):
        return fast

    def step(self, step):
        return jax.checkpoint(step) if self.remat else step


class FirstOrder(AbstractAdjoint):
    """Drop the second-order terms: the gradient at the adapted leaves reaches the
    initialization as if adaptation were the identity (first-order MAML)."""

    unroll: int = 1

    def start(self, fast, meta):
        return stop_gradient(fast), stop_gradient(meta)

    def finish(self, fast0, fast):
        return jtu.tree_map(lambda f0, f: f0 + jax.lax.stop_gradient(f - f0), fast0, fast)


class Equilibrium(AbstractAdjoint):
    """Treat the adapted fast leaves as constants (the stop-gradient mode): only the query loss's direct dependence on the meta leaves counts."""

    unroll: int = 1

    def start(self, fast, meta):
        return stop_gradient(fast), stop_gradient(meta)

    def finish(self, fast0, fast):
        return stop_gradient(fast)


def adjoint_from_config(config: InnerConfig) -> AbstractAdjoint:
    """The adjoint named by `config.mode`."""
    if config.mode == "second-order":
        return SecondOrder(remat=config.remat, unroll=config.unroll)
    if config.mode == "first-order":
        return FirstOrder(unroll=config.unroll)
    return Equilibrium(unroll=config.unroll)


class InnerLoop(eqx.Module):
    """Gradient steps on the fast leaves of a meta-learner with a support loss."""

    optimizer: optax.GradientTransformation = eqx.field(static=True)
    """The inner optimizer."""
    steps: int = eqx.field(static=True)
    """Optimizer steps."""
    batch: int = eqx.field(static=True, default=0)
    """Support examples per step; 0: the whole support set."""
    minibatches: Minibatches = eqx.field(static=True, default="random")
    """`random`: a fresh random subset of `batch` examples at every step (needs a key);
    `sequential`: step `i` takes the `i`-th of consecutive, non-overlapping slices of `batch`
    examples (the support must hold `steps * batch`)."""
    adjoint: AbstractAdjoint = SecondOrder()
    """How gradients flow back through the loop."""

    @classmethod
    def from_config(cls, config: InnerConfig, steps: int | None = None) -> "InnerLoop":
        """The loop of `config` (with `steps` steps instead of `config.steps` if given)."""
        return cls(
            optimizer=inner_optimizer(config),
            steps=config.steps if steps is None else steps,
            batch=config.batch,
            minibatches=config.minibatches,
            adjoint=adjoint_from_config(config),
        )

    def with_steps(self, steps: int) -> "InnerLoop":
        """The same loop with `steps` steps."""
        return dataclasses.replace(self, steps=steps)  # a static field: not `eqx.tree_at`

    def adapt(
        self,
        model: AbstractMetaLearner,
        support: Split,
        loss,
        key: PRNGKeyArray | None = None,
    ) -> AbstractMetaLearner:
        """`model` with its fast leaves adapted by `steps` optimizer steps on
        `loss(predictions, support.y)`; `key` draws the support minibatches when `batch` is
        set and `minibatches` is `random` or `with-replacement` (`sequential` ones need no key).

        Leaves labelled `"fixed"` start from their value in `model` with no gradient to it.
        A `zoo.AbstractSplitForward` model's `features` of the support inputs are computed
        once, before the loop, and the loop adapts `predict`."""
        fast0, meta = model.partition()
        if not jtu.tree_leaves(fast0) or self.steps == 0:
            return model
        fixed, _ = eqx.partition(fast0, model.fixed_start_filter(), is_leaf=lambda x: x is None)
        fast0 = jtu.tree_map(
            lambda f, fx: jax.lax.stop_gradient(f) if fx is not None else f,
            fast0,
            fixed,
            is_leaf=lambda x: x is None,
        )
        start, inner_meta = self.adjoint.start(fast0, meta)
        split = isinstance(model, AbstractSplitForward)
        begin = eqx.combine(start, inner_meta)
        features = begin.features(support.x) if split else support.x
        num = jtu.tree_leaves(features)[0].shape[0]
        if self.batch > num:
            raise ValueError(
                f"inner.batch={self.batch} exceeds the {num} support examples of an episode; "
                f"set --inner.batch to at most {num} (0 uses them all)."
            )
        sequential = self.minibatches == "sequential"
        replace = self.minibatches == "with-replacement"
        if sequential and self.batch * self.steps > num:
            raise ValueError(
                f"inner.minibatches='sequential' takes {self.steps} steps x {self.batch} = "
                f"{self.steps * self.batch} support examples, but an episode has {num}; give "
                f"the task a support set of at least {self.steps * self.batch} examples, or "
                "lower --inner.batch or the inner steps (--inner.eval-steps at evaluation)."
            )
        if self.batch and not sequential and key is None:
            raise ValueError("inner.batch is set: adapt needs a key to draw the minibatches.")
        optimizer = self.optimizer

        def support_loss(fast, i) -> Float[Array, ""]:
            h, y = features, support.y
            if self.batch and sequential:
                h, y = jtu.tree_map(
                    lambda a: jax.lax.dynamic_slice_in_dim(a, i * self.batch, self.batch),
                    (h, y),
                )
            elif self.batch:
                assert key is not None
                idx = jr.choice(jr.fold_in(key, i), num, (self.batch,), replace=replace)
                h, y = jtu.tree_map(lambda a: a[idx], (h, y))
            learner = eqx.combine(fast, inner_meta)
            return loss(learner.predict(h) if split else learner(h), y)

        def step(carry, i):
            fast, opt_state = carry
            grads = jax.grad(support_loss)(fast, i)
            updates, opt_state = optimizer.update(grads, opt_state, fast)
            return (optax.apply_updates(fast, updates), opt_state), None

        step = self.adjoint.step(step)
        # The first step runs outside the loop: its starting point is shared by every task of a
        # vmapped meta-batch, so its work is not repeated per task (the loop carry is per task).
        carry, _ = step((start, optimizer.init(start)), 0)
        (fast, _), _ = jax.lax.scan(
            step, carry, jnp.arange(1, self.steps), unroll=self.adjoint.unroll
        )
        return eqx.combine(self.adjoint.finish(fast0, fast), meta)
