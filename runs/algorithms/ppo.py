"""Recurrent PPO over a vmapped batch of environments, as the BabyAI code base runs it (the base
of Madan et al. 2021; `shared/reference/meta_rims.md` B3).

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
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
import numpy as np
import optax
from jax.sharding import Mesh, PartitionSpec
from jaxtyping import Array, Float, Int, PRNGKeyArray, PyTree

from tasks import AbstractEnvironment, autoreset_step
from zoo import AbstractActorCritic, checked_labels

from ..config import EvalConfig, TrainConfig
from ..sharding import AXIS
from ..state import TrainState
from .base import AbstractAlgorithm, next_step, step_key
from .config import PPOConfig


class Actors(eqx.Module):
    """The acting side of a run, kept between iterations (`TrainState.extra`): one entry per
    environment along the first axis of every leaf, split over the devices."""

    env_state: PyTree[Array]
    """The environments' states."""
    obs: dict[str, Array]
    """The observations the agent acts on next."""
    memory: PyTree[Array]
    """The agent's memory after the last step (not yet masked)."""
    mask: Float[Array, " envs"]
    """`1 - done` of the last step: 0 where the next observation starts an episode."""
    episode_return: Float[Array, " envs"]
    """Unscaled return of the running episodes so far."""
    episode_length: Int[Array, " envs"]
    """Steps of the running episodes so far."""


class Rollout(eqx.Module):
    """What one iteration's acting recorded, time-major: every leaf `[frames, envs, ...]`."""

    obs: dict[str, Array]
    memory: PyTree[Array]
    """The memory before each step, not yet masked (masked by `mask` when used)."""
    mask: Float[Array, "frames envs"]
    action: Int[Array, "frames envs"]
    value: Float[Array, "frames envs"]
    reward: Float[Array, "frames envs"]
    """Scaled rewards (`reward_scale`)."""
    log_prob: Float[Array, "frames envs"]


def _masked(memory: PyTree[Array], mask: Float[Array, " envs"]) -> PyTree[Array]:
    """`memory * mask`, the mask broadcast over each leaf's trailing axes."""
    return jtu.tree_map(lambda m: m * mask.reshape(mask.shape + (1,) * (m.ndim - 1)), memory)


def _act(
    model: AbstractActorCritic,
    obs: dict[str, Array],
    memory: PyTree[Array],
    key: PRNGKeyArray | None,
) -> tuple[Float[Array, "envs actions"], Float[Array, " envs"], PyTree[Array]]:
    """The agent on a batch of environments (`key=None`: no dropout)."""
    features = model.encode_batch(obs)
    if key is None:
        return jax.vmap(lambda f, m: model.step(f, m))(features, memory)
    keys = jr.split(key, jtu.tree_leaves(obs)[0].shape[0])
    return jax.vmap(lambda f, m, k: model.step(f, m, key=k))(features, memory, keys)


def _log_prob(logits: Float[Array, "*b actions"], action: Int[Array, "*b"]) -> Float[Array, "*b"]:
    logp = jax.nn.log_softmax(logits)
    return jnp.take_along_axis(logp, action[..., None], axis=-1)[..., 0]


