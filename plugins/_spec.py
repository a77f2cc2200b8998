"""Light plugin specs: what an entry point of `zoo.models` or `zoo.tasks` points at.

A spec names a factory as a `"module:attr"` string, imported only when the plugin is built,
so that listing plugins never imports JAX model code.
"""

import dataclasses
import importlib
import inspect
from collections.abc import Callable
from typing import Any


@dataclasses.dataclass(frozen=True)
class Spec:
    """What every spec holds. Each kind of plugin (see `plugins.KINDS`) has a subclass, which
    documents how its factory is called and checks it in `check_factory`."""

    name: str
    """Registry name (kebab-case), e.g. `linear-hypernet`; also the CLI subcommand."""
    config: type
    """A frozen dataclass type whose defaults build the plugin; its fields are the CLI flags."""
    factory: str
    """`"module:attr"` of the callable that builds the plugin from a config."""
    description: str = ""
    """One line shown by `zoo list`."""

    def load(self) -> Callable[..., Any]:
        """Import the factory, check it with `check_factory`, and return it.

        **Raises:**

        `ValueError` if `factory` is not of the form `"module:attr"`, `ImportError` or
        `AttributeError` if it cannot be imported, `TypeError` if it cannot be called the way
        the factories of this kind are called.
        """
        module_name, _, attr = self.factory.partition(":")
        if not module_name or not attr:
            raise ValueError(
                f"Spec {self.name!r}: factory {self.factory!r} must look like 'package.module:attr'."
            )
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
        self.check_factory(obj)
        return obj

    def check_factory(self, factory: Callable[..., Any]) -> None:
        """Raise a `TypeError` if `factory` cannot be called as this kind's factories are.
        Default: no check."""
        del factory


def _check_call(
    spec: Spec, factory: Callable[..., Any], expected: str, keywords: tuple[str, ...]
) -> None:
    """Raise a `TypeError` naming `expected` if `factory(config, **{k: ... for k in keywords})`
    does not bind. Callables without a signature (some builtins) are not checked."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(None, **dict.fromkeys(keywords))
    except TypeError as error:
        empty = inspect.Parameter.empty
        bare = signature.replace(
            parameters=[p.replace(annotation=empty) for p in signature.parameters.values()],
            return_annotation=empty,
        )
        raise TypeError(
            f"The factory {spec.factory!r} of {type(spec).__name__} {spec.name!r} is "
            f"`{spec.factory.rpartition(':')[2]}{bare}` ({error}); it must be callable as "
            f"`{expected}`."
        ) from None


@dataclasses.dataclass(frozen=True)
class ModelSpec(Spec):
    """A registered model. Its factory is called as
    `factory(config, *, io: zoo.IOSpec, key) -> AbstractMetaLearner`, where `io` is the
    `io` of the task the model will learn (shapes, dtypes and vocabularies of its data)."""

    def check_factory(self, factory: Callable[..., Any]) -> None:
        """Raise a `TypeError` if `factory` cannot be called as
        `factory(config, *, io: IOSpec, key)` (e.g. a factory written for the older
        `factory(config, *, in_features, out_features, key)`)."""
        _check_call(self, factory, "factory(config, *, io: zoo.IOSpec, key)", ("io", "key"))


@dataclasses.dataclass(frozen=True)
class TaskSpec(Spec):
    """A registered task. Its factory is called as `factory(config, *, key) -> AbstractTask`."""

    def check_factory(self, factory: Callable[..., Any]) -> None:
        """Raise a `TypeError` if `factory` cannot be called as `factory(config, *, key)`."""
        _check_call(self, factory, "factory(config, *, key)", ("key",))
