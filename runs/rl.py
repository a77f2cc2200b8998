"""Reinforcement-learning pieces shared by the algorithms that act in environments (PPO and
the algorithms built on it, such as two-timescale variants): the actors kept between
iterations, rollouts of a vmapped batch of environments, generalized advantage estimation with
episode masks, the rollout cut into recurrent sequences for truncated backpropagation through
time, and the map of one iteration over the devices' shares of the environments.

Mechanics as in BabyAI / torch-ac (`babyai/rl/algos/base.py`): the memory is multiplied by
`mask = 1 - done` before every step, and a timeout ends an episode like a termination (no
bootstrap through it).
"""

from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
from jax.sharding import Mesh, PartitionSpec
from jaxtyping import Array, Float, Int, PRNGKeyArray, PyTree, UInt32

from tasks import AbstractEnvironment, autoreset_step
from zoo import AbstractActorCritic, checked_labels

from .algorithms.base import next_step, step_key
from .sharding import AXIS
from .state import TrainState


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
    key: UInt32[Array, "frames envs 2"] | None = None
    """The raw data (`jax.random.key_data`) of the key each environment's step acted with,
    where recorded (`collect(..., record_keys=True)`), for a loss that replays its dropout."""


def masked(memory: PyTree[Array], mask: Float[Array, " envs"]) -> PyTree[Array]:
    """`memory * mask`, the mask broadcast over each leaf's trailing axes."""
    return jtu.tree_map(lambda m: m * mask.reshape(mask.shape + (1,) * (m.ndim - 1)), memory)


def reset(
    model: AbstractActorCritic, memory: PyTree[Array], mask: Float[Array, " envs"]
) -> PyTree[Array]:
    """A batch of memories to act on: each environment's where `mask` is 1, the agent's
    initial memory where it is 0 (`model.reset_memory`, vmapped)."""
    return jax.vmap(model.reset_memory)(memory, mask)


