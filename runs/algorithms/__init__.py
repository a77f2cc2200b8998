"""Training algorithms: each a final `AbstractAlgorithm` over one `TrainState`, sharing the run
directory, checkpoints, device mesh and CLI.

`ALGORITHMS` is the table of built-in algorithms, name -> `AlgorithmSpec` (config dataclass and
factory, imported lazily: this module imports no JAX). Adding an algorithm is a module in this
package, its config in `config.py`, and one entry here. `zoo train TASK MODEL` picks the first
algorithm of the table that accepts the kinds of task and model; `--algorithm NAME` overrides.
"""

import dataclasses
import pkgutil
from collections.abc import Callable
from typing import Any

from .config import BilevelConfig, InContextConfig, MetaRIMsConfig, PPOConfig


@dataclasses.dataclass(frozen=True)
class AlgorithmSpec:
    """A training algorithm: its name, config and factory."""

    name: str
    """Name (kebab-case), as given to `--algorithm`."""
    config: type
    """Frozen dataclass of the algorithm's own settings (`--algorithm.*` flags)."""
    factory: str
    """`"module:attr"` of `make(config: TrainConfig, task, model, mesh) -> AbstractAlgorithm`."""
    algorithm: str
    """`"module:attr"` of the algorithm's class (for its `accepts`)."""
    description: str = ""
    sections: tuple[str, ...] = ("outer",)
    """The engine's settings the algorithm reads beside its own (`"inner"`, `"outer"`): `zoo
    train` offers their flags, and a run refuses others changed from their defaults."""
    split: str = "outer.meta_batch"
    """The setting (a dotted path into `TrainConfig`) whose batch the algorithm splits over
    the devices, e.g. the meta-batch of tasks or the batch of environments."""

    def batch(self, config: Any) -> int:
        """The size of the batch split over the devices in `config` (a `TrainConfig`)."""
        value = config
        for name in self.split.split("."):
            value = getattr(value, name)
        return value

    def load(self) -> Callable[..., Any]:
        """The factory."""
        return pkgutil.resolve_name(self.factory)

    def load_class(self) -> type:
        """The algorithm's class."""
        return pkgutil.resolve_name(self.algorithm)


ALGORITHMS: dict[str, AlgorithmSpec] = {
    spec.name: spec
    for spec in (
        AlgorithmSpec(
            name="bilevel",
            config=BilevelConfig,
            factory="runs.algorithms.bilevel:make",
            algorithm="runs.algorithms.bilevel:Bilevel",
            description="inner loop on the support set, outer step on the query loss (MAML-style)",
            sections=("inner", "outer"),
        ),
        AlgorithmSpec(
            name="in-context",
            config=InContextConfig,
            factory="runs.algorithms.in_context:make",
            algorithm="runs.algorithms.in_context:InContext",
            description="the model reads the support set beside the queries (Lake 2019)",
        ),
        AlgorithmSpec(
            name="ppo",
            config=PPOConfig,
            factory="runs.algorithms.ppo:make",
            algorithm="runs.algorithms.ppo:PPO",
            description="recurrent PPO over a batch of environments (BabyAI's settings)",
            sections=(),
            split="algorithm.envs",
        ),
        AlgorithmSpec(
            name="meta-rims",
            config=MetaRIMsConfig,
            factory="runs.algorithms.meta_rims:make",
            algorithm="runs.algorithms.meta_rims:MetaRIMs",
            description="fast and slow PPO loops over an agent's fast and slow leaves (Madan et al. 2021)",
            sections=(),
            split="algorithm.envs",
        ),
    )
}


class AlgorithmError(ValueError):
    """No algorithm fits, or the one named does not accept the task and model."""


def get(name: str) -> AlgorithmSpec:
    """The algorithm called `name`."""
    if name not in ALGORITHMS:
        raise AlgorithmError(
            f"Unknown algorithm {name!r}; the algorithms are {', '.join(ALGORITHMS)}."
        )
    return ALGORITHMS[name]


def choose(task: object, model: object, name: str = "") -> AlgorithmSpec:
    """The algorithm called `name`, checked against `task` and `model` (concrete or
    abstract), or, with no name, the first algorithm of the table that accepts both."""
    specs = [get(name)] if name else list(ALGORITHMS.values())
    reasons = []
    for spec in specs:
        reason = spec.load_class().accepts(task, model)
        if reason is None:
            return spec
        reasons.append(f"{spec.name}: {reason}")
    what = f"{type(model).__name__} on {type(task).__name__}"
    if name:
        raise AlgorithmError(
            f"Algorithm {name!r} cannot train {what}: {reasons[0]}. Leave out --algorithm to "
            "choose from the kinds of task and model."
        )
    raise AlgorithmError(f"No algorithm can train {what}:\n  " + "\n  ".join(reasons))


__all__ = ["ALGORITHMS", "AlgorithmError", "AlgorithmSpec", "choose", "get"]
