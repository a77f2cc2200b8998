"""Recurrent PPO over a vmapped batch of environments, as the BabyAI code base runs it
(`babyai/rl/algos/ppo.py`).

One training step is one iteration, compiled whole: `envs` environments act `frames` steps with
the current policy (episodes that end are replaced by fresh ones at once), advantages come from
GAE over the rollout, and `epochs` passes of minibatch updates follow, each minibatch a set of
`recurrence`-step sequences unrolled from the agent's stored memory at their first frame.

Mechanics as in BabyAI / torch-ac (`babyai/rl/algos/{base,ppo}.py`): the memory is multiplied by
`mask = 1 - done` before every step; a timeout ends an episode like a termination (no bootstrap
through it); GAE with those masks; no advantage normalisation; the clipped policy loss, the
clipped value loss `max((V - R)^2, (V_old + clip(V - V_old, +-eps) - R)^2)` and the entropy bonus
averaged over the frames of a minibatch; one Adam step with global-norm clipping per minibatch.

Where this differs from BabyAI, on purpose (fixed shapes, one compiled call):

- minibatches are drawn from the sequences starting every `recurrence` frames, shuffled per
  epoch; BabyAI also shifts the starts by half a recurrence on every other epoch and refreshes
  the stored memories during an epoch (`ppo.py`), which needs shapes that change;
- on several devices each device acts in its share of the environments and draws its
  minibatches from its own sequences; the gradients of one minibatch are averaged over the
  devices before the step (one global minibatch, made of equal local shares).
"""

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

from tasks import AbstractEnvironment
from zoo import AbstractActorCritic, checked_labels

from .. import rl
from ..config import EvalConfig, TrainConfig
from ..rl import (
    Actors,
    Rollout,
    act,
    collect,
    gae,
    log_prob,
    on_devices,
    reset,
    sequences,
    trainable_leaves,
)
from ..sharding import AXIS, replicate, split
from ..state import TrainState
from .base import AbstractAlgorithm
from .config import PPOConfig


