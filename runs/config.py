"""Configuration of a meta-training run: every knob is a field of a frozen dataclass.

The task and model configs are the plugins' own dataclasses; `runs.cli` builds the `zoo train`
command from them at run time. Nothing here imports JAX.
"""

import dataclasses
import math
import types
import typing
from typing import Any, Literal

GradientMode = Literal["second-order", "first-order", "equilibrium"]
Minibatches = Literal["random", "with-replacement", "sequential"]


def check_finite(config: Any, section: str) -> None:
    """Refuse a NaN or infinite float field of `config` (NaN passes every `<` and `>` test, so
    it would slip past the range checks and, e.g., silently turn clipping off)."""
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if isinstance(value, float) and not math.isfinite(value):
            flag = f"--{section}.{field.name.replace('_', '-')}"
            raise ValueError(
                f"{section}.{field.name} must be a finite number, got {value}; pass {flag} with a number."
            )


@dataclasses.dataclass(frozen=True)
class InnerConfig:
    """The inner loop: optax AdamW steps on the fast leaves with the support loss."""

    steps: int = 10
    """Inner optimizer steps per task during training."""
    lr: float = 0.3
    """Inner learning rate."""
    weight_decay: float = 1e-4
    """Inner AdamW weight decay."""
    eps_root: float = 1.1920929e-07
    """Added inside Adam's square root (optax's `eps_root`): float32 machine epsilon, as the
    authors' optimizer factory sets it for every learner. With 0, second-order gradients
    through an Adam step are NaN wherever a fast leaf's gradient is exactly zero (a ReLU unit
    dead on the support set, as happens in MAML and ANIL)."""
    mode: GradientMode = "second-order"
    """How the outer gradient treats the inner loop: backprop through it (`second-order`), drop
    its second-order terms (`first-order`), or treat the adapted fast leaves as constants
    (`equilibrium`: the stop-gradient mode, which differentiates only the query loss at the
    adapted leaves)."""
    batch: int = 0
    """Support examples per inner step, drawn as `minibatches` says; 0 uses the whole support
    set at every step."""
    minibatches: Minibatches = "random"
    """How the inner steps draw their `batch` examples: `random`, a fresh random subset of the
    support set at every step (without replacement); `with-replacement`, `batch` examples drawn
    independently at every step (the authors' ANIL, and our ANIL presets); `sequential`, consecutive,
    non-overlapping slices in order (step `i` takes examples `i * batch` to `(i + 1) * batch -
    1`), so the support must hold `steps * batch` examples. With a task that draws i.i.d.
    support inputs and a support of `steps * batch` examples, `sequential` gives every inner
    step fresh inputs: the infinite-data regime of a teacher-student task (e.g. 256
    fresh inputs at each of 300 inner steps)."""
    eval_steps: int | None = None
    """Inner steps at evaluation (default: as in training)."""
    remat: bool = False
    """Rematerialize each inner step in the backward pass (less memory, more compute)."""
    unroll: int = 1
    """Inner steps per iteration of the compiled loop (`lax.scan`'s `unroll`): more compiles
    longer and is sometimes faster on CPU."""

    def __post_init__(self):
        check_finite(self, "algorithm.inner")
        if self.weight_decay < 0:
            raise ValueError(f"algorithm.inner.weight_decay must be >= 0, got {self.weight_decay}.")
        if self.steps < 0:
            raise ValueError(
                f"algorithm.inner.steps must be >= 0, got {self.steps}; pass --algorithm.inner.steps 10."
            )
        if self.eval_steps is not None and self.eval_steps < 0:
            raise ValueError(f"algorithm.inner.eval_steps must be >= 0, got {self.eval_steps}.")
        if self.lr <= 0:
            raise ValueError(
                f"algorithm.inner.lr must be > 0, got {self.lr}; pass e.g. --algorithm.inner.lr 0.3."
            )
        if self.unroll < 1:
            raise ValueError(f"algorithm.inner.unroll must be >= 1, got {self.unroll}.")
        if self.eps_root < 0:
            raise ValueError(f"algorithm.inner.eps_root must be >= 0, got {self.eps_root}.")
        if self.batch < 0:
            raise ValueError(
                f"algorithm.inner.batch must be >= 0 (0 = the whole support set), got {self.batch}."
            )
        if self.minibatches not in ("random", "with-replacement", "sequential"):
            raise ValueError(
                f"algorithm.inner.minibatches={self.minibatches!r} is unknown; use 'random', "
                "'with-replacement' or 'sequential'."
            )
        if self.minibatches == "sequential" and not self.batch:
            raise ValueError(
                "algorithm.inner.minibatches='sequential' slices the support set into minibatches of "
                "algorithm.inner.batch examples; set --algorithm.inner.batch (e.g. 256)."
            )


