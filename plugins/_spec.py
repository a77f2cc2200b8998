"""Light plugin specs: what an entry point of a `zoo.*` group points at (one spec class per
kind of `plugins.KINDS`).

A spec names a factory as a `"module:attr"` string, imported only when the plugin is built,
so that listing plugins never imports JAX model code.
"""

import dataclasses
import importlib
import importlib.resources
import inspect
from collections.abc import Callable
from pathlib import Path
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
        obj = _resolve(self.factory, self.name)
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


@dataclasses.dataclass(frozen=True)
class AlgorithmSpec(Spec):
    """A registered training algorithm (entry-point group `zoo.algorithms`).

    Its factory is called as `factory(config: runs.TrainConfig, task, model, mesh) ->
    runs.algorithms.AbstractAlgorithm`, where `config.algorithm` is an instance of `config`
    (the algorithm's own settings, the `--algorithm.*` flags). Which algorithm `zoo train TASK
    MODEL` uses is decided by the rule the algorithms state: among those whose class
    (`algorithm`) `accepts` the task and model, the one of highest `preference`; two that tie
    are an error naming both (choose with `--algorithm NAME`)."""

    algorithm: str = ""
    """`"module:attr"` of the algorithm's class (a subclass of
    `runs.algorithms.AbstractAlgorithm`), whose `accepts(task, model)` says whether it can
    train a pair. Imported only when an algorithm is chosen."""
    preference: int = 0
    """Among the algorithms that accept a task and model, the one of highest preference is
    chosen. Give a specialised algorithm (one a user should ask for by name, e.g. a variant of
    another) a preference below its base's, so that it never ties with it."""
    split: str = "algorithm.outer.meta_batch"
    """The setting (a dotted path into `runs.TrainConfig`) whose batch is split over the
    devices: the meta-batch of tasks, the batch of environments, ..."""

    def batch(self, config: Any) -> int:
        """The size of the batch split over the devices in `config` (a `runs.TrainConfig`)."""
        value = config
        for name in self.split.split("."):
            value = getattr(value, name)
        return value

    def load_class(self) -> type:
        """Import the algorithm's class (`algorithm`)."""
        if not self.algorithm:
            raise ValueError(
                f"AlgorithmSpec {self.name!r} names no class: set algorithm='package.module:Class'."
            )
        return _resolve(self.algorithm, self.name, "algorithm")

    def check_factory(self, factory: Callable[..., Any]) -> None:
        """Raise a `TypeError` if `factory` cannot be called as
        `factory(config, task, model, mesh)`."""
        _check_positional(self, factory, "factory(config, task, model, mesh)", 4)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ExperimentSpec(Spec):
    """A registered experiment: one paper's presets, sweeps, paper reference values and
    report definitions (entry-point group `zoo.experiments`).

    Its factory is called with no argument, `factory() -> runs.Experiment`, the first time
    one of its presets or sweeps is looked up. The experiment's `name` is the prefix of its
    presets' and sweeps' names: preset `hyperteacher` of experiment `schug2024` is
    `schug2024/hyperteacher`."""

    config: type = type(None)  # noqa: RUF009 (a constant)
    """Unused by experiments (they have no settings of their own)."""
    paper: str = ""
    """The paper, as it is cited (authors, year, title)."""
    order: int = 0
    """Where `zoo presets` and `zoo sweeps` list this experiment: by `order`, then by name (the
    built-in papers' are negative, so that they come first)."""

    def check_factory(self, factory: Callable[..., Any]) -> None:
        """Raise a `TypeError` if `factory` cannot be called with no argument."""
        _check_positional(self, factory, "factory()", 0)


@dataclasses.dataclass(frozen=True)
class HookSpec(Spec):
    """A registered training hook (entry-point group `zoo.hooks`), chosen on the command line
    with `zoo train ... --hooks NAME ...`.

    Its factory is called as `factory(config, *, out: pathlib.Path) -> runs.hooks.AbstractHook`,
    with `config` an instance of `config` (the hook's settings) and `out` the run directory."""

    def check_factory(self, factory: Callable[..., Any]) -> None:
        """Raise a `TypeError` if `factory` cannot be called as `factory(config, *, out)`."""
        _check_call(self, factory, "factory(config, *, out)", ("out",))


@dataclasses.dataclass(frozen=True, kw_only=True)
class PretrainedSpec(Spec):
    """A registered pretrained model (entry-point group `zoo.pretrained`): the directory `zoo
    export` wrote (weights, `config.json`, `digests.json`, `card.json`, `card.md`), shipped
    inside a package and loaded with `runs.load("pretrained:NAME")`.

    `path` is a package resource, `"package:relative/dir"`, found with `importlib.resources`
    (so it works from a wheel, an editable install or a zip), only when the model is loaded or
    listed with its card."""

    config: type = type(None)  # noqa: RUF009 (a constant)
    """Unused (the model's settings are its `config.json`)."""
    factory: str = ""
    """Unused (a pretrained model is read, not built)."""
    path: str = ""
    """`"package:relative/dir"`: the exported directory, inside an importable package."""

    def directory(self) -> Path:
        """The exported directory `path` names, as a file-system path.

        **Raises:** `ValueError` if `path` is not `"package:relative/dir"`, `ImportError` if the
        package is not importable, `FileNotFoundError` if the directory is not there."""
        package, _, relative = self.path.partition(":")
        if not package or not relative:
            raise ValueError(
                f"PretrainedSpec {self.name!r}: path {self.path!r} must look like "
                "'package:relative/dir'."
            )
        resource = importlib.resources.files(package).joinpath(*relative.strip("/").split("/"))
        directory = Path(str(resource))
        if not directory.is_dir():
            raise FileNotFoundError(
                f"PretrainedSpec {self.name!r}: {self.path!r} is no directory ({directory})."
            )
        return directory

    def load(self) -> Callable[..., Any]:
        """Pretrained models have no factory: use `runs.load("pretrained:NAME")`."""
        raise TypeError(
            f"PretrainedSpec {self.name!r} has no factory; load it with "
            f"runs.load('pretrained:{self.name}')."
        )


def _resolve(target: str, name: str, what: str = "factory") -> Any:
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise ValueError(f"Spec {name!r}: {what} {target!r} must look like 'package.module:attr'.")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _check_positional(spec: Spec, factory: Callable[..., Any], expected: str, count: int) -> None:
    """Raise a `TypeError` naming `expected` if `factory` cannot take `count` positional
    arguments."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*([None] * count))
    except TypeError as error:
        raise TypeError(
            f"The factory {spec.factory!r} of {type(spec).__name__} {spec.name!r} is "
            f"`{spec.factory.rpartition(':')[2]}{signature}` ({error}); it must be callable as "
            f"`{expected}`."
        ) from None
