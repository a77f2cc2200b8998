"""Fast and slow learning of an agent's leaves, Madan et al. 2021 (Meta-RIMs, Algorithm 1),
mapped onto batched PPO: the loops, labels and spans below are our reading of the paper's
Section 2.2 and Algorithm 1.

The agent labels its leaves (`zoo.AbstractLearner.labels`): for the RIMs agent the modules'
cells and the policy head are `"fast"`, both attentions, the value head and the encoders
`"slow"`; for the LSTM agent ("meta-LSTM") the core and the policy head are fast. A step is
`inner_updates` PPO iterations of the fast leaves over short spans, then one PPO iteration of
the slow leaves over spans `slow_factor` times longer, each loop with its own Adam; the other
loop's leaves are not touched, and no gradient goes through the other loop's updates
(first-order, alternating). Both loops act in the same environments: episodes run on across
them, so the slow loop's sequences concatenate episodes (the paper's Fig. 2).
"""

import dataclasses

import equinox as eqx
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
from jax.sharding import Mesh
from jaxtyping import Array, PRNGKeyArray

from runs import EvalConfig, PPOConfig, TrainConfig, TrainState
from runs.algorithms import AbstractAlgorithm
from runs.algorithms.ppo import PPO, ppo_optimizer, trained_labels
from runs.rl import concatenate, on_devices, replay
from tasks import AbstractEnvironment
from zoo import AbstractActorCritic, checked_labels

from .config import MetaRIMsConfig

_EPISODES = ("episodes", "return_sum", "success_sum", "length_sum")


class MetaRIMs(AbstractAlgorithm):
    """Two PPO loops over the agent's fast and slow leaves."""

    task_kind = AbstractEnvironment
    model_kind = AbstractActorCritic

    fast: PPO
    """The inner loop: PPO on the `"fast"` leaves over short spans."""
    slow: PPO
    """The outer loop: PPO on the `"slow"` leaves over spans `slow_factor` times longer."""
    inner_updates: int = eqx.field(static=True)
    settings: MetaRIMsConfig = eqx.field(static=True)
    mesh: Mesh = eqx.field(static=True)

    def init(
        self, task: AbstractEnvironment, model: AbstractActorCritic, key: PRNGKeyArray
    ) -> TrainState:
        """Fresh episodes and memories as in PPO; one Adam state per loop."""
        state = self.fast.init(task, model, key)
        slow_state = self.slow.optimizer.init(eqx.filter(model, self.slow.trainable(model)))
        return eqx.tree_at(lambda s: s.opt_state, state, (state.opt_state, slow_state))

    def step(
        self, task: AbstractEnvironment, state: TrainState
    ) -> tuple[TrainState, dict[str, Array]]:
        """`inner_updates` fast iterations, then one slow iteration (on new frames, or on
        the fast iterations' frames replayed under the current parameters: `outer_data`)."""
        reuse = self.settings.outer_data == "reuse"

        def local(env, model, opt_state, actors, key):
            fast_state, slow_state = opt_state
            keys = jr.split(key, self.inner_updates + 1)
            fast_rows, rollouts = [], []
            for i in range(self.inner_updates):
                model, fast_state, actors, row, rollout = self.fast.iteration_rollout(
                    env, model, fast_state, actors, keys[i]
                )
                fast_rows.append(row)
                rollouts.append(rollout)
            if reuse:  # the fast iterations' frames, as the current parameters see them
                replay_key, learn_key, last_key = jr.split(keys[-1], 3)
                rollout, memory = replay(model, concatenate(rollouts), replay_key)
                model, slow_state, slow_row = self.slow.update(
                    model, slow_state, rollout, actors, learn_key, last_key, memory
                )
                slow_row |= {k: jnp.zeros(()) for k in _EPISODES}  # it acted no episode
            else:
                model, slow_state, actors, slow_row = self.slow.iteration(
                    env, model, slow_state, actors, keys[-1]
                )
            rows = [*fast_rows, slow_row]
            metrics = {k: jnp.sum(jnp.stack([row[k] for row in rows])) for k in _EPISODES}
            fast = jtu.tree_map(lambda *xs: jnp.mean(jnp.stack(xs)), *fast_rows)
            for name, row in (("fast", fast), ("slow", slow_row)):
                metrics |= {f"{name}_{k}": v for k, v in row.items() if k not in _EPISODES}
            metrics["loss"] = fast["loss"] + slow_row["loss"]
            metrics["grad_finite"] = jnp.minimum(fast["grad_finite"], slow_row["grad_finite"])
            return model, (fast_state, slow_state), actors, metrics

        state, metrics = on_devices(local, self.mesh, task, state)
        metrics["frames"] = state.step * self.settings.frames_per_step
        return state, metrics

    def summarize(self, metrics):
        """As PPO's: loss means, the finished episodes' statistics, the frames so far."""
        return self.fast.summarize(metrics)

    def evaluate(
        self,
        task: AbstractEnvironment,
        model: AbstractActorCritic,
        key: PRNGKeyArray,
        settings: EvalConfig,
    ) -> dict[str, dict[str, float]]:
        """As PPO's evaluation (the agent acts; nothing is updated)."""
        return self.fast.evaluate(task, model, key, settings)


def make(
    config: TrainConfig, task: AbstractEnvironment, model: AbstractActorCritic, mesh: Mesh
) -> MetaRIMs:
    """The fast and slow loops of a run.

    **Raises:** `ValueError` if the agent labels no leaf `"fast"` or none `"slow"`."""
    del task
    settings = config.algorithm if config.algorithm is not None else MetaRIMsConfig()
    labels = jtu.tree_leaves(
        jtu.tree_map(
            lambda label, leaf: label if eqx.is_inexact_array(leaf) else None,
            checked_labels(model),
            model,
        )
    )
    for label in ("fast", "slow"):
        if label not in labels:
            raise ValueError(
                f"Algorithm 'meta-rims' trains an agent's fast and slow leaves in two loops, but "
                f"{type(model).__name__} labels no leaf {label!r} (its labels: "
                f"{sorted(set(labels))}); use an agent that declares both, or --algorithm ppo."
            )
    fast = PPOConfig(**{f.name: getattr(settings, f.name) for f in dataclasses.fields(PPOConfig)})
    factor = settings.slow_factor
    reused = settings.fast_updates * fast.frames  # `reuse`: the fast iterations' frames
    slow = dataclasses.replace(
        fast,
        frames=reused if settings.outer_data == "reuse" else fast.frames * factor,
        recurrence=fast.recurrence * factor,
        minibatch=fast.minibatch * factor,
    )
    if not settings.fast_value_loss:  # the slow loop alone fits the (slow) critic
        fast = dataclasses.replace(fast, value_coef=0.0)
    sequences = fast.minibatch // fast.recurrence
    if sequences % mesh.size:
        raise ValueError(
            f"algorithm.minibatch / algorithm.recurrence ({sequences} sequences) must be "
            f"divisible by the number of devices ({mesh.size}); change --algorithm.minibatch "
            "or --devices."
        )
    return MetaRIMs(
        fast=PPO(
            settings=fast,
            optimizer=ppo_optimizer(fast, trained_labels(model, ("fast",))),
            mesh=mesh,
            trains=("fast",),
        ),
        slow=PPO(
            settings=slow,
            optimizer=ppo_optimizer(slow, trained_labels(model, ("slow",))),
            mesh=mesh,
            trains=("slow",),
        ),
        inner_updates=settings.fast_updates,
        settings=settings,
        mesh=mesh,
    )


__all__ = ["MetaRIMs", "make"]
