"""Light plugin specs: what an entry point of `zoo.models` or `zoo.tasks` points at.

A spec names a factory as a `"module:attr"` string, imported only when the plugin is built,
so that listing plugins never imports JAX model code.
"""

import dataclasses
import importlib
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class _Spec:
    name: str
    """Registry name (kebab-case), e.g. `linear-hypernet`; also the CLI subcommand."""
    config: type
    """A frozen dataclass type whose defaults build the plugin; its fields are the CLI flags."""
    factory: str
    """`"module:attr"` of the callable that builds the plugin from a config."""
    description: str = ""
    """One line shown by `zoo list`."""

    def load(self) -> Callable[..., Any]:
        """Import and return the factory."""
        module_name, _, attr = self.factory.partition(":")
        if not module_name or not attr:
            raise ValueError(
                f"Spec {self.name!r}: factory {self.factory!r} must look like 'package.module:attr'."
            )
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
        return obj


@dataclasses.dataclass(frozen=True)
class ModelSpec(_Spec):
    """A registered model. Its factory is called as
    `factory(config, *, in_features: int, out_features: int, key) -> AbstractMetaLearner`."""


@dataclasses.dataclass(frozen=True)
class TaskSpec(_Spec):
    """A registered task. Its factory is called as `factory(config, *, key) -> AbstractTask`."""
