"""Discovery, run-time registration and lookup of model and task specs.

Installed plugins are found through the entry-point groups `zoo.models` and `zoo.tasks`,
whose values are `ModelSpec` and `TaskSpec` instances. Loading an entry point imports only
the module holding the spec, so that nothing here imports JAX model code.

Names are kebab-case (`linear-hypernet`); lookups treat `_` and `-` alike and ignore case.
A name provided by more than one distribution is looked up as `dist:name`.
"""

import dataclasses
import difflib
import functools
import importlib.metadata
import re
import warnings
from collections.abc import Iterable
from typing import Generic, TypeVar

from ._spec import ModelSpec, TaskSpec

_SpecT = TypeVar("_SpecT", bound=ModelSpec | TaskSpec)

_NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


class PluginError(Exception):
    """Base class of the errors raised when looking up a plugin."""


class UnknownPluginError(PluginError, KeyError):
    """No plugin of that name. Also a `KeyError`; its message lists close matches and the
    available names."""

    def __str__(self) -> str:
        # `KeyError.__str__` would print the repr of the message, quotes and `\n` included.
        return str(self.args[0]) if self.args else ""


class AmbiguousPluginError(PluginError):
    """More than one distribution provides the name; a qualified `dist:name` resolves it."""


@dataclasses.dataclass(frozen=True)
class Entry(Generic[_SpecT]):
    """A registered spec and the distribution that provides it."""

    name: str
    """Registry name (kebab-case), equal to `spec.name`."""
    dist: str
    """Name of the distribution providing the spec; `"__main__"` for `register` by default."""
    spec: _SpecT

    @property
    def qualified_name(self) -> str:
        """`dist:name`, which always resolves to this entry."""
        return f"{self.dist}:{self.name}"


@dataclasses.dataclass(frozen=True)
class FailedPlugin:
    """An entry point that could not be loaded, and so was skipped."""

    group: str
    """Entry-point group, `"zoo.models"` or `"zoo.tasks"`."""
    name: str
    """Name of the entry point."""
    value: str
    """Value of the entry point, `"module:attr"`."""
    dist: str
    """Name of the distribution declaring the entry point."""
    error: Exception
    """Why it failed."""

    def describe_error(self) -> str:
        """One line: the type and the message of `error`."""
        return f"{type(self.error).__name__}: {self.error}"


@dataclasses.dataclass(frozen=True)
class _Kind:
    group: str
    noun: str
    spec_type: type[ModelSpec] | type[TaskSpec]


_MODELS = _Kind("zoo.models", "model", ModelSpec)
_TASKS = _Kind("zoo.tasks", "task", TaskSpec)

# Specs added by `register`, per kind, keyed by `(name, normalized dist)`.
_registered: dict[str, dict[tuple[str, str], Entry]] = {_MODELS.group: {}, _TASKS.group: {}}