class PPO(AbstractAlgorithm):
    """Recurrent PPO: rollouts of a batch of environments and PPO epochs in one compiled step."""

    task_kind = AbstractEnvironment
    model_kind = AbstractActorCritic

    settings: PPOConfig = eqx.field(static=True)
    """The algorithm's settings."""
    optimizer: optax.GradientTransformation = eqx.field(static=True)
    mesh: Mesh = eqx.field(static=True)
    trains: tuple[str, ...] | None = eqx.field(static=True, default=None)
    """The labels (`zoo.AbstractLearner.labels`) of the leaves this algorithm updates; the
    others are left exactly as they are (no gradient is taken for them). `None`: every
    floating-point leaf."""

    def trainable(self, model: AbstractActorCritic) -> PyTree[bool]:
        """`True` at the leaves of `model` this algorithm updates."""
        return self.trainable_leaves(model, self.trains)

    @staticmethod
    def trainable_leaves(model: AbstractActorCritic, trains: tuple[str, ...] | None) -> PyTree:
        """`True` at the floating-point leaves of `model` labelled one of `trains` (all of
        them for `None`; `runs.rl.trainable_leaves`)."""
        return trainable_leaves(model, trains)

    # ------------------------------------------------------------------ state

    def init(
        self, task: AbstractEnvironment, model: AbstractActorCritic, key: PRNGKeyArray
    ) -> TrainState:
        """Fresh episodes in every environment, the agent's initial memory, a fresh Adam."""
        n = self.settings.envs
        env_state, obs = jax.vmap(task.reset)(jr.split(jr.fold_in(key, 2**31 - 1), n))
        memory = jtu.tree_map(lambda m: jnp.broadcast_to(m, (n, *m.shape)), model.initial_memory())
        actors = Actors(
            env_state=env_state,
            obs=obs,
            memory=memory,
            mask=jnp.ones(n, jnp.float32),
            episode_return=jnp.zeros(n, jnp.float32),
            episode_length=jnp.zeros(n, jnp.int32),
        )
        # One buffer per leaf (an observation may hold a state's own arrays), so that a
        # compiled step can donate every one of them.
        actors = jtu.tree_map(lambda x: jnp.array(x, copy=True), actors)
        opt_state = self.optimizer.init(eqx.filter(model, self.trainable(model)))
        return TrainState(
            step=jnp.zeros((), jnp.int32), model=model, opt_state=opt_state, key=key, extra=actors
        )

    def place(self, state: TrainState) -> TrainState:
        """`state` on the mesh as a step leaves it: the environments (`state.extra`) split over
        the devices, everything else replicated."""
        actors = split(state.extra, self.mesh)
        return eqx.tree_at(lambda s: s.extra, replicate(state, self.mesh), actors)

    # ------------------------------------------------------------------ acting

    def collect(
        self,
        env: AbstractEnvironment,
        model: AbstractActorCritic,
        actors: Actors,
        key: PRNGKeyArray,
    ) -> tuple[Actors, Rollout, dict[str, Array]]:
        """Act `frames` steps in every environment of `actors` (`runs.rl.collect`)."""
        s = self.settings
        return collect(
            env,
            model,
            actors,
            key,
            frames=s.frames,
            reward_scale=s.reward_scale,
            record_keys=s.dropout_keys == "acting",
        )

    def advantages(
        self, rollout: Rollout, last_value: Float[Array, " envs"], last_mask: Float[Array, " envs"]
    ) -> tuple[Float[Array, "frames envs"], Float[Array, "frames envs"]]:
        """GAE with episode masks: `(advantages, returns)` (`runs.rl.gae`)."""
        return gae(rollout, last_value, last_mask, gamma=self.settings.gamma, lam=self.settings.lam)

    # ------------------------------------------------------------------ learning

    def loss(
        self,
        model: AbstractActorCritic,
        batch: dict[str, PyTree[Array]],
        key: PRNGKeyArray,
    ) -> tuple[Float[Array, ""], dict[str, Float[Array, ""]]]:
        """The PPO loss of a minibatch of sequences (leaves `[recurrence, sequences, ...]`,
        `memory` `[sequences, ...]`), averaged over its frames."""
        eps = self.settings.clip_eps

        # Everything that does not read the memory (the encoders), for all frames of the
        # minibatch at once; only the core and heads run inside the recurrence.
        frames = batch["mask"].shape
        flat = jtu.tree_map(lambda x: x.reshape(-1, *x.shape[2:]), batch["obs"])
        features = jtu.tree_map(
            lambda x: x.reshape(*frames, *x.shape[1:]), model.encode_batch(flat)
        )

        # The keys the agent acted with (`dropout_keys="acting"`), or fresh ones.
        if "key" in batch:
            keys = jr.wrap_key_data(batch["key"])
        else:
            keys = jax.vmap(lambda k: jr.split(k, frames[1]))(jr.split(key, frames[0]))
        logits, value, _ = model.unroll(features, batch["memory"], batch["mask"], keys)
        advantage, returns = batch["advantage"], batch["returns"]
        ratio = jnp.exp(log_prob(logits, batch["action"]) - batch["log_prob"])
        policy_loss = -jnp.mean(
            jnp.minimum(ratio * advantage, jnp.clip(ratio, 1 - eps, 1 + eps) * advantage)
        )
        old = batch["value"]
        clipped = old + jnp.clip(value - old, -eps, eps)
        value_loss = jnp.mean(jnp.maximum((value - returns) ** 2, (clipped - returns) ** 2))
        entropy = jnp.mean(rl.entropy(logits))
        loss = (
            policy_loss
            - self.settings.entropy_coef * entropy
            + self.settings.value_coef * value_loss
        )
        return loss, {
            "policy_loss": policy_loss,
            "value_loss": value_loss,
            "entropy": entropy,
            "approx_kl": jnp.mean(batch["log_prob"] - log_prob(logits, batch["action"])),
        }

    def sequences(
        self, rollout: Rollout, advantage: Array, returns: Array
    ) -> dict[str, PyTree[Array]]:
        """The rollout cut into sequences of `recurrence` frames (`runs.rl.sequences`)."""
        return sequences(rollout, advantage, returns, recurrence=self.settings.recurrence)

    def learn(
        self,
        model: AbstractActorCritic,
        opt_state: PyTree,
        data: dict[str, PyTree[Array]],
        key: PRNGKeyArray,
    ) -> tuple[AbstractActorCritic, PyTree, dict[str, Float[Array, ""]]]:
        """`epochs` passes of minibatch steps over this device's sequences; each minibatch's
        gradient is averaged over the devices before the step."""
        count = data["mask"].shape[0]
        per_batch = self.settings.minibatch // self.settings.recurrence // self.mesh.size
        batches = count // per_batch
        trained, frozen = eqx.partition(model, self.trainable(model))

        @functools.partial(jax.value_and_grad, has_aux=True)
        def grad_loss(trained, batch, key):
            return self.loss(eqx.combine(trained, frozen), batch, key)

        def minibatch(carry, inputs):
            trained, opt_state = carry
            index, key = inputs
            batch = {
                k: jtu.tree_map(lambda x: jnp.swapaxes(x[index], 0, 1), v)
                for k, v in data.items()
                if k != "memory"
            }
            batch["memory"] = jtu.tree_map(lambda m: m[index], data["memory"])
            (loss, metrics), grads = grad_loss(trained, batch, key)
            grads = jax.lax.pmean(grads, AXIS)
            updates, opt_state = self.optimizer.update(grads, opt_state, trained)
            trained = eqx.apply_updates(trained, updates)
            metrics["loss"] = loss
            metrics["grad_norm"] = optax.tree.norm(grads)
            metrics["grad_finite"] = jnp.isfinite(metrics["grad_norm"]).astype(jnp.float32)
            return (trained, opt_state), metrics

        def epoch(carry, key):
            order_key, step_keys = jr.split(key)
            order = jr.permutation(order_key, count)[: batches * per_batch]
            inputs = (order.reshape(batches, per_batch), jr.split(step_keys, batches))
            return jax.lax.scan(minibatch, carry, inputs)

        (trained, opt_state), metrics = jax.lax.scan(
            epoch, (trained, opt_state), jr.split(key, self.settings.epochs)
        )
        return eqx.combine(trained, frozen), opt_state, jtu.tree_map(jnp.mean, metrics)

    def iteration(
        self,
        env: AbstractEnvironment,
        model: AbstractActorCritic,
        opt_state: PyTree,
        actors: Actors,
        key: PRNGKeyArray,
    ) -> tuple[AbstractActorCritic, PyTree, Actors, dict[str, Array]]:
        """One iteration on this device's environments (inside the mesh's `shard_map`): act,
        then learn. Metrics: the losses averaged over the devices, the finished episodes'
        statistics summed over them."""
        model, opt_state, actors, metrics, _ = self.iteration_rollout(
            env, model, opt_state, actors, key
        )
        return model, opt_state, actors, metrics

    def iteration_rollout(
        self,
        env: AbstractEnvironment,
        model: AbstractActorCritic,
        opt_state: PyTree,
        actors: Actors,
        key: PRNGKeyArray,
    ) -> tuple[AbstractActorCritic, PyTree, Actors, dict[str, Array], Rollout]:
        """`iteration`, also returning the rollout it acted (e.g. for another loop to learn
        from)."""
        act_key, learn_key, last_key = jr.split(key, 3)
        actors, rollout, finished = self.collect(env, model, actors, act_key)
        model, opt_state, metrics = self.update(
            model, opt_state, rollout, actors, learn_key, last_key
        )
        return model, opt_state, actors, metrics | jax.lax.psum(finished, AXIS), rollout

    def update(
        self,
        model: AbstractActorCritic,
        opt_state: PyTree,
        rollout: Rollout,
        actors: Actors,
        learn_key: PRNGKeyArray,
        last_key: PRNGKeyArray,
        last_memory: PyTree[Array] | None = None,
    ) -> tuple[AbstractActorCritic, PyTree, dict[str, Array]]:
        """Learn from `rollout`, whose next observation is `actors`' (its memory
        `last_memory`, by default `actors.memory`): GAE, sequences, `learn`. The losses
        averaged over the devices."""
        memory = actors.memory if last_memory is None else last_memory
        _, last_value, _ = act(model, actors.obs, reset(model, memory, actors.mask), last_key)
        advantage, returns = self.advantages(rollout, last_value, actors.mask)
        data = self.sequences(rollout, advantage, returns)
        model, opt_state, metrics = self.learn(model, opt_state, data, learn_key)
        return model, opt_state, jax.lax.pmean(metrics, AXIS)

    def step(
        self, task: AbstractEnvironment, state: TrainState
    ) -> tuple[TrainState, dict[str, Array]]:
        """One iteration; every device acts in its share of the environments."""

        def local(env, model, opt_state, actors, key):
            return self.iteration(env, model, opt_state, actors, key)

        state, metrics = on_devices(local, self.mesh, task, state)
        metrics["frames"] = state.step * self.settings.frames_per_step
        return state, metrics

    def summarize(self, metrics: dict[str, np.ndarray]) -> dict[str, float]:
        """Means of the losses over the chunk; the finished episodes' mean return, success
        rate and length; the frames seen so far."""
        summary = {
            k: float(np.mean(v))
            for k, v in metrics.items()
            if k not in ("episodes", "return_sum", "success_sum", "length_sum", "frames")
        }
        episodes = float(np.sum(metrics["episodes"]))
        summary["episodes"] = episodes
        if episodes:
            for name in ("return", "success", "length"):
                summary[name] = float(np.sum(metrics[f"{name}_sum"])) / episodes
        summary["frames"] = int(metrics["frames"][-1])
        return summary

    # ------------------------------------------------------------------ evaluation

    def evaluate(
        self,
        task: AbstractEnvironment,
        model: AbstractActorCritic,
        key: PRNGKeyArray,
        settings: EvalConfig,
    ) -> dict[str, dict[str, float]]:
        """Mean return R, success rate S and length of the first episode in each of
        `settings.tasks` environments (`settings.batch` at a time), acting without dropout,
        sampling actions (or the most likely one, `greedy_eval`): the same episodes at every
        call with the same key."""
        metrics = _evaluate(
            task,
            model,
            key,
            settings.tasks,
            min(settings.batch, settings.tasks),
            self.settings.greedy_eval,
        )
        return {"eval": {k: float(v) for k, v in metrics.items()}}


