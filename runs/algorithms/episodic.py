"""What the supervised meta-learning algorithms share: a step on a meta-batch of episodes,
split over the device mesh, and evaluation on every pool of a task."""

import abc
import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
import numpy as np
import optax
from jax.sharding import Mesh
from jaxtyping import Array, Float, PRNGKeyArray, PyTree

from tasks import AbstractTask
from zoo import array_labels

from ..config import EvalConfig, TrainConfig
from ..optim import outer_optimizer
from ..sharding import sharded_mean
from ..state import TrainState
from .base import AbstractAlgorithm, next_step, step_key
from .inner import stop_gradient

OUTER_RULES = {"fast": "update", "meta": "update", "slow": "update", "fixed": "freeze"}
"""What the outer step of an episodic algorithm does per label: fixed starts are not learned."""


def episodic_optimizer(config: TrainConfig, model: PyTree) -> optax.GradientTransformation:
    """The outer optimizer of an episodic algorithm for `model` (see `runs.optim`)."""
    return outer_optimizer(
        config.algorithm.outer, config.run.steps, array_labels(model), OUTER_RULES
    )


class AbstractEpisodic(AbstractAlgorithm):
    """An algorithm whose step draws a meta-batch of episodes from a task's `"train"` pool,
    scores each with `episode_losses`, and takes one optimizer step on the mean loss; the
    meta-batch is split over the devices of `mesh` and the gradients averaged."""

    task_kind = AbstractTask

    optimizer: eqx.AbstractVar[optax.GradientTransformation]
    meta_batch: eqx.AbstractVar[int]
    mesh: eqx.AbstractVar[Mesh]

    @abc.abstractmethod
    def episode_losses(
        self,
        task: AbstractTask,
        model: PyTree,
        keys: PRNGKeyArray,
        pool: str,
        training: bool,
    ) -> tuple[Float[Array, " tasks"], dict[str, Float[Array, " tasks"]]]:
        """Query loss and metrics of one episode of `pool` per key (`training`: as in a
        training step, e.g. with dropout)."""

    def init(self, task: AbstractTask, model: PyTree, key: PRNGKeyArray) -> TrainState:
        opt_state = self.optimizer.init(eqx.filter(model, eqx.is_array))
        return TrainState(step=jnp.zeros((), jnp.int32), model=model, opt_state=opt_state, key=key)

    def grads(
        self, task: AbstractTask, model: PyTree, keys: PRNGKeyArray
    ) -> tuple[PyTree, dict[str, Float[Array, ""]]]:
        """Mean query-loss gradient over one episode per key, split over the mesh."""

        def local(replicated, keys):
            model, task = replicated

            def mean_loss(model):
                losses, metrics = self.episode_losses(task, model, keys, "train", True)
                return losses.mean(), jtu.tree_map(jnp.mean, metrics)

            grads, metrics = eqx.filter_grad(mean_loss, has_aux=True)(model)
            return eqx.filter(grads, eqx.is_array), metrics

        return sharded_mean(local, self.mesh, (model, task), keys)

    def step(
        self, task: AbstractTask, state: TrainState
    ) -> tuple[TrainState, dict[str, Float[Array, ""]]]:
        grads, metrics = self.grads(task, state.model, jr.split(step_key(state), self.meta_batch))
        params = eqx.filter(state.model, eqx.is_array)
        updates, opt_state = self.optimizer.update(grads, state.opt_state, params)
        model = eqx.apply_updates(state.model, updates)
        metrics["grad_norm"] = optax.tree.norm(grads)
        metrics["grad_finite"] = jnp.isfinite(metrics["grad_norm"]).astype(jnp.float32)
        return next_step(state, model, opt_state), metrics

    def summarize(self, metrics: dict[str, np.ndarray]) -> dict[str, float]:
        """The mean of each metric over the chunk's steps."""
        return {k: float(np.mean(v)) for k, v in metrics.items()}

    def evaluate_pools(
        self, task: AbstractTask, model: PyTree, key: PRNGKeyArray, config: EvalConfig
    ) -> dict[str, dict[str, float]]:
        """Mean query metrics over `config.tasks` tasks of every pool but `"train"` (or of
        `config.pools`), pool `i` drawn from `fold_in(key, i)`: the same tasks at every call
        with the same key."""
        results = {}
        for i, pool in enumerate(task.pools()):
            if pool == "train" or (config.pools and pool not in config.pools):
                continue
            metrics = evaluate_pool(
                self,
                task,
                model,
                jr.fold_in(key, i),
                pool,
                config.tasks,
                min(config.batch, config.tasks),
            )
            results[pool] = {k: float(v) for k, v in metrics.items()}
        return results


def over_tasks(fn, key: PRNGKeyArray, num_tasks: int, batch: int) -> PyTree:
    """`fn(keys)` for `num_tasks` task keys drawn from `key`, `batch` at a time (memory stays
    bounded whatever `num_tasks` is); the per-task outputs stacked along the first axis."""
    num_batches = -(-num_tasks // batch)
    keys = jr.split(key, num_batches * batch).reshape(num_batches, batch)
    out = jax.lax.map(fn, keys)
    return jtu.tree_map(lambda a: a.reshape(num_batches * batch, *a.shape[2:])[:num_tasks], out)


@functools.partial(eqx.filter_jit)
def evaluate_pool(
    algorithm: AbstractEpisodic,
    task: AbstractTask,
    model: PyTree,
    key: PRNGKeyArray,
    pool: str,
    num_tasks: int,
    batch: int,
) -> dict[str, Float[Array, ""]]:
    """Mean query metrics over `num_tasks` tasks of `pool`, `batch` tasks at a time."""
    frozen = stop_gradient(model)

    def one_batch(keys):
        return algorithm.episode_losses(task, frozen, keys, pool, False)[1]

    return jtu.tree_map(jnp.mean, over_tasks(one_batch, key, num_tasks, batch))