@dataclasses.dataclass(frozen=True)
class OuterConfig:
    """The outer loop: optax AdamW on the meta leaves with the query loss."""

    lr: float = 1e-3
    """Peak outer learning rate."""
    weight_decay: float = 1e-2
    """Outer AdamW weight decay."""
    clip: float = 1.0
    """Global gradient-norm clipping (0 disables it)."""
    schedule: Literal["constant", "cosine", "piecewise"] = "constant"
    """Learning-rate schedule: constant, cosine decay to `lr_end` over the run, or piecewise
    constant: multiplied by `decay_factor` at each fraction `decay_at` of the run (e.g.
    divided by 10 halfway)."""
    warmup: int = 0
    """Linear warm-up steps."""
    lr_end: float = 1e-6
    """Final learning rate of the cosine schedule."""
    decay_at: tuple[float, ...] = (0.5,)
    """Fractions of the run at which the piecewise schedule multiplies the rate."""
    decay_factor: float = 0.1
    """What the piecewise schedule multiplies the rate by at each of `decay_at`."""
    meta_batch: int = 128
    """Tasks per outer step (split evenly over the devices)."""
    max_nonfinite: int = 10
    """Outer steps with non-finite gradients are skipped; this many in a row stop the run."""

    def __post_init__(self):
        check_finite(self, "algorithm.outer")
        if self.weight_decay < 0:
            raise ValueError(f"algorithm.outer.weight_decay must be >= 0, got {self.weight_decay}.")
        if self.lr_end < 0:
            raise ValueError(f"algorithm.outer.lr_end must be >= 0, got {self.lr_end}.")
        if self.lr <= 0:
            raise ValueError(
                f"algorithm.outer.lr must be > 0, got {self.lr}; pass e.g. --algorithm.outer.lr 1e-3."
            )
        if self.meta_batch < 1:
            raise ValueError(f"algorithm.outer.meta_batch must be >= 1, got {self.meta_batch}.")
        if self.clip < 0:
            raise ValueError(
                f"algorithm.outer.clip must be >= 0 (0 disables clipping), got {self.clip}."
            )
        if self.warmup < 0:
            raise ValueError(f"algorithm.outer.warmup must be >= 0, got {self.warmup}.")
        if not all(0 < f < 1 for f in self.decay_at) or self.decay_factor <= 0:
            raise ValueError(
                f"algorithm.outer.decay_at must be fractions of the run in (0, 1) and algorithm.outer.decay_factor "
                f"> 0; got {self.decay_at} and {self.decay_factor}."
            )


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """Evaluation on every pool of the task other than `train`."""

    every: int = 1000
    """Evaluate every this many outer steps (and at the end); 0: only at the end."""
    tasks: int = 256
    """Tasks per pool."""
    batch: int = 64
    """Tasks adapted at once (bounds evaluation memory)."""
    test_episodes: bool = True
    """Also score the task's fixed test episodes, if it has any (exact match of generated
    outputs, e.g. the SCAN test sets), as the `test_episodes` pool."""
    query_batch: int = 512
    """Queries of a test episode decoded at once (bounds evaluation memory)."""
    pools: tuple[str, ...] = ()
    """Evaluate only these pools of the task (default: every pool other than `train`)."""

    def __post_init__(self):
        if self.every < 0 or self.tasks < 1 or self.batch < 1 or self.query_batch < 1:
            raise ValueError(
                "eval.every must be >= 0 and eval.tasks, eval.batch, eval.query_batch >= 1; "
                f"got {self}."
            )


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """Length, seed, devices, checkpoints and logging of a run."""

    steps: int = 2000
    """Outer steps."""
    seed: int = 0
    """Seed of everything: task, model, data and evaluation."""
    steps_per_call: int = 50
    """Outer steps per compiled call (`lax.scan`); checkpoint and eval intervals are multiples."""
    checkpoint_every: int = 500
    """Save a checkpoint every this many steps (and at the end)."""
    keep: int = 3
    """Checkpoints kept."""
    devices: int | None = None
    """Devices to split the meta-batch over (default: all local devices that divide it)."""
    init: str | None = None
    """Start from the model weights of `pretrained:NAME` (`zoo pretrained` lists them), a
    directory `zoo export` wrote, or a finished run directory (its newest checkpoint), e.g. to
    fine-tune it or to train it on another task; the shapes must be those this config builds.
    The optimizer starts afresh."""

    def __post_init__(self):
        if self.steps < 0:
            raise ValueError(f"steps must be >= 0, got {self.steps}; pass e.g. --steps 200.")
        if self.steps_per_call < 1:
            raise ValueError(f"steps_per_call must be >= 1, got {self.steps_per_call}.")
        if self.checkpoint_every < 1 or self.checkpoint_every % self.steps_per_call:
            raise ValueError(
                f"checkpoint_every ({self.checkpoint_every}) must be a positive multiple of "
                f"steps_per_call ({self.steps_per_call}); pass e.g. --checkpoint-every "
                f"{self.steps_per_call * 10}."
            )
        if self.keep < 1:
            raise ValueError(f"keep must be >= 1, got {self.keep}.")
        if self.devices is not None and self.devices < 1:
            raise ValueError(f"devices must be >= 1, got {self.devices}.")


