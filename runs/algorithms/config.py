"""Configs of the built-in algorithms: frozen dataclasses whose fields are the
`--algorithm.*` flags of `zoo train`. Imports no JAX.

Each config declares in `CHANGEABLE` the settings (dotted paths within it) that `zoo train
--resume --allow-changes` may change: optimizer scalars, which leave the shapes of the training
state alone."""

import dataclasses
from typing import ClassVar, Literal

from ..config import InnerConfig, OuterConfig, check_finite

_OUTER_CHANGEABLE = frozenset(
    f"outer.{k}" for k in ("lr", "lr_end", "weight_decay", "clip", "max_nonfinite")
)


@dataclasses.dataclass(frozen=True)
class BilevelConfig:
    """Bilevel meta-learning: the inner loop on each task's support set
    (`--algorithm.inner.*`) and the outer optimizer of the learned leaves
    (`--algorithm.outer.*`)."""

    inner: InnerConfig = InnerConfig()
    """The inner loop: optax AdamW steps on the fast leaves with the support loss."""
    outer: OuterConfig = OuterConfig()
    """The outer loop: optax AdamW on the meta leaves with the query loss."""

    CHANGEABLE: ClassVar[frozenset[str]] = _OUTER_CHANGEABLE | frozenset(
        f"inner.{k}" for k in ("lr", "weight_decay", "eps_root")
    )


