"""A tiny environment and agent for testing reinforcement-learning algorithms quickly.

`Corridor`: cells `0 .. length - 1`, the agent starts at a random cell of the left half, action
1 moves right, 0 left (staying in place at the ends); reaching the last cell ends the episode with
MiniGrid's reward `1 - 0.9 * steps / max_steps`. The observation is the one-hot cell as a
`[1, length, 1]` uint8 image.

`TinyAgent`: a GRU over the flattened image, linear policy and value heads; its memory counts the
steps since the episode started in its last entry (to test memory resets).
"""

import dataclasses
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu

from plugins import ModelSpec, TaskSpec
from tasks import AbstractEnvironment
from zoo import AbstractActorCritic
from zoo.io import IOSpec


class CorridorState(eqx.Module):
    position: jax.Array
    steps: jax.Array


class Corridor(AbstractEnvironment):
    length: int = eqx.field(static=True)

    @property
    def io(self) -> IOSpec:
        return IOSpec.environment(view=(1, self.length, 1), actions=2)

    @property
    def max_steps(self) -> int:
        return 2 * self.length

    def _obs(self, state: CorridorState) -> dict[str, jax.Array]:
        image = jax.nn.one_hot(state.position, self.length, dtype=jnp.uint8)
        return {"image": image.reshape(1, self.length, 1), "direction": jnp.int32(0)}

    def reset(self, key):
        position = jr.randint(key, (), 0, self.length // 2)
        state = CorridorState(position=position, steps=jnp.int32(0))
        return state, self._obs(state)

    def step(self, state, action, key):
        del key
        position = jnp.clip(state.position + 2 * action - 1, 0, self.length - 1)
        steps = state.steps + 1
        terminated = position == self.length - 1
        reward = jnp.where(terminated, 1 - 0.9 * steps / self.max_steps, 0.0)
        truncated = ~terminated & (steps >= self.max_steps)
        state = CorridorState(position=position, steps=steps)
        return state, self._obs(state), reward.astype(jnp.float32), terminated, truncated


class TinyAgent(AbstractActorCritic):
    cell: eqx.nn.GRUCell
    policy: eqx.nn.Linear
    value: eqx.nn.Linear
    hidden: int = eqx.field(static=True)

    def __init__(self, io: IOSpec, hidden: int, *, key):
        k1, k2, k3 = jr.split(key, 3)
        size = math.prod(io.x_shape)
        self.cell = eqx.nn.GRUCell(size, hidden, key=k1)
        self.policy = eqx.nn.Linear(hidden, io.actions or 1, key=k2)
        self.value = eqx.nn.Linear(hidden, "scalar", key=k3)
        self.hidden = hidden

    def initial_memory(self):
        return {"h": jnp.zeros(self.hidden), "count": jnp.zeros(())}

    def __call__(self, obs, memory, *, key=None):
        x = obs["image"].reshape(-1).astype(jnp.float32)
        h = self.cell(x, memory["h"])
        return self.policy(h), self.value(h), {"h": h, "count": memory["count"] + 1}

    def labels(self):
        return jtu.tree_map(lambda _: "meta", self)


@dataclasses.dataclass(frozen=True)
class CorridorConfig:
    length: int = 6


@dataclasses.dataclass(frozen=True)
class TinyAgentConfig:
    hidden: int = 8


def make_corridor(config: CorridorConfig, *, key) -> Corridor:
    del key
    return Corridor(config.length)


def make_agent(config: TinyAgentConfig, *, io: IOSpec, key) -> TinyAgent:
    return TinyAgent(io, config.hidden, key=key)


corridor = TaskSpec("toy-corridor", CorridorConfig, "rl_toys:make_corridor", "a test corridor")
tiny_agent = ModelSpec("toy-agent", TinyAgentConfig, "rl_toys:make_agent", "a test agent")


class FastSlowAgent(AbstractActorCritic):
    """`TinyAgent` whose core and policy head are fast and value head slow (the meta-LSTM
    split)."""

    agent: TinyAgent

    def initial_memory(self):
        return self.agent.initial_memory()

    def __call__(self, obs, memory, *, key=None):
        return self.agent(obs, memory, key=key)

    def labels(self):
        labels = jtu.tree_map(lambda _: "fast", self)
        return eqx.tree_at(
            lambda m: m.agent.value, labels, jtu.tree_map(lambda _: "slow", self.agent.value)
        )


def make_fast_slow_agent(config: TinyAgentConfig, *, io: IOSpec, key) -> FastSlowAgent:
    return FastSlowAgent(TinyAgent(io, config.hidden, key=key))


fast_slow_agent = ModelSpec(
    "toy-fast-slow-agent", TinyAgentConfig, "rl_toys:make_fast_slow_agent", "a test agent"
)


class NoisyAgent(TinyAgent):
    """`TinyAgent` whose logits take noise from the key (dropout's stand-in) and whose initial
    memory is learned (`reset_memory` resets to it)."""

    start: jax.Array

    def __init__(self, io: IOSpec, hidden: int, *, key):
        super().__init__(io, hidden, key=key)
        self.start = jr.normal(jr.fold_in(key, 1), (hidden,))

    def initial_memory(self):
        return {"h": self.start, "count": jnp.zeros(())}

    def reset_memory(self, memory, mask):
        return jtu.tree_map(
            lambda m, start: jnp.where(mask > 0, m, start), memory, self.initial_memory()
        )

    def __call__(self, obs, memory, *, key=None):
        logits, value, memory = super().__call__(obs, memory)
        if key is not None:
            logits = logits + jr.normal(key, logits.shape)
        return logits, value, memory
