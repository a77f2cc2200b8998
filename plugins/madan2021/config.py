"""The config of Madan et al. 2021's fast and slow learning (Meta-RIMs): the `--algorithm.*`
flags of `zoo train ... --algorithm meta-rims`. Imports no JAX."""

import dataclasses

from runs import PPOConfig


@dataclasses.dataclass(frozen=True)
class MetaRIMsConfig(PPOConfig):
    """Madan et al. 2021's fast and slow learning (their Algorithm 1, read onto batched PPO): the
    PPO settings above are those of the inner (fast) loop; the outer (slow) loop acts and
    learns over spans `slow_factor` times longer.

    One training step is `inner_updates` fast iterations (act `frames` steps per environment,
    PPO on the leaves the agent labels `"fast"`, backpropagating through `recurrence` steps),
    then one slow iteration (act `slow_factor * frames` steps, PPO on the leaves labelled
    `"slow"` over sequences of `slow_factor * recurrence` steps in minibatches of
    `slow_factor * minibatch` frames). Each loop has its own Adam; the other loop's leaves stay
    exactly as they are, and no gradient flows through the other loop's updates. Episodes run
    on across the loops, the memory reset at their boundaries."""

    inner_updates: int = 1
    """Fast iterations before each slow one (the inner loop's iterations)."""
    slow_factor: int = 4
    """How many times longer the slow loop's spans are ("four times longer", Section 2.2;
    Fig. 6a varies it)."""

    def __post_init__(self):
        super().__post_init__()
        for name in ("inner_updates", "slow_factor"):
            if getattr(self, name) < 1:
                raise ValueError(f"algorithm.{name} must be >= 1, got {getattr(self, name)}.")

    @property
    def frames_per_step(self) -> int:
        """Environment frames of one step: the fast iterations' and the slow one's."""
        return self.envs * self.frames * (self.inner_updates + self.slow_factor)