def _normalize_name(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _normalize_dist(dist: str) -> str:
    # As in PEP 503, so that `zoo_example_plugin:...` finds `zoo-example-plugin`.
    return re.sub(r"[-_.]+", "-", dist.strip()).lower()


def _check_name(name: str) -> None:
    if _NAME_RE.fullmatch(name) is None:
        raise ValueError(
            f"Plugin name {name!r} is not kebab-case (lowercase letters and digits joined by "
            f"'-'), e.g. {_normalize_name(name)!r}."
        )


@functools.cache
def _discover(kind: _Kind) -> tuple[tuple[Entry, ...], tuple[FailedPlugin, ...]]:
    """Load every entry point of `kind.group`; warn about, and set aside, those that fail."""
    entries: list[Entry] = []
    failures: list[FailedPlugin] = []
    for ep in importlib.metadata.entry_points(group=kind.group):
        dist = ep.dist.name if ep.dist is not None else "unknown"
        try:
            spec = ep.load()
            if not isinstance(spec, kind.spec_type):
                raise TypeError(
                    f"the entry point must be a {kind.spec_type.__name__}, "
                    f"got {type(spec).__name__}"
                )
            _check_name(spec.name)
            if _normalize_name(ep.name) != spec.name:
                raise ValueError(f"the entry point is named {ep.name!r} but its spec {spec.name!r}")
        except Exception as error:
            failure = FailedPlugin(kind.group, ep.name, ep.value, dist, error)
            warnings.warn(
                f"Skipping {kind.noun} plugin {ep.name!r} = {ep.value!r} (entry point group "
                f"{kind.group!r}, distribution {dist!r}): {failure.describe_error()}",
                stacklevel=2,
            )
            failures.append(failure)
        else:
            entries.append(Entry(spec.name, dist, spec))
    return tuple(entries), tuple(failures)


def _table(kind: _Kind) -> dict[tuple[str, str], Entry]:
    """Discovered and registered entries of `kind`, keyed by `(name, normalized dist)`."""
    discovered, _ = _discover(kind)
    table = {(entry.name, _normalize_dist(entry.dist)): entry for entry in discovered}
    table.update(_registered[kind.group])
    return table


def _lookup(kind: _Kind, query: str) -> Entry:
    table = _table(kind)
    dist, _, name = query.rpartition(":")
    name = _normalize_name(name)
    if dist:
        entry = table.get((name, _normalize_dist(dist)))
        if entry is None:
            raise UnknownPluginError(_unknown_message(kind, query, table.values()))
        return entry
    matches = sorted((e for e in table.values() if e.name == name), key=lambda e: e.dist)
    if not matches:
        raise UnknownPluginError(_unknown_message(kind, query, table.values()))
    if len(matches) > 1:
        dists = ", ".join(repr(e.dist) for e in matches)
        qualified = " or ".join(repr(e.qualified_name) for e in matches)
        raise AmbiguousPluginError(
            f"{kind.noun.capitalize()} {name!r} is provided by more than one distribution: "
            f"{dists}. Use the qualified form `dist:name` to choose: {qualified}."
        )
    return matches[0]


def _unknown_message(kind: _Kind, query: str, entries: Iterable[Entry]) -> str:
    qualified = ":" in query
    available = sorted({e.qualified_name if qualified else e.name for e in entries})
    lines = [f"Unknown {kind.noun} {query!r}."]
    close = difflib.get_close_matches(query.strip().lower(), available, n=3, cutoff=0.6)
    if close:
        lines.append("Did you mean " + " or ".join(map(repr, close)) + "?")
    if available:
        lines.append(f"Available {kind.noun}s: {', '.join(available)}.")
    else:
        lines.append(f"No {kind.noun}s are installed.")
    name = _normalize_name(query.rpartition(":")[2])
    for failure in _discover(kind)[1]:
        if _normalize_name(failure.name) == name:
            lines.append(
                f"A {kind.noun} plugin of that name from distribution {failure.dist!r} failed "
                f"to load: {failure.describe_error()}"
            )
    lines.append("Run `zoo list` to see every model and task.")
    return "\n".join(lines)


def register(spec: ModelSpec | TaskSpec, dist: str = "__main__") -> None:
    """Add a model or task spec at run time (in a notebook, a script, a test).

    **Arguments:**

    - `spec`: a `ModelSpec` or a `TaskSpec`; its `name` must be kebab-case.
    - `dist`: the distribution it is listed under, and the `dist` of its qualified name
        `dist:name`. Registering a name again from the same `dist` replaces the spec.

    **Raises:**

    `TypeError` if `spec` is neither spec type, `ValueError` if its name is not kebab-case.
    """
    if isinstance(spec, ModelSpec):
        kind = _MODELS
    elif isinstance(spec, TaskSpec):
        kind = _TASKS
    else:
        raise TypeError(f"Expected a ModelSpec or a TaskSpec, got {type(spec).__name__}.")
    _check_name(spec.name)
    _registered[kind.group][(spec.name, _normalize_dist(dist))] = Entry(spec.name, dist, spec)


def model_spec(name: str) -> ModelSpec:
    """The spec of the model called `name`, or `dist:name` to choose among distributions.

    **Raises:**

    `UnknownPluginError` (a `KeyError`) if there is no such model, `AmbiguousPluginError` if
    a bare `name` is provided by more than one distribution.
    """
    return _lookup(_MODELS, name).spec


def task_spec(name: str) -> TaskSpec:
    """The spec of the task called `name`, or `dist:name` to choose among distributions.

    **Raises:**

    `UnknownPluginError` (a `KeyError`) if there is no such task, `AmbiguousPluginError` if
    a bare `name` is provided by more than one distribution.
    """
    return _lookup(_TASKS, name).spec


def list_models() -> list[Entry[ModelSpec]]:
    """Every available model, sorted by name then distribution."""
    return sorted(_table(_MODELS).values(), key=lambda e: (e.name, e.dist))


def list_tasks() -> list[Entry[TaskSpec]]:
    """Every available task, sorted by name then distribution."""
    return sorted(_table(_TASKS).values(), key=lambda e: (e.name, e.dist))


def failed_plugins() -> list[FailedPlugin]:
    """The entry points of `zoo.models` and `zoo.tasks` that failed to load."""
    return [*_discover(_MODELS)[1], *_discover(_TASKS)[1]]


def _format_rows(title: str, rows: list[tuple[str, str, str]]) -> list[str]:
    if not rows:
        return [f"{title}:", "  (none)"]
    name_width = max(len(row[0]) for row in rows)
    dist_width = max(len(row[1]) for row in rows)
    lines = [f"{title}:"]
    for name, dist, text in rows:
        lines.append(f"  {name:<{name_width}}  {dist:<{dist_width}}  {text}".rstrip())
    return lines


def format_listing() -> str:
    """The text of `zoo list`: one line per model and per task (name, distribution,
    description), then the plugins that failed to load, if any."""
    lines = _format_rows("models", [(e.name, e.dist, e.spec.description) for e in list_models()])
    lines.append("")
    lines += _format_rows("tasks", [(e.name, e.dist, e.spec.description) for e in list_tasks()])
    failures = failed_plugins()
    if failures:
        rows = [(f.name, f.dist, f"{f.group} {f.value}: {f.describe_error()}") for f in failures]
        lines.append("")
        lines += _format_rows("failed plugins", rows)
    return "\n".join(lines)


def _reset() -> None:
    """Forget discovered and registered plugins (for tests): the next lookup discovers anew."""
    _discover.cache_clear()
    for entries in _registered.values():
        entries.clear()
