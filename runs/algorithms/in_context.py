"""In-context meta-learning (meta seq2seq): no inner loop; the model reads each episode's support
set beside its queries, and the outer step follows the query loss. Scored by exact match of the
model's own generated outputs on a task's fixed test episodes."""

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import optax
from jax.sharding import Mesh
from jaxtyping import Array, Float, Int, PRNGKeyArray, PyTree

from tasks import AbstractTask
from zoo import AbstractInContextLearner

from ..config import EvalConfig, TrainConfig
from .episodic import AbstractEpisodic, episodic_optimizer
from .inner import stop_gradient


class InContext(AbstractEpisodic):
    """Episodes scored by the model reading its support set; one outer step per meta-batch.

    Episodes are mapped one after the other (`lax.map`), not vmapped: `MetaSeq2Seq`'s loops
    stop where an episode's data says and pick their batch sizes by `lax.switch`, and under
    `vmap` both would turn into selects that compute everything."""

    model_kind = AbstractInContextLearner

    optimizer: optax.GradientTransformation = eqx.field(static=True)
    meta_batch: int = eqx.field(static=True)
    mesh: Mesh = eqx.field(static=True)

    def episode_loss(
        self,
        task: AbstractTask,
        model: AbstractInContextLearner,
        key: PRNGKeyArray,
        pool: str = "train",
        training: bool = True,
    ) -> tuple[Float[Array, ""], dict[str, Float[Array, ""]]]:
        """One episode of `pool`, its queries read beside its support set (in `training`, with
        dropout and the queries the model's `training_queries` adds)."""
        sample_key, dropout_key = jr.split(key)
        episode = task.sample(sample_key, pool)
        s, q = episode.support, episode.query
        qx, qy = model.training_queries(s.x, s.y, q.x, q.y) if training else (q.x, q.y)
        pred = model(s.x, s.y, qx, qy, key=dropout_key, inference=not training)
        loss = task.loss(pred, qy)
        return loss, {"loss": loss, **task.metrics(pred, qy)}

    def episode_losses(self, task, model, keys, pool, training):
        return jax.lax.map(lambda key: self.episode_loss(task, model, key, pool, training), keys)

    def evaluate(
        self, task: AbstractTask, model: PyTree, key: PRNGKeyArray, settings: EvalConfig
    ) -> dict[str, dict[str, float]]:
        """Every pool's query metrics, then, if the task has fixed test episodes and
        `settings.test_episodes` is set, their exact-match accuracy (`"test_episodes"`)."""
        results = self.evaluate_pools(task, model, key, settings)
        episodes = task.test_episodes() if settings.test_episodes else []
        if episodes:
            scores = [
                float(
                    exact_match(
                        model, e.support.x, e.support.y, e.query.x, e.query.y, settings.query_batch
                    )
                )
                for e in episodes
            ]
            results["test_episodes"] = {
                "accuracy": sum(scores) / len(scores),
                "accuracy_min": min(scores),
                "accuracy_max": max(scores),
                "queries": float(episodes[0].query.x.shape[0]),
            }
        return results


@eqx.filter_jit
def exact_match(
    model: AbstractInContextLearner,
    support_x: Int[Array, "support in_len"],
    support_y: Int[Array, "support out_len"],
    query_x: Int[Array, "query in_len"],
    query_y: Int[Array, "query out_len"],
    batch: int,
) -> Float[Array, ""]:
    """Fraction of queries whose generated output matches the target exactly, up to and
    including its EOS (target tokens > 0 up to padding), `batch` queries at a time."""
    n, length = query_y.shape
    num_batches = -(-n // batch)
    index = (jnp.arange(num_batches * batch) % n).reshape(num_batches, batch)
    frozen = stop_gradient(model)

    def one_batch(idx):
        decoded = frozen.generate(support_x, support_y, query_x[idx], length)
        target = query_y[idx]
        return jnp.all((decoded == target) | (target == 0), axis=-1)

    correct = jax.lax.map(one_batch, index).reshape(-1)[:n]
    return jnp.mean(correct)


def make(
    config: TrainConfig, task: AbstractTask, model: AbstractInContextLearner, mesh: Mesh
) -> InContext:
    """The in-context algorithm of a run (the factory of the `in-context` algorithm)."""
    return InContext(
        optimizer=episodic_optimizer(config, model),
        meta_batch=config.algorithm.outer.meta_batch,
        mesh=mesh,
    )