@eqx.filter_jit
def _evaluate(
    env: AbstractEnvironment,
    model: AbstractActorCritic,
    key: PRNGKeyArray,
    episodes: int,
    batch: int,
    greedy: bool,
) -> dict[str, Float[Array, ""]]:
    model = jtu.tree_map(
        lambda x: jax.lax.stop_gradient(x) if eqx.is_inexact_array(x) else x, model
    )

    def one_batch(key) -> dict[str, Array]:
        reset_key, run_key = jr.split(key)
        env_state, obs = jax.vmap(env.reset)(jr.split(reset_key, batch))
        memory = jtu.tree_map(
            lambda m: jnp.broadcast_to(m, (batch, *m.shape)), model.initial_memory()
        )
        zeros = jnp.zeros(batch, jnp.float32)
        carry = (env_state, obs, memory, jnp.zeros(batch, bool), zeros, zeros, zeros)

        def body(carry, key):
            env_state, obs, memory, over, ret, success, length = carry
            action_key, env_key = jr.split(key)
            logits, _, memory = act(model, obs, memory, None)
            action = jnp.argmax(logits, axis=-1) if greedy else jr.categorical(action_key, logits)
            env_state, obs, reward, terminated, truncated = jax.vmap(env.step)(
                env_state, action, jr.split(env_key, batch)
            )
            running = ~over
            ret = ret + jnp.where(running, reward, 0.0)
            length = length + running
            success = jnp.where(running & terminated & (reward > 0), 1.0, success)
            over = over | terminated | truncated
            return (env_state, obs, memory, over, ret, success, length), None

        carry, _ = jax.lax.scan(body, carry, jr.split(run_key, env.max_steps))
        _, _, _, _, ret, success, length = carry
        return {"return": ret, "success": success, "length": length}

    num_batches = -(-episodes // batch)
    out = jax.lax.map(one_batch, jr.split(key, num_batches))
    return {k: jnp.mean(v.reshape(-1)[:episodes]) for k, v in out.items()}


def ppo_optimizer(
    settings: PPOConfig, labels: PyTree[str | None] = None
) -> optax.GradientTransformation:
    """Adam with global-norm clipping; steps with a non-finite gradient are skipped. With
    `labels` (the labels of the trained leaves, `None` elsewhere: the structure of the
    parameters the optimizer is given) and `settings.slow_lr_factor != 1`, the leaves labelled
    `"slow"` move at `lr * slow_lr_factor`."""
    adam = optax.adam(settings.lr, eps=settings.adam_eps)
    if settings.slow_lr_factor != 1:
        if labels is None:
            raise ValueError("ppo_optimizer: slow_lr_factor needs the leaves' labels.")
        slow = optax.adam(settings.lr * settings.slow_lr_factor, eps=settings.adam_eps)
        rates = jtu.tree_map(lambda label: "slow" if label == "slow" else "rest", labels)
        adam = optax.multi_transform({"slow": slow, "rest": adam}, lambda _: rates)
    return optax.apply_if_finite(
        optax.chain(optax.clip_by_global_norm(settings.max_grad_norm), adam),
        settings.max_nonfinite,
    )


def trained_labels(model: AbstractActorCritic, trains: tuple[str, ...] | None) -> PyTree:
    """The labels of the leaves of `model` a PPO loop training `trains` updates (`None` at
    the others): the structure of the parameters its optimizer is given."""
    keep = PPO.trainable_leaves(model, trains)
    return jtu.tree_map(lambda label, kept: label if kept else None, checked_labels(model), keep)


def make(
    config: TrainConfig, task: AbstractEnvironment, model: AbstractActorCritic, mesh: Mesh
) -> PPO:
    """The PPO algorithm of a run."""
    del task
    settings = config.algorithm if config.algorithm is not None else PPOConfig()
    sequences = settings.minibatch // settings.recurrence
    if sequences % mesh.size:
        raise ValueError(
            f"algorithm.minibatch / algorithm.recurrence ({sequences} sequences) must be "
            f"divisible by the number of devices ({mesh.size}); change --algorithm.minibatch "
            "or --devices."
        )
    labels = trained_labels(model, None) if settings.slow_lr_factor != 1 else None
    return PPO(settings=settings, optimizer=ppo_optimizer(settings, labels), mesh=mesh)


__all__ = ["PPO", "Actors", "Rollout", "make", "on_devices", "ppo_optimizer", "trained_labels"]