def _entropy(logits: Float[Array, "*b actions"]) -> Float[Array, "*b"]:
    logp = jax.nn.log_softmax(logits)
    return -jnp.sum(jnp.exp(logp) * logp, axis=-1)


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
        them for `None`)."""
        if trains is None:
            return jtu.tree_map(eqx.is_inexact_array, model)
        return jtu.tree_map(
            lambda label, leaf: label in trains and eqx.is_inexact_array(leaf),
            checked_labels(model),
            model,
        )

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

    # ------------------------------------------------------------------ acting

    def collect(
        self,
        env: AbstractEnvironment,
        model: AbstractActorCritic,
        actors: Actors,
        key: PRNGKeyArray,
    ) -> tuple[Actors, Rollout, dict[str, Array]]:
        """Act `frames` steps in every environment of `actors`; the rollout and the sums of
        the finished episodes' statistics."""
        n = actors.mask.shape[0]
        scale = self.settings.reward_scale

        def body(actors: Actors, key):
            policy_key, action_key, env_key = jr.split(key, 3)
            logits, value, memory = _act(
                model, actors.obs, _masked(actors.memory, actors.mask), policy_key
            )
            action = jr.categorical(action_key, logits)
            env_state, obs, reward, done, success = jax.vmap(
                autoreset_step, in_axes=(None, 0, 0, 0)
            )(env, actors.env_state, action, jr.split(env_key, n))
            frame = Rollout(
                obs=actors.obs,
                memory=actors.memory,
                mask=actors.mask,
                action=action,
                value=value,
                reward=reward * scale,
                log_prob=_log_prob(logits, action),
            )
            ret = actors.episode_return + reward
            length = actors.episode_length + 1
            finished = {
                "episodes": done.astype(jnp.float32),
                "return_sum": jnp.where(done, ret, 0.0),
                "success_sum": (done & success).astype(jnp.float32),
                "length_sum": jnp.where(done, length, 0).astype(jnp.float32),
            }
            actors = Actors(
                env_state=env_state,
                obs=obs,
                memory=memory,
                mask=1.0 - done.astype(jnp.float32),
                episode_return=jnp.where(done, 0.0, ret),
                episode_length=jnp.where(done, 0, length),
            )
            return actors, (frame, jtu.tree_map(jnp.sum, finished))

        actors, (rollout, finished) = jax.lax.scan(
            body, actors, jr.split(key, self.settings.frames)
        )
        return actors, rollout, jtu.tree_map(jnp.sum, finished)

    def advantages(
        self, rollout: Rollout, last_value: Float[Array, " envs"], last_mask: Float[Array, " envs"]
    ) -> tuple[Float[Array, "frames envs"], Float[Array, "frames envs"]]:
        """GAE with episode masks: `(advantages, returns)`, both `[frames, envs]`."""
        gamma, lam = self.settings.gamma, self.settings.lam
        next_value = jnp.concatenate([rollout.value[1:], last_value[None]])
        next_mask = jnp.concatenate([rollout.mask[1:], last_mask[None]])
        delta = rollout.reward + gamma * next_value * next_mask - rollout.value

        def body(later, inputs):
            delta, mask = inputs
            advantage = delta + gamma * lam * mask * later
            return advantage, advantage

        _, advantage = jax.lax.scan(
            body, jnp.zeros_like(last_value), (delta, next_mask), reverse=True
        )
        return advantage, rollout.value + advantage

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

        def body(memory, inputs):
            features, mask, key = inputs
            memory = _masked(memory, mask)
            keys = jr.split(key, mask.shape[0])
            logits, value, memory = jax.vmap(lambda f, m, k: model.step(f, m, key=k))(
                features, memory, keys
            )
            return memory, (logits, value)

        keys = jr.split(key, batch["mask"].shape[0])
        _, (logits, value) = jax.lax.scan(body, batch["memory"], (features, batch["mask"], keys))
        advantage, returns = batch["advantage"], batch["returns"]
        ratio = jnp.exp(_log_prob(logits, batch["action"]) - batch["log_prob"])
        policy_loss = -jnp.mean(
            jnp.minimum(ratio * advantage, jnp.clip(ratio, 1 - eps, 1 + eps) * advantage)
        )
        old = batch["value"]
        clipped = old + jnp.clip(value - old, -eps, eps)
        value_loss = jnp.mean(jnp.maximum((value - returns) ** 2, (clipped - returns) ** 2))
        entropy = jnp.mean(_entropy(logits))
        loss = (
            policy_loss
            - self.settings.entropy_coef * entropy
            + self.settings.value_coef * value_loss
        )
        return loss, {
            "policy_loss": policy_loss,
            "value_loss": value_loss,
            "entropy": entropy,
            "approx_kl": jnp.mean(batch["log_prob"] - _log_prob(logits, batch["action"])),
        }

    def sequences(
        self, rollout: Rollout, advantage: Array, returns: Array
    ) -> dict[str, PyTree[Array]]:
        """The rollout cut into sequences of `recurrence` frames: leaves
        `[sequences, recurrence, ...]`, `memory` the stored memory at each first frame."""
        r = self.settings.recurrence

        def cut(x):  # [frames, envs, ...] -> [envs * frames / r, r, ...]
            x = jnp.swapaxes(x, 0, 1)
            return x.reshape(x.shape[0] * (x.shape[1] // r), r, *x.shape[2:])

        data = {
            "obs": rollout.obs,
            "mask": rollout.mask,
            "action": rollout.action,
            "value": rollout.value,
            "log_prob": rollout.log_prob,
            "advantage": advantage,
            "returns": returns,
        }
        data = jtu.tree_map(cut, data)
        data["memory"] = jtu.tree_map(lambda m: cut(m)[:, 0], rollout.memory)
        return data

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
        act_key, learn_key, last_key = jr.split(key, 3)
        actors, rollout, finished = self.collect(env, model, actors, act_key)
        _, last_value, _ = _act(model, actors.obs, _masked(actors.memory, actors.mask), last_key)
        advantage, returns = self.advantages(rollout, last_value, actors.mask)
        data = self.sequences(rollout, advantage, returns)
        model, opt_state, metrics = self.learn(model, opt_state, data, learn_key)
        metrics = jax.lax.pmean(metrics, AXIS)
        return model, opt_state, actors, metrics | jax.lax.psum(finished, AXIS)

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
            logits, _, memory = _act(model, obs, memory, None)
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


def on_devices(
    fn: Callable[..., tuple[PyTree, PyTree, Actors, dict[str, Array]]],
    mesh: Mesh,
    env: AbstractEnvironment,
    state: TrainState,
) -> tuple[TrainState, dict[str, Array]]:
    """`fn(env, model, opt_state, actors, key) -> (model, opt_state, actors, metrics)` on every
    device of `mesh`, each with its share of the environments (`state.extra`) and its own key
    (the step's key folded with the device's index), then `state` one step on.

    `fn` must keep the model and optimizer state equal on every device (average gradients
    over the devices) and return metrics already reduced over them."""
    model_params, model_static = eqx.partition(state.model, eqx.is_array)
    env_params, env_static = eqx.partition(env, eqx.is_array)

    def local(model_params, opt_state, env_params, actors, key):
        model = eqx.combine(model_params, model_static)
        env = eqx.combine(env_params, env_static)
        key = jr.fold_in(key, jax.lax.axis_index(AXIS))
        model, opt_state, actors, metrics = fn(env, model, opt_state, actors, key)
        return eqx.filter(model, eqx.is_array), opt_state, actors, metrics

    replicated, split = PartitionSpec(), PartitionSpec(AXIS)
    model_params, opt_state, actors, metrics = jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(replicated, replicated, replicated, split, replicated),
        out_specs=(replicated, replicated, split, replicated),
        check_vma=False,  # the model and optimizer state stay equal on every device
    )(model_params, state.opt_state, env_params, state.extra, step_key(state))
    state = next_step(state, eqx.combine(model_params, model_static), opt_state)
    return eqx.tree_at(lambda s: s.extra, state, actors), metrics


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