class DistributedError(ValueError):
    """The multi-process settings are inconsistent; the message says what to pass."""


@dataclasses.dataclass(frozen=True)
class DistributedConfig:
    """How the processes of a multi-process run find each other (`jax.distributed`)."""

    distributed: bool = False
    """Run as one of several processes (`jax.distributed.initialize`): every process runs the
    same command, one mesh spans the devices of them all. With no other flag, JAX detects the
    cluster (SLURM, Open MPI, Kubernetes/JobSet, Cloud TPU)."""
    coordinator: str | None = None
    """HOST:PORT of process 0's coordination service (default: detected from the cluster)."""
    num_processes: int | None = None
    """How many processes take part (default: detected from the cluster)."""
    process_id: int | None = None
    """This process's index, 0 to num_processes - 1 (default: detected from the cluster)."""

    def __post_init__(self):
        given = [self.coordinator, self.num_processes, self.process_id]
        if not self.distributed and any(v is not None for v in given):
            raise DistributedError(
                "--coordinator, --num-processes and --process-id go with --distributed."
            )
        if self.num_processes is not None and self.num_processes < 1:
            raise DistributedError(f"--num-processes must be >= 1, got {self.num_processes}.")
        if self.process_id is not None and self.process_id < 0:
            raise DistributedError(f"--process-id must be >= 0, got {self.process_id}.")
        if (
            self.num_processes is not None
            and self.process_id is not None
            and self.process_id >= self.num_processes
        ):
            raise DistributedError(
                f"--process-id ({self.process_id}) must be below --num-processes "
                f"({self.num_processes})."
            )
        if self.coordinator is not None and ":" not in self.coordinator:
            raise DistributedError(
                f"--coordinator must be HOST:PORT (e.g. 10.0.0.1:1234), got {self.coordinator!r}."
            )


@dataclasses.dataclass(frozen=True)
class PluginSource:
    """Where a run's task or model plugin came from: the distribution that provided it (its
    entry point's) and that distribution's version. Recorded in `config.json` so that the run
    is loaded with the same plugin after a second distribution registers the same name, and so
    that a missing plugin names the package to install."""

    dist: str
    """Name of the distribution (`"__main__"` for a spec added by `plugins.register`)."""
    version: str | None = None
    """Its version when the run was made (`None` if unknown)."""


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """A whole training run: which task, which model, which algorithm, and how to train.

    Everything particular to the algorithm, its optimizers included (e.g. the bilevel
    algorithm's inner loop and outer optimizer), is in `algorithm`, its own config."""

    task: Any
    """The task plugin's config (its dataclass names the plugin)."""
    model: Any
    """The model plugin's config."""
    task_name: str = ""
    """Registry name of the task (filled in by the CLI and presets)."""
    model_name: str = ""
    """Registry name of the model."""
    algorithm_name: str = ""
    """Training algorithm (`runs.algorithms`); empty: chosen from the kinds of task and model."""
    algorithm: Any = None
    """The algorithm's own config (its dataclass); `None`: the algorithm's defaults."""
    task_source: PluginSource | None = None
    """The distribution providing the task plugin (filled in when a run starts; `None` in
    configs saved before it was recorded, whose plugins are looked up by name)."""
    model_source: PluginSource | None = None
    """The distribution providing the model plugin (as `task_source`)."""
    eval: EvalConfig = EvalConfig()
    run: RunConfig = RunConfig()

    def __post_init__(self):
        if self.eval.every and self.eval.every % self.run.steps_per_call:
            raise ValueError(
                f"eval.every ({self.eval.every}) must be a multiple of run.steps_per_call "
                f"({self.run.steps_per_call}); pass e.g. --eval.every {self.run.steps_per_call * 20}."
            )


# --------------------------------------------------------------------------- JSON round trip


def to_dict(config: Any) -> Any:
    """A JSON-ready dict of a (nested) config dataclass."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return {f.name: to_dict(getattr(config, f.name)) for f in dataclasses.fields(config)}
    if isinstance(config, tuple | list):
        return [to_dict(v) for v in config]
    return config


def from_dict(cls: Any, data: Any) -> Any:
    """Rebuild a value of type `cls` from `to_dict`'s output (lists become tuples where the type
    says so; nested dataclasses are rebuilt)."""
    origin = typing.get_origin(cls)
    if isinstance(cls, type) and dataclasses.is_dataclass(cls) and isinstance(data, dict):
        hints = typing.get_type_hints(cls)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"{cls.__name__} has no fields {sorted(unknown)}.")
        return cls(**{k: from_dict(hints[k], v) for k, v in data.items()})
    if origin is tuple and isinstance(data, list):
        args = typing.get_args(cls)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_dict(args[0], v) for v in data)
        return tuple(from_dict(a, v) for a, v in zip(args, data, strict=True))
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(cls):
            if arg is type(None) and data is None:
                return None
            if dataclasses.is_dataclass(arg) and isinstance(data, dict):
                return from_dict(arg, data)
        return data
    return data
