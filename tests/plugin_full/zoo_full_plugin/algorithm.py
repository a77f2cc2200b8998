"""The `multitask` algorithm: the baseline that fits one model to every training task's query
set and never adapts (the "no meta-learning" row of many papers). Built on the public episodic
base class of `runs.algorithms.episodic`, so the meta-batch is split over devices for free."""

import equinox as eqx
import jax
import optax
from jax.sharding import Mesh
from jaxtyping import Array, Float, PRNGKeyArray, PyTree

import runs
from runs.algorithms.episodic import AbstractEpisodic
from runs.optim import outer_optimizer
from tasks import AbstractTask
from zoo import AbstractMetaLearner, array_labels


class Multitask(AbstractEpisodic):
    """One optimizer step per meta-batch on the query loss of the unadapted model."""

    model_kind = AbstractMetaLearner

    optimizer: optax.GradientTransformation = eqx.field(static=True)
    meta_batch: int = eqx.field(static=True)
    mesh: Mesh = eqx.field(static=True)

    def episode_losses(
        self, task: AbstractTask, model: PyTree, keys: PRNGKeyArray, pool: str, training: bool
    ) -> tuple[Float[Array, " tasks"], dict[str, Float[Array, " tasks"]]]:
        def one(key):
            episode = task.sample(key, pool)
            pred = model(episode.query.x)
            loss = task.loss(pred, episode.query.y)
            return loss, {"loss": loss, **task.metrics(pred, episode.query.y)}

        del training
        return jax.vmap(one)(keys)

    def evaluate(self, task, model, key, settings):
        return self.evaluate_pools(task, model, key, settings)


def make(
    config: runs.TrainConfig, task: AbstractTask, model: AbstractMetaLearner, mesh: Mesh
) -> Multitask:
    """The factory of the `multitask` algorithm."""
    del task
    outer = config.algorithm.outer
    rules = {"fast": "update", "meta": "update", "slow": "update", "fixed": "freeze"}
    optimizer = outer_optimizer(outer, config.run.steps, array_labels(model), rules)
    return Multitask(optimizer=optimizer, meta_batch=outer.meta_batch, mesh=mesh)


__all__ = ["Multitask", "make"]