def act(
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


def act_with(
    model: AbstractActorCritic,
    obs: dict[str, Array],
    memory: PyTree[Array],
    keys: UInt32[Array, "envs 2"],
) -> tuple[Float[Array, "envs actions"], Float[Array, " envs"], PyTree[Array]]:
    """As `act`, each environment with the key whose data `keys` holds (as recorded by
    `collect(..., record_keys=True)`): the same dropout as when it acted."""
    features = model.encode_batch(obs)
    typed = jr.wrap_key_data(keys)
    return jax.vmap(lambda f, m, k: model.step(f, m, key=k))(features, memory, typed)


def log_prob(logits: Float[Array, "*b actions"], action: Int[Array, "*b"]) -> Float[Array, "*b"]:
    """The log-probability of `action` under the categorical policy of `logits`."""
    logp = jax.nn.log_softmax(logits)
    return jnp.take_along_axis(logp, action[..., None], axis=-1)[..., 0]


def entropy(logits: Float[Array, "*b actions"]) -> Float[Array, "*b"]:
    """The entropy of the categorical policy of `logits`."""
    logp = jax.nn.log_softmax(logits)
    return -jnp.sum(jnp.exp(logp) * logp, axis=-1)


def collect(
    env: AbstractEnvironment,
    model: AbstractActorCritic,
    actors: Actors,
    key: PRNGKeyArray,
    *,
    frames: int,
    reward_scale: float = 1.0,
    record_keys: bool = False,
) -> tuple[Actors, Rollout, dict[str, Array]]:
    """Act `frames` steps in every environment of `actors` with the agent's policy (episodes
    that end are replaced by fresh ones at once, the memory reset by the mask); the new
    actors, the rollout (rewards times `reward_scale`; with `record_keys`, the key of every
    environment's every step) and the sums of the finished episodes' statistics (`episodes`,
    `return_sum`, `success_sum`, `length_sum`, unscaled)."""
    n = actors.mask.shape[0]
    scale = reward_scale

    def body(actors: Actors, key):
        policy_key, action_key, env_key = jr.split(key, 3)
        logits, value, memory = act(
            model, actors.obs, reset(model, actors.memory, actors.mask), policy_key
        )
        action = jr.categorical(action_key, logits)
        env_state, obs, reward, done, success = jax.vmap(autoreset_step, in_axes=(None, 0, 0, 0))(
            env, actors.env_state, action, jr.split(env_key, n)
        )
        frame = Rollout(
            obs=actors.obs,
            memory=actors.memory,
            mask=actors.mask,
            action=action,
            value=value,
            reward=reward * scale,
            log_prob=log_prob(logits, action),
            key=jr.key_data(jr.split(policy_key, n)) if record_keys else None,
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

    actors, (rollout, finished) = jax.lax.scan(body, actors, jr.split(key, frames))
    return actors, rollout, jtu.tree_map(jnp.sum, finished)


def replay(
    model: AbstractActorCritic, rollout: Rollout, key: PRNGKeyArray | None
) -> tuple[Rollout, PyTree[Array]]:
    """`rollout` as `model` would have recorded it: the agent run again over its observations
    from the memory stored before its first frame (masked at episode starts as when acting),
    with the memories before each step, the values and the log-probabilities of the actions
    taken recomputed (`key` drives dropout as in acting, or the keys the rollout recorded
    where it has them; `None`: none). Returns the new rollout and the memory after its last
    frame (not yet masked). Observations, actions, masks and rewards are the recorded ones."""
    frames = rollout.mask.shape[0]
    if rollout.key is not None:
        keys = rollout.key
    else:
        keys = jr.split(key, frames) if key is not None else None

    def body(memory, inputs):
        obs, mask, action, k = inputs
        if rollout.key is not None:
            logits, value, after = act_with(model, obs, reset(model, memory, mask), k)
        else:
            logits, value, after = act(model, obs, reset(model, memory, mask), k)
        return after, (memory, value, log_prob(logits, action))

    first = jtu.tree_map(lambda m: m[0], rollout.memory)
    last, (memory, value, logp) = jax.lax.scan(
        body, first, (rollout.obs, rollout.mask, rollout.action, keys)
    )
    return eqx.tree_at(
        lambda r: (r.memory, r.value, r.log_prob), rollout, (memory, value, logp)
    ), last


def concatenate(rollouts: list[Rollout]) -> Rollout:
    """Rollouts of consecutive iterations as one, along the frames (time) axis."""
    return jtu.tree_map(lambda *xs: jnp.concatenate(xs, axis=0), *rollouts)


def gae(
    rollout: Rollout,
    last_value: Float[Array, " envs"],
    last_mask: Float[Array, " envs"],
    *,
    gamma: float,
    lam: float,
) -> tuple[Float[Array, "frames envs"], Float[Array, "frames envs"]]:
    """Generalized advantage estimation with episode masks (no bootstrap across an episode's
    end): `(advantages, returns)`, both `[frames, envs]`; `last_value` and `last_mask` are
    those of the observation after the rollout."""
    next_value = jnp.concatenate([rollout.value[1:], last_value[None]])
    next_mask = jnp.concatenate([rollout.mask[1:], last_mask[None]])
    delta = rollout.reward + gamma * next_value * next_mask - rollout.value

    def body(later, inputs):
        delta, mask = inputs
        advantage = delta + gamma * lam * mask * later
        return advantage, advantage

    _, advantage = jax.lax.scan(body, jnp.zeros_like(last_value), (delta, next_mask), reverse=True)
    return advantage, rollout.value + advantage


def sequences(
    rollout: Rollout, advantage: Array, returns: Array, *, recurrence: int
) -> dict[str, PyTree[Array]]:
    """The rollout cut into sequences of `recurrence` frames for truncated backpropagation
    through time: leaves `[sequences, recurrence, ...]` (sequence `i` of environment `e` is
    row `e * frames / recurrence + i`), `memory` the stored memory at each first frame."""
    r = recurrence

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
    if rollout.key is not None:
        data["key"] = rollout.key
    data = jtu.tree_map(cut, data)
    data["memory"] = jtu.tree_map(lambda m: cut(m)[:, 0], rollout.memory)
    return data


def trainable_leaves(model: AbstractActorCritic, trains: tuple[str, ...] | None) -> PyTree:
    """`True` at the floating-point leaves of `model` labelled one of `trains`, and at those
    it shares between timescales (`model.shared_leaves()`); all of them for `None`."""
    if trains is None:
        return jtu.tree_map(eqx.is_inexact_array, model)
    return jtu.tree_map(
        lambda label, shared, leaf: (label in trains or shared) and eqx.is_inexact_array(leaf),
        checked_labels(model),
        model.shared_leaves(),
        model,
    )


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


__all__ = [
    "Actors",
    "Rollout",
    "act",
    "collect",
    "concatenate",
    "entropy",
    "gae",
    "log_prob",
    "masked",
    "on_devices",
    "replay",
    "sequences",
    "trainable_leaves",
]