@dataclasses.dataclass(frozen=True)
class InContextConfig:
    """In-context meta-learning: no inner loop; the outer optimizer is set by
    `--algorithm.outer.*`."""

    outer: OuterConfig = OuterConfig()
    """The optimizer of the model's leaves, with the query loss."""

    CHANGEABLE: ClassVar[frozenset[str]] = _OUTER_CHANGEABLE


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """Recurrent PPO (Schulman et al. 2017) as the BabyAI code base runs it: every default
    below is BabyAI's `train_rl.py` / `arguments.py` setting.

    One training step is one iteration: `envs` environments each act `frames` steps, then
    `epochs` passes of minibatch updates over the rollout, truncating backpropagation through
    time to `recurrence` steps from the stored memory of each sequence's first frame. The
    optimizer is set here too."""

    CHANGEABLE: ClassVar[frozenset[str]] = frozenset(
        (
            "lr",
            "adam_eps",
            "max_grad_norm",
            "clip_eps",
            "value_coef",
            "entropy_coef",
            "max_nonfinite",
        )
    )

    envs: int = 64
    """Environments acting in parallel (BabyAI `--procs`); split evenly over the devices."""
    frames: int = 40
    """Steps each environment acts per iteration (BabyAI `--frames-per-proc`)."""
    recurrence: int = 20
    """Steps of backpropagation through time per sequence (BabyAI `--recurrence`); divides
    `frames`."""
    minibatch: int = 1280
    """Frames per minibatch (BabyAI `--batch-size`): `minibatch / recurrence` sequences."""
    epochs: int = 4
    """Passes over each rollout (BabyAI `--ppo-epochs`)."""
    lr: float = 1e-4
    """Adam learning rate (BabyAI `--lr`)."""
    adam_eps: float = 1e-5
    """Adam epsilon (BabyAI `--optim-eps`)."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clipping (BabyAI `--max-grad-norm`)."""
    gamma: float = 0.99
    """Discount (BabyAI `--discount`)."""
    lam: float = 0.99
    """GAE lambda (BabyAI `--gae-lambda`)."""
    clip_eps: float = 0.2
    """Clipping of the policy ratio and of the value update (BabyAI `--clip-eps`)."""
    value_coef: float = 0.5
    """Weight of the value loss (BabyAI `--value-loss-coef`)."""
    entropy_coef: float = 0.01
    """Weight of the entropy bonus (BabyAI `--entropy-coef`)."""
    reward_scale: float = 20.0
    """Rewards are multiplied by this for training (BabyAI `--reward-scale`); logged returns
    are unscaled."""
    slow_lr_factor: float = 1.0
    """The learning rate of the leaves the agent labels `"slow"` is `lr` times this (e.g. 0.25
    with the RIMs agent's `--model.split attention`: its attention learns 4x slower)."""
    greedy_eval: bool = False
    """Evaluate with the most likely action instead of sampling from the policy."""
    max_nonfinite: int = 10
    """Updates with non-finite gradients are skipped; this many in a row stop the run."""
    dropout_keys: Literal["fresh", "acting"] = "fresh"
    """The dropout of an agent that has some (the RIMs agent), in the loss: "fresh" keys, so
    other masks than those the agent acted with (what BabyAI's PPO does: its model stays in
    train mode while acting and in the loss), or "acting": the keys it acted with, recorded
    in the rollout, so that the loss recomputes the acting policy exactly and the ratio of
    the first epoch is 1. No effect on an agent without dropout."""

    def __post_init__(self):
        check_finite(self, "algorithm")
        if self.dropout_keys not in ("fresh", "acting"):
            raise ValueError(
                f"algorithm.dropout_keys must be 'fresh' or 'acting', got {self.dropout_keys!r}."
            )
        for name in ("lr", "adam_eps", "reward_scale", "slow_lr_factor"):
            if getattr(self, name) <= 0:
                raise ValueError(f"algorithm.{name} must be > 0, got {getattr(self, name)}.")
        for name in ("max_grad_norm", "clip_eps", "value_coef", "entropy_coef"):
            if getattr(self, name) < 0:
                raise ValueError(f"algorithm.{name} must be >= 0, got {getattr(self, name)}.")
        if not (0 <= self.gamma <= 1 and 0 <= self.lam <= 1):
            raise ValueError(
                f"algorithm.gamma and algorithm.lam must be in [0, 1], got {self.gamma} and "
                f"{self.lam}."
            )
        for name in ("envs", "frames", "recurrence", "minibatch", "epochs", "max_nonfinite"):
            if getattr(self, name) < 1:
                raise ValueError(f"algorithm.{name} must be >= 1, got {getattr(self, name)}.")
        if self.frames % self.recurrence:
            raise ValueError(
                f"algorithm.frames ({self.frames}) must be a multiple of algorithm.recurrence "
                f"({self.recurrence}); e.g. --algorithm.frames {self.recurrence * 2}."
            )
        if self.minibatch % self.recurrence:
            raise ValueError(
                f"algorithm.minibatch ({self.minibatch}) must be a multiple of "
                f"algorithm.recurrence ({self.recurrence}): it is made of whole sequences."
            )
        sequences = self.envs * self.frames // self.recurrence
        if sequences % (self.minibatch // self.recurrence):
            raise ValueError(
                f"The rollout's {sequences} sequences (envs x frames / recurrence) must split "
                f"into whole minibatches of {self.minibatch // self.recurrence} sequences "
                "(minibatch / recurrence); change algorithm.minibatch or algorithm.envs."
            )
        for name in (
            "lr",
            "adam_eps",
            "max_grad_norm",
            "clip_eps",
            "reward_scale",
            "slow_lr_factor",
        ):
            value = getattr(self, name)
            if not value > 0 or value != value or value == float("inf"):
                raise ValueError(f"algorithm.{name} must be a finite number > 0, got {value}.")
        for name in ("gamma", "lam"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"algorithm.{name} must be in [0, 1], got {getattr(self, name)}.")
        for name in ("value_coef", "entropy_coef"):
            if not 0 <= getattr(self, name) < float("inf"):
                raise ValueError(
                    f"algorithm.{name} must be a finite number >= 0, got {getattr(self, name)}."
                )

    @property
    def updates_per_step(self) -> int:
        """Policy updates (PPO iterations that train the policy) in one step: 1."""
        return 1

    @property
    def frames_per_step(self) -> int:
        """Environment frames of one iteration."""
        return self.envs * self.frames
