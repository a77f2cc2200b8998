"""Bilevel meta-learning (MAML, ANIL, hypernetworks): per task, the inner loop adapts the
model's fast leaves on the support set; the outer step updates the meta leaves and the
meta-learned initialization of the fast ones with the gradient of the query loss."""

import equinox as eqx
import jax.random as jr
import optax
from jax.sharding import Mesh
from jaxtyping import Array, Float, PRNGKeyArray, PyTree

from tasks import AbstractTask, Episode
from zoo import AbstractIdentifiable, AbstractMetaLearner, AbstractModular

from ..config import EvalConfig, TrainConfig
from ..metrics import linear_decodability, module_alignment
from .episodic import AbstractEpisodic, episodic_optimizer, over_tasks
from .inner import InnerLoop, stop_gradient


class Bilevel(AbstractEpisodic):
    """Inner loop on the support set, outer step on the query loss."""

    model_kind = AbstractMetaLearner

    inner: InnerLoop
    """The inner loop of training steps."""
    eval_inner: InnerLoop
    """The inner loop at evaluation (e.g. more steps)."""
    optimizer: optax.GradientTransformation = eqx.field(static=True)
    meta_batch: int = eqx.field(static=True)
    mesh: Mesh = eqx.field(static=True)

    def adapted(
        self,
        task: AbstractTask,
        model: AbstractMetaLearner,
        key: PRNGKeyArray,
        pool: str,
        loop: InnerLoop,
    ) -> tuple[Episode, AbstractMetaLearner]:
        """Sample one episode of `pool` and adapt `model` on its support set."""
        if loop.batch:
            key, inner_key = jr.split(key)
        else:
            inner_key = None
        episode = task.sample(key, pool)
        return episode, loop.adapt(model, episode.support, task.loss, inner_key)

    def episode_loss(
        self,
        task: AbstractTask,
        model: AbstractMetaLearner,
        key: PRNGKeyArray,
        pool: str = "train",
        training: bool = True,
    ) -> tuple[Float[Array, ""], dict[str, Float[Array, ""]]]:
        """Sample one episode, adapt on its support set, score its query set."""
        episode, adapted = self.adapted(
            task, model, key, pool, self.inner if training else self.eval_inner
        )
        pred = adapted(episode.query.x)
        loss = task.loss(pred, episode.query.y)
        return loss, {"loss": loss, **task.metrics(pred, episode.query.y)}

    def episode_losses(self, task, model, keys, pool, training):
        def one(key):
            return self.episode_loss(task, model, key, pool, training)

        return eqx.filter_vmap(one)(keys)

    def evaluate(
        self, task: AbstractTask, model: PyTree, key: PRNGKeyArray, settings: EvalConfig
    ) -> dict[str, dict[str, float]]:
        """Every pool's query metrics after `eval_inner` adaptation, then, for a
        `zoo.AbstractIdentifiable` model, the `"identification"` metrics (see
        `identification`)."""
        results = self.evaluate_pools(task, model, key, settings)
        if isinstance(model, AbstractIdentifiable) and isinstance(model, AbstractMetaLearner):
            results["identification"] = self.identification(task, model, key, settings)
        return results

    def identification(
        self,
        task: AbstractTask,
        model: AbstractMetaLearner,
        key: PRNGKeyArray,
        settings: EvalConfig,
    ) -> dict[str, float]:
        """Identification metrics of `model` (see `runs.metrics`):

        - `r2_test`, `r2_ood`: linear decodability of the task latent from the adapted
          `embedding()`, a ridge decoder fitted on `settings.tasks` training-pool tasks and
          scored on as many fresh training-pool tasks and on the `ood` pool;
        - `alignment`: for a `zoo.AbstractModular` model on a task with ground-truth modules,
          module alignment of `model.modules()` with `task.modules()`, from the inferred codes
          of the fitting tasks."""
        n, batch = settings.tasks, min(settings.batch, settings.tasks)

        def collect(pool: str, i: int):
            emb, lat = collect_embeddings(
                self, task, model, jr.fold_in(key, 1000 + i), pool, n, batch
            )
            return emb, lat.reshape(n, -1)

        fit_emb, fit_lat = collect("train", 0)
        test_emb, test_lat = collect("train", 1)
        out = {"r2_test": float(linear_decodability(fit_emb, fit_lat, test_emb, test_lat))}
        if "ood" in task.pools():
            ood_emb, ood_lat = collect("ood", 2)
            out["r2_ood"] = float(linear_decodability(fit_emb, fit_lat, ood_emb, ood_lat))
        teacher = task.modules()
        if teacher is not None and isinstance(model, AbstractModular):
            out["alignment"] = float(module_alignment(teacher, model.modules(), fit_lat, fit_emb))
        return out


@eqx.filter_jit
def collect_embeddings(
    algorithm: Bilevel,
    task: AbstractTask,
    model: AbstractMetaLearner,
    key: PRNGKeyArray,
    pool: str,
    num_tasks: int,
    batch: int,
) -> tuple[Float[Array, "tasks dim"], Float[Array, "tasks ..."]]:
    """Adapted `embedding()`s and ground-truth latents of `num_tasks` tasks of `pool`,
    `batch` tasks at a time."""
    frozen = stop_gradient(model)

    def one(key):
        episode, adapted = algorithm.adapted(task, frozen, key, pool, algorithm.eval_inner)
        assert isinstance(adapted, AbstractIdentifiable)
        return adapted.embedding(), episode.latent

    def one_batch(keys):
        return eqx.filter_vmap(one)(keys)

    return over_tasks(one_batch, key, num_tasks, batch)


def make(
    config: TrainConfig, task: AbstractTask, model: AbstractMetaLearner, mesh: Mesh
) -> Bilevel:
    """The bilevel algorithm of a run (the factory of the `bilevel` algorithm)."""
    eval_steps = config.algorithm.inner.eval_steps
    return Bilevel(
        inner=InnerLoop.from_config(config.algorithm.inner),
        eval_inner=InnerLoop.from_config(
            config.algorithm.inner,
            steps=config.algorithm.inner.steps if eval_steps is None else eval_steps,
        ),
        optimizer=episodic_optimizer(config, model),
        meta_batch=config.algorithm.outer.meta_batch,
        mesh=mesh,
    )
