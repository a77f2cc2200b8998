"""The meta-training engine: inner loop, outer step, sharded meta-batches, evaluation.

One outer step for a meta-batch of tasks is `eqx.filter_vmap` over tasks of (sample an
episode, adapt the fast leaves on its support set, loss on its query set), the gradient of
the mean query loss with respect to the meta leaves (and the meta-learned initialization of
the fast ones), then an optax update. The meta-batch is split over a 1-D device mesh with
`jax.shard_map`; each device adapts its share and the gradients are averaged with
`lax.pmean`. `train_chunk` runs many outer steps in one compiled call (`lax.scan`).
"""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
import optax
from jax.sharding import Mesh, NamedSharding, PartitionSpec
from jaxtyping import Array, Float, Int, PRNGKeyArray, PyTree

from tasks._base import AbstractTask, Split
from zoo._base import AbstractInContextLearner, AbstractMetaLearner, Learner

from .config import InnerConfig, OuterConfig

AXIS = "tasks"


def inner_optimizer(config: InnerConfig) -> optax.GradientTransformation:
    """The inner optimizer (AdamW, as in the reference code for every learner)."""
    return optax.adamw(config.lr, weight_decay=config.weight_decay, eps_root=config.eps_root)


@functools.cache
def outer_optimizer(config: OuterConfig, total_steps: int) -> optax.GradientTransformation:
    """AdamW with optional clipping, warm-up and cosine schedule; outer steps whose gradient is
    not finite are skipped (`optax.apply_if_finite`). Cached: the same settings give the same
    object, so runs in one process share compiled steps."""
    if config.schedule == "cosine":
        lr = optax.warmup_cosine_decay_schedule(
            init_value=0.0 if config.warmup else config.lr,
            peak_value=config.lr,
            warmup_steps=config.warmup,
            decay_steps=max(total_steps, config.warmup + 1),
            end_value=config.lr_end,
        )
    elif config.schedule == "step":  # Lake 2019: lr / 10 from halfway
        lr = optax.piecewise_constant_schedule(config.lr, {max(total_steps // 2, 1): 0.1})
    elif config.warmup:
        lr = optax.linear_schedule(0.0, config.lr, config.warmup)
    else:
        lr = config.lr
    chain = [optax.clip_by_global_norm(config.clip)] if config.clip > 0 else []
    chain.append(optax.adamw(lr, weight_decay=config.weight_decay))
    return optax.apply_if_finite(optax.chain(*chain), max_consecutive_errors=config.max_nonfinite)


def adapt(
    model: AbstractMetaLearner,
    support: Split,
    task: AbstractTask,
    config: InnerConfig,
    steps: int,
    key: PRNGKeyArray | None = None,
) -> AbstractMetaLearner:
    """Run `steps` inner optimizer steps on the fast leaves of `model` with the support loss and
    return the adapted model. How gradients flow back through this to the model's meta leaves
    and fast initialization is set by `config.mode`. `key` draws the support minibatches when
    `config.batch` is set.

    The model's `features` of the support inputs (the part of the forward pass that reads no
    fast leaf) are computed once, before the loop."""
    fast0, meta = model.partition()
    if not jtu.tree_leaves(fast0) or steps == 0:
        return model
    fixed, _ = eqx.partition(fast0, model.fixed_start_filter(), is_leaf=lambda x: x is None)
    fast0 = jtu.tree_map(
        lambda f, fx: jax.lax.stop_gradient(f) if fx is not None else f,
        fast0,
        fixed,
        is_leaf=lambda x: x is None,
    )
    inner_meta = meta if config.mode == "second-order" else jax.lax.stop_gradient(meta)
    start = fast0 if config.mode == "second-order" else jax.lax.stop_gradient(fast0)
    optimizer = inner_optimizer(config)
    features = eqx.combine(start, inner_meta).features(support.x)
    num = jtu.tree_leaves(features)[0].shape[0]
    if config.batch > num:
        raise ValueError(
            f"inner.batch={config.batch} exceeds the {num} support examples of an episode; "
            f"set --inner.batch to at most {num} (0 uses them all)."
        )
    if config.batch and key is None:
        raise ValueError("inner.batch is set: adapt needs a key to draw the minibatches.")

    def support_loss(fast, i):
        h, y = features, support.y
        if config.batch:
            assert key is not None
            idx = jr.choice(jr.fold_in(key, i), num, (config.batch,), replace=False)
            h, y = jtu.tree_map(lambda a: a[idx], (h, y))
        return task.loss(eqx.combine(fast, inner_meta).predict(h), y)

    def step(carry, i):
        fast, opt_state = carry
        grads = jax.grad(support_loss)(fast, i)
        updates, opt_state = optimizer.update(grads, opt_state, fast)
        return (optax.apply_updates(fast, updates), opt_state), None

    if config.remat:
        step = jax.checkpoint(step)
    # The first step runs outside the loop: its starting point is shared by every task of a
    # vmapped meta-batch, so its work is not repeated per task (the loop carry is per task).
    carry, _ = step((start, optimizer.init(start)), 0)
    (fast, _), _ = jax.lax.scan(step, carry, jnp.arange(1, steps), unroll=config.unroll)
    if config.mode == "first-order":
        # Gradient reaches the initialization as if the adaptation were the identity.
        fast = jtu.tree_map(lambda f0, f: f0 + jax.lax.stop_gradient(f - f0), fast0, fast)
    elif config.mode == "equilibrium":
        fast = jax.lax.stop_gradient(fast)
    return eqx.combine(fast, meta)


def _adapted(
    model: AbstractMetaLearner,
    key: PRNGKeyArray,
    task: AbstractTask,
    config: InnerConfig,
    steps: int,
    pool: str,
):
    """Sample one episode from `pool` and adapt `model` on its support set."""
    if config.batch:
        key, inner_key = jr.split(key)
    else:
        inner_key = None
    episode = task.sample(key, pool)
    return episode, adapt(model, episode.support, task, config, steps, inner_key)


def episode_loss(
    model: Learner,
    key: PRNGKeyArray,
    task: AbstractTask,
    config: InnerConfig,
    steps: int,
    pool: str = "train",
    training: bool = False,
) -> tuple[Float[Array, ""], dict[str, Float[Array, ""]]]:
    """Sample one episode from `pool`, adapt on its support set, score its query set.

    An in-context learner is not adapted: it reads the support set beside the queries (in
    `training`, with dropout and the queries its `training_queries` adds)."""
    if isinstance(model, AbstractInContextLearner):
        sample_key, dropout_key = jr.split(key)
        episode = task.sample(sample_key, pool)
        s, q = episode.support, episode.query
        qx, qy = model.training_queries(s.x, s.y, q.x, q.y) if training else (q.x, q.y)
        pred = model(s.x, s.y, qx, qy, key=dropout_key, inference=not training)
        loss = task.loss(pred, qy)
        return loss, {"loss": loss, **task.metrics(pred, qy)}
    episode, adapted = _adapted(model, key, task, config, steps, pool)
    pred = adapted(episode.query.x)
    loss = task.loss(pred, episode.query.y)
    return loss, {"loss": loss, **task.metrics(pred, episode.query.y)}


def episode_embedding(
    model: AbstractMetaLearner,
    key: PRNGKeyArray,
    task: AbstractTask,
    config: InnerConfig,
    steps: int,
    pool: str = "train",
) -> tuple[Float[Array, " dim"], Float[Array, "..."]]:
    """The adapted model's `embedding()` for one episode of `pool`, beside the episode's
    ground-truth latent (for linear decodability and module alignment)."""
    episode, adapted = _adapted(model, key, task, config, steps, pool)
    embedding = adapted.embedding()
    if embedding is None:
        raise ValueError(f"{type(model).__name__} has no embedding() to read.")
    return embedding, episode.latent


def episode_losses(
    model: Learner,
    keys: PRNGKeyArray,
    task: AbstractTask,
    config: InnerConfig,
    steps: int,
    pool: str = "train",
    training: bool = False,
) -> tuple[Float[Array, " tasks"], dict[str, Float[Array, " tasks"]]]:
    """`episode_loss` for one task per key, vmapped (the model is shared by all).

    An in-context learner's episodes are mapped one after the other instead (`lax.map`):
    `MetaSeq2Seq`'s loops stop where an episode's data says and pick their batch sizes by
    `lax.switch`, and under `vmap` both would turn into selects that compute everything."""
    loss = functools.partial(
        episode_loss, task=task, config=config, steps=steps, pool=pool, training=training
    )
    if isinstance(model, AbstractInContextLearner):
        return jax.lax.map(functools.partial(loss, model), keys)
    return eqx.filter_vmap(loss, in_axes=(None, 0))(model, keys)


class MeshError(ValueError):
    """The devices asked for cannot split the meta-batch."""


def make_mesh(devices: int | None, meta_batch: int) -> Mesh:
    """A 1-D mesh over `devices` local devices (default: the most that divide `meta_batch`)."""
    available = jax.local_devices()
    if devices is None:
        devices = max(n for n in range(1, len(available) + 1) if meta_batch % n == 0)
    if devices > len(available):
        raise MeshError(
            f"{devices} devices asked for but only {len(available)} are visible; "
            f"pass --run.devices {len(available)} or fewer."
        )
    if meta_batch % devices:
        raise MeshError(
            f"outer.meta_batch ({meta_batch}) must be divisible by the number of devices "
            f"({devices}); change one of them."
        )
    return Mesh(available[:devices], (AXIS,))


class Trainer(eqx.Module):
    """Everything static about an outer step: task, configs, optimizer and device mesh."""

    task: AbstractTask
    inner: InnerConfig = eqx.field(static=True)
    optimizer: optax.GradientTransformation = eqx.field(static=True)
    meta_batch: int = eqx.field(static=True)
    mesh: Mesh = eqx.field(static=True)

    def replicate(self, tree: PyTree) -> PyTree:
        """Place the array leaves of `tree` on every device of the mesh (as the outputs of
        `chunk` are placed), so that later calls hit the same compiled program."""
        sharding = NamedSharding(self.mesh, PartitionSpec())
        arrays, static = eqx.partition(tree, eqx.is_array)
        return eqx.combine(jax.device_put(arrays, sharding), static)

    def grads(
        self, model: Learner, keys: PRNGKeyArray
    ) -> tuple[PyTree, dict[str, Float[Array, ""]]]:
        """Mean query loss gradient over the tasks of `keys`, split over the mesh."""
        params, static = eqx.partition(model, eqx.is_array)
        task_params, task_static = eqx.partition(self.task, eqx.is_array)

        def local(params, task_params, keys):
            # Mark the replicated model as device-varying: every derivative taken inside
            # (inner-loop gradients included) is then this device's own. Left invariant, its
            # cotangents would be summed over devices, mixing the tasks of different devices.
            params = jax.lax.pcast(params, AXIS, to="varying")
            model = eqx.combine(params, static)
            task = eqx.combine(task_params, task_static)

            def mean_loss(model):
                losses, metrics = episode_losses(
                    model, keys, task, self.inner, self.inner.steps, training=True
                )
                return losses.mean(), jtu.tree_map(jnp.mean, metrics)

            grads, metrics = eqx.filter_grad(mean_loss, has_aux=True)(model)
            grads = eqx.filter(grads, eqx.is_array)
            return jax.lax.pmean((grads, metrics), AXIS)

        replicated = PartitionSpec()
        return jax.shard_map(
            local,
            mesh=self.mesh,
            in_specs=(replicated, replicated, PartitionSpec(AXIS)),
            out_specs=replicated,
        )(params, task_params, keys)

    def step(
        self,
        model: Learner,
        opt_state: PyTree,
        key: PRNGKeyArray,
    ) -> tuple[Learner, PyTree, dict[str, Float[Array, ""]]]:
        """One outer step on a fresh meta-batch drawn with `key`."""
        grads, metrics = self.grads(model, jr.split(key, self.meta_batch))
        params = eqx.filter(model, eqx.is_array)
        updates, opt_state = self.optimizer.update(grads, opt_state, params)
        model = eqx.apply_updates(model, updates)
        metrics["grad_norm"] = optax.tree.norm(grads)
        return model, opt_state, metrics

    def chunk(
        self,
        model: Learner,
        opt_state: PyTree,
        key: PRNGKeyArray,
        first_step: Int[Array, ""],
        length: int,
    ) -> tuple[Learner, PyTree, dict[str, Float[Array, " length"]]]:
        """`length` outer steps in one `lax.scan`; step `s` draws its tasks from
        `fold_in(key, s)`, so a run split into chunks differently gives the same numbers."""
        params, static = eqx.partition(model, eqx.is_array)

        def body(carry, step):
            params, opt_state = carry
            model, opt_state, metrics = self.step(
                eqx.combine(params, static), opt_state, jr.fold_in(key, step)
            )
            return (eqx.filter(model, eqx.is_array), opt_state), metrics

        (params, opt_state), metrics = jax.lax.scan(
            body, (params, opt_state), first_step + jnp.arange(length)
        )
        return eqx.combine(params, static), opt_state, metrics


@eqx.filter_jit(donate="all-except-first")
def _train_chunk(static_args, model, opt_state):
    trainer, key, first_step, length = static_args
    return trainer.chunk(model, opt_state, key, first_step, length)


def train_chunk(
    trainer: Trainer,
    model: Learner,
    opt_state: PyTree,
    key: PRNGKeyArray,
    first_step: Int[Array, ""],
    length: int,
) -> tuple[Learner, PyTree, dict[str, Float[Array, " length"]]]:
    """Compiled `Trainer.chunk`; the buffers of `model` and `opt_state` are donated."""
    return _train_chunk((trainer, key, first_step, length), model, opt_state)


def _over_tasks(fn, key: PRNGKeyArray, num_tasks: int, batch: int) -> PyTree:
    """`fn(keys)` for `num_tasks` task keys drawn from `key`, `batch` at a time (memory stays
    bounded whatever `num_tasks` is); the per-task outputs stacked along the first axis."""
    num_batches = -(-num_tasks // batch)
    keys = jr.split(key, num_batches * batch).reshape(num_batches, batch)
    out = jax.lax.map(fn, keys)
    return jtu.tree_map(lambda a: a.reshape(num_batches * batch, *a.shape[2:])[:num_tasks], out)


@eqx.filter_jit
def evaluate_pool(
    model: Learner,
    task: AbstractTask,
    key: PRNGKeyArray,
    pool: str,
    config: InnerConfig,
    steps: int,
    num_tasks: int,
    batch: int,
) -> dict[str, Float[Array, ""]]:
    """Mean query metrics over `num_tasks` tasks of `pool`, adapted `steps` inner steps each,
    `batch` tasks at a time."""
    frozen = jax.lax.stop_gradient(model)

    def one_batch(keys):
        return episode_losses(frozen, keys, task, config, steps, pool)[1]

    return jtu.tree_map(jnp.mean, _over_tasks(one_batch, key, num_tasks, batch))


@eqx.filter_jit
def collect_embeddings(
    model: Learner,
    task: AbstractTask,
    key: PRNGKeyArray,
    pool: str,
    config: InnerConfig,
    steps: int,
    num_tasks: int,
    batch: int,
) -> tuple[Float[Array, "tasks dim"], Float[Array, "tasks ..."]]:
    """Adapted `embedding()`s and ground-truth latents of `num_tasks` tasks of `pool`,
    `batch` tasks at a time."""
    frozen = jax.lax.stop_gradient(model)
    embed = functools.partial(episode_embedding, task=task, config=config, steps=steps, pool=pool)

    def one_batch(keys):
        return eqx.filter_vmap(embed, in_axes=(None, 0))(frozen, keys)

    return _over_tasks(one_batch, key, num_tasks, batch)


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
    frozen = jax.lax.stop_gradient(model)

    def one_batch(idx):
        decoded = frozen.generate(support_x, support_y, query_x[idx], length)
        target = query_y[idx]
        return jnp.all((decoded == target) | (target == 0), axis=-1)

    correct = jax.lax.map(one_batch, index).reshape(-1)[:n]
    return jnp.mean(correct)
