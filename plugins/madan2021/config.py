"""The config of Madan et al. 2021's fast and slow learning (Meta-RIMs): the `--algorithm.*`
flags of `zoo train ... --algorithm meta-rims`. Imports no JAX."""

import dataclasses
from typing import ClassVar, Literal

from runs import PPOConfig


@dataclasses.dataclass(frozen=True)
class MetaRIMsConfig(PPOConfig):
    """Madan et al. 2021's fast and slow learning (their Algorithm 1, read onto batched PPO): the
    PPO settings above are those of the inner (fast) loop; the outer (slow) loop learns over
    spans `slow_factor` times longer.

    One training step is `inner_updates` fast iterations (act `frames` steps per environment,
    PPO on the leaves the agent labels `"fast"`, backpropagating through `recurrence` steps),
    then one slow iteration: PPO on the leaves labelled `"slow"` over sequences of
    `slow_factor * recurrence` steps in minibatches of `slow_factor * minibatch` frames. Each
    loop has its own Adam; the other loop's leaves stay exactly as they are, and no gradient
    flows through the other loop's updates. Episodes run on across the loops, the memory reset
    at their boundaries.

    Where the slow loop's data come from is `outer_data`; the paper can be read both ways
    (Algorithm 1, line 8, "sample trajectories"; Section 2.2, the concatenated sequence "is
    divided into shorter and (relatively) longer horizons"):

    - `"fresh"`: the slow iteration acts `slow_factor * frames` new steps per environment
      (counted in the frames), with the parameters the fast loop left;
    - `"reuse"` (the default): the slow iteration learns on the fast iterations' own frames,
      concatenated (`inner_updates * frames` per environment; no new frame is acted), with the
      memories, log-probabilities, values and advantages recomputed under the current
      parameters first.

    `reuse` is the default because it learns faster on the paper's axis, environment frames
    (DoorKey-5x5, 3 seeds, 1,024,000 frames: success 0.889 against `fresh`'s 0.568; the
    zoo's results page, "the slow loop's data"). Runs saved before `outer_data` existed were
    trained `fresh` and are read so (`LEGACY_DEFAULTS`).
    """

    LEGACY_DEFAULTS: ClassVar[dict[str, str]] = {"outer_data": "fresh"}
    """What a saved config without these fields ran with (runs saved before 0.2.0)."""

    outer_data: Literal["fresh", "reuse"] = "reuse"
    """Where the slow loop's frames come from: the fast iterations' (`reuse`) or acted anew
    (`fresh`); see above."""
    inner_updates: int | None = None
    """Fast iterations before each slow one (default: 1 with `fresh`, `slow_factor` with
    `reuse`, so that the slow loop's span is the fast loop's `slow_factor` rollouts)."""
    slow_factor: int = 4
    """How many times longer the slow loop's spans are ("four times longer", Section 2.2;
    Fig. 6a varies it)."""
    fast_value_loss: bool = True
    """Whether the fast loop's loss has the value term. The critic head is slow, so in the
    fast loop that term trains only the shared fast leaves (the module cells) to fit the
    frozen critic; `False` leaves it to the slow loop (the fast loss is the policy loss and
    the entropy bonus)."""

    def __post_init__(self):
        super().__post_init__()
        for name in ("inner_updates", "slow_factor"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"algorithm.{name} must be >= 1, got {value}.")
        if self.outer_data not in ("fresh", "reuse"):
            raise ValueError(
                f"algorithm.outer_data must be 'fresh' or 'reuse', got {self.outer_data!r}."
            )
        if self.outer_data == "reuse":
            span, sequence = self.fast_updates * self.frames, self.slow_factor * self.recurrence
            if span % sequence:
                raise ValueError(
                    f"--algorithm.outer-data reuse cuts the fast iterations' {span} frames per "
                    f"environment (inner_updates x frames) into slow sequences of {sequence} "
                    "(slow_factor x recurrence), which must divide them: change "
                    "--algorithm.inner-updates, --algorithm.frames or --algorithm.slow-factor."
                )

    @property
    def fast_updates(self) -> int:
        """Fast iterations per step: `inner_updates`, or its default for `outer_data`."""
        if self.inner_updates is not None:
            return self.inner_updates
        return self.slow_factor if self.outer_data == "reuse" else 1

    @property
    def updates_per_step(self) -> int:
        """Policy updates in one step: the fast iterations (the policy head is fast)."""
        return self.fast_updates

    @property
    def frames_per_step(self) -> int:
        """Environment frames acted in one step: the fast iterations' and, with `fresh`, the
        slow one's."""
        slow = self.slow_factor if self.outer_data == "fresh" else 0
        return self.envs * self.frames * (self.fast_updates + slow)
