"""Discovery, run-time registration and lookup of plugin specs.

The kinds of plugin are the rows of `KINDS`: each names an entry-point group (`zoo.models`,
`zoo.tasks`, `zoo.algorithms`, `zoo.experiments`, `zoo.hooks`, `zoo.pretrained`) and the spec
type its entry points hold (`ModelSpec`, `TaskSpec`, `AlgorithmSpec`, `ExperimentSpec`,
`HookSpec`, `PretrainedSpec`). Everything
below is written once for every kind, so that a new kind is one row of `KINDS` plus its spec
class. Loading an entry point imports only the module holding the spec, so that nothing here
imports JAX model code.

Names are kebab-case (`linear-hypernet`); lookups treat `_` and `-` alike and ignore case.
A name provided by more than one distribution is looked up as `dist:name`.

An entry point that fails to load is set aside without a word at discovery (so that one broken
plugin does not speak up in every command): `zoo list` reports it, and so does every lookup of
its name.
"""

import dataclasses
import difflib
import functools
import importlib.metadata
import re
import warnings
from collections.abc import Iterable
from typing import Generic, TypeVar, cast

from ._spec import (
    AlgorithmSpec,
    ExperimentSpec,
    HookSpec,
    ModelSpec,
    PretrainedSpec,
    Spec,
    TaskSpec,
)

_SpecT = TypeVar("_SpecT", bound=Spec)

_NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")

DISTRIBUTION = "compgen-zoo"
"""The name of the distribution holding `zoo`, `tasks`, `plugins` and `runs` (and the built-in
plugins); what a plugin package lists in its `dependencies`."""

_FORMER_NAMES = ("zoo",)
"""Names the distribution was installed under before, which `dist:name` lookups (and runs that
recorded them) still accept for the built-in plugins."""


class PluginWarning(UserWarning):
    """A plugin of the name looked up failed to load; another distribution's was used."""


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
    version: str | None = None
    """Version of that distribution (`None` for specs added by `register`)."""

    @property
    def qualified_name(self) -> str:
        """`dist:name`, which always resolves to this entry."""
        return f"{self.dist}:{self.name}"


@dataclasses.dataclass(frozen=True)
class FailedPlugin:
    """An entry point that could not be loaded, and so was skipped."""

    group: str
    """Entry-point group, e.g. `"zoo.models"`."""
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
class Kind:
    """A kind of plugin: where its entry points are declared and what they hold."""

    group: str
    """Entry-point group, e.g. `"zoo.models"`."""
    noun: str
    """What one plugin of the kind is called in messages, e.g. `"model"`."""
    spec_type: type[Spec]
    """The spec class every entry point of `group` must be an instance of."""

    @property
    def plural(self) -> str:
        """`noun` in the plural, e.g. `"models"`."""
        return f"{self.noun}s"


KINDS: dict[str, Kind] = {
    "models": Kind("zoo.models", "model", ModelSpec),
    "tasks": Kind("zoo.tasks", "task", TaskSpec),
    "algorithms": Kind("zoo.algorithms", "algorithm", AlgorithmSpec),
    "experiments": Kind("zoo.experiments", "experiment", ExperimentSpec),
    "hooks": Kind("zoo.hooks", "hook", HookSpec),
    "pretrained": Kind("zoo.pretrained", "pretrained model", PretrainedSpec),
}
"""The kinds of plugin, keyed by the name `spec` and `entries` take (also the title of the
kind's section in `zoo list`), in the order `zoo list` shows them."""

# Specs added by `register`, per entry-point group, keyed by `(name, normalized dist)`.
_registered: dict[str, dict[tuple[str, str], Entry]] = {}


def _kind(kind: str) -> Kind:
    try:
        return KINDS[kind]
    except KeyError:
        raise ValueError(
            f"Unknown kind of plugin {kind!r}; the kinds are {', '.join(map(repr, KINDS))}."
        ) from None


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
def _discover(kind: Kind) -> tuple[tuple[Entry, ...], tuple[FailedPlugin, ...]]:
    """Load every entry point of `kind.group`; set aside those that fail (reported by
    `format_listing` and by lookups of their names, not here: discovery runs in every
    command)."""
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
            failures.append(FailedPlugin(kind.group, ep.name, ep.value, dist, error))
        else:
            version = ep.dist.version if ep.dist is not None else None
            entries.append(Entry(spec.name, dist, spec, version))
    return tuple(entries), tuple(failures)


@functools.cache
def own_distribution() -> str:
    """The name this code is installed under: that of the distribution declaring the built-in
    plugins' entry points (`DISTRIBUTION`; an install made before the rename still says
    `zoo`), or `DISTRIBUTION` where it is not installed (a bare checkout on `PYTHONPATH`)."""
    for ep in importlib.metadata.entry_points(group=KINDS["models"].group):
        if ep.value.startswith("plugins.builtin:") and ep.dist is not None:
            return ep.dist.name
    return DISTRIBUTION


def _failures_named(kind: Kind, name: str) -> list[FailedPlugin]:
    return [f for f in _discover(kind)[1] if _normalize_name(f.name) == name]


def _table(kind: Kind) -> dict[tuple[str, str], Entry]:
    """Discovered and registered entries of `kind`, keyed by `(name, normalized dist)`."""
    discovered, _ = _discover(kind)
    table = {(entry.name, _normalize_dist(entry.dist)): entry for entry in discovered}
    table.update(_registered.get(kind.group, {}))
    return table


def _lookup(kind_name: str, query: str) -> Entry:
    kind = _kind(kind_name)
    table = _table(kind)
    dist, _, name = query.rpartition(":")
    name = _normalize_name(name)
    if dist:
        entry = table.get((name, _normalize_dist(dist)))
        if entry is None and _normalize_dist(dist) in (*_FORMER_NAMES, DISTRIBUTION):
            entry = table.get((name, _normalize_dist(own_distribution())))
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
    failed = [f for f in _failures_named(kind, name) if f.dist != matches[0].dist]
    if failed:
        warnings.warn(
            f"{kind.noun.capitalize()} {name!r} is also declared by "
            + ", ".join(f"{f.dist!r} (failed to load: {f.describe_error()})" for f in failed)
            + f"; using the one of {matches[0].dist!r}.",
            PluginWarning,
            stacklevel=3,
        )
    return matches[0]


def _unknown_message(kind: Kind, query: str, entries: Iterable[Entry]) -> str:
    qualified = ":" in query
    available = sorted({e.qualified_name if qualified else e.name for e in entries})
    lines = [f"Unknown {kind.noun} {query!r}."]
    close = difflib.get_close_matches(query.strip().lower(), available, n=3, cutoff=0.6)
    if close:
        lines.append("Did you mean " + " or ".join(map(repr, close)) + "?")
    if available:
        lines.append(f"Available {kind.plural}: {', '.join(available)}.")
    else:
        lines.append(f"No {kind.plural} are installed.")
    dist, _, name = query.rpartition(":")
    name = _normalize_name(name)
    failures = _failures_named(kind, name)
    for failure in failures:
        lines.append(
            f"A {kind.noun} plugin of that name from distribution {failure.dist!r} failed "
            f"to load: {failure.describe_error()}"
        )
    # Never `pip install zoo` (another project on PyPI) for a former name of ours.
    ours = {_normalize_dist(d) for d in (*_FORMER_NAMES, DISTRIBUTION, "__main__")}
    if dist and not failures and _normalize_dist(dist) not in ours and not _installed(dist):
        lines.append(
            f"No distribution called {dist!r} is installed; install it (pip install {dist}) "
            f"for its {kind.plural}."
        )
    nouns = [k.noun for k in KINDS.values()]
    every = " and ".join([", ".join(nouns[:-1]), nouns[-1]] if len(nouns) > 1 else nouns)
    lines.append(f"Run `zoo list` to see every {every}.")
    return "\n".join(lines)


def _installed(dist: str) -> bool:
    """Whether a distribution called `dist` is installed."""
    try:
        importlib.metadata.distribution(dist)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False
    return True


def register(spec: Spec, dist: str = "__main__") -> None:
    """Add a spec at run time (in a notebook, a script, a test), to the kind of `KINDS` whose
    spec type it is an instance of (the most derived one, if several).

    **Arguments:**

    - `spec`: a `ModelSpec`, a `TaskSpec` (or the spec of another kind of `KINDS`); its `name`
        must be kebab-case.
    - `dist`: the distribution it is listed under, and the `dist` of its qualified name
        `dist:name`. Registering a name again from the same `dist` replaces the spec.

    **Raises:**

    `TypeError` if `spec` is of no kind's spec type, `ValueError` if its name is not kebab-case.
    """
    kinds = {kind.spec_type: kind for kind in KINDS.values()}
    kind = next((kinds[cls] for cls in type(spec).__mro__ if cls in kinds), None)
    if kind is None:
        expected = " or ".join(kind.spec_type.__name__ for kind in KINDS.values())
        raise TypeError(f"Expected a {expected}, got {type(spec).__name__}.")
    _check_name(spec.name)
    entry = Entry(spec.name, dist, spec)
    _registered.setdefault(kind.group, {})[(spec.name, _normalize_dist(dist))] = entry


def unregister(name: str, dist: str = "__main__") -> None:
    """Remove what `register(spec, dist)` added under `name` (of any kind); nothing if there is
    none. Installed plugins are not affected."""
    for table in _registered.values():
        table.pop((name, _normalize_dist(dist)), None)


def spec(kind: str, name: str) -> Spec:
    """The spec of the plugin of kind `kind` (a key of `KINDS`, e.g. `"models"`) called `name`,
    or `dist:name` to choose among distributions.

    **Raises:**

    `UnknownPluginError` (a `KeyError`) if there is no such plugin, `AmbiguousPluginError` if
    a bare `name` is provided by more than one distribution, `ValueError` if `kind` is no key
    of `KINDS`.
    """
    return _lookup(kind, name).spec


def entry(kind: str, name: str) -> Entry:
    """The registry entry (spec, providing distribution and its version) of the plugin of kind
    `kind` (a key of `KINDS`) called `name`, or `dist:name`. Raises as `spec` does."""
    return _lookup(kind, name)


def entries(kind: str) -> list[Entry]:
    """Every available plugin of kind `kind` (a key of `KINDS`), sorted by name then
    distribution."""
    return sorted(_table(_kind(kind)).values(), key=lambda e: (e.name, e.dist))


def model_spec(name: str) -> ModelSpec:
    """The spec of the model called `name`, or `dist:name` to choose among distributions.

    **Raises:**

    `UnknownPluginError` (a `KeyError`) if there is no such model, `AmbiguousPluginError` if
    a bare `name` is provided by more than one distribution.
    """
    return cast(ModelSpec, spec("models", name))


def task_spec(name: str) -> TaskSpec:
    """The spec of the task called `name`, or `dist:name` to choose among distributions.

    **Raises:**

    `UnknownPluginError` (a `KeyError`) if there is no such task, `AmbiguousPluginError` if
    a bare `name` is provided by more than one distribution.
    """
    return cast(TaskSpec, spec("tasks", name))


def algorithm_spec(name: str) -> AlgorithmSpec:
    """The spec of the training algorithm called `name`, or `dist:name`. Raises as
    `model_spec` does."""
    return cast(AlgorithmSpec, spec("algorithms", name))


def experiment_spec(name: str) -> ExperimentSpec:
    """The spec of the experiment (a paper's presets and sweeps) called `name`, or `dist:name`.
    Raises as `model_spec` does."""
    return cast(ExperimentSpec, spec("experiments", name))


def hook_spec(name: str) -> HookSpec:
    """The spec of the training hook called `name`, or `dist:name`. Raises as `model_spec`
    does."""
    return cast(HookSpec, spec("hooks", name))


def pretrained_spec(name: str) -> PretrainedSpec:
    """The spec of the pretrained model called `name`, or `dist:name`. Raises as `model_spec`
    does."""
    return cast(PretrainedSpec, spec("pretrained", name))


def list_models() -> list[Entry[ModelSpec]]:
    """Every available model, sorted by name then distribution."""
    return cast(list[Entry[ModelSpec]], entries("models"))


def list_tasks() -> list[Entry[TaskSpec]]:
    """Every available task, sorted by name then distribution."""
    return cast(list[Entry[TaskSpec]], entries("tasks"))


def failed_plugins() -> list[FailedPlugin]:
    """The entry points, of every kind of `KINDS`, that failed to load."""
    return [failure for kind in KINDS.values() for failure in _discover(kind)[1]]


@dataclasses.dataclass(frozen=True)
class UnknownGroup:
    """Entry points declared in a `zoo.*` group that is no kind of `KINDS` (a typo such as
    `zoo.model`, or a kind of a newer zoo): the zoo never reads them."""

    group: str
    """The entry-point group, e.g. `"zoo.model"`."""
    names: tuple[str, ...]
    """The entry points' names."""
    dists: tuple[str, ...]
    """The distributions that declare them."""

    def hint(self) -> str:
        """What to do about it, in words."""
        known = [kind.group for kind in KINDS.values()]
        close = difflib.get_close_matches(self.group, known, n=1, cutoff=0.6)
        fix = f"did you mean {close[0]!r}? " if close else ""
        return f"not a kind of plugin this zoo reads: {fix}the kinds are {', '.join(known)}"


def unknown_groups() -> list[UnknownGroup]:
    """The entry-point groups named `zoo.*` that are no kind of plugin (`KINDS`): their entry
    points are never loaded, and `zoo list` says so."""
    known = {kind.group for kind in KINDS.values()}
    found: dict[str, list[importlib.metadata.EntryPoint]] = {}
    for group in importlib.metadata.entry_points().groups:
        if group.startswith("zoo.") and group not in known:
            found[group] = list(importlib.metadata.entry_points(group=group))
    return [
        UnknownGroup(
            group,
            tuple(sorted({ep.name for ep in eps})),
            tuple(sorted({ep.dist.name if ep.dist is not None else "?" for ep in eps})),
        )
        for group, eps in sorted(found.items())
    ]


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
    """The text of `zoo list`: per kind of `KINDS`, one line per plugin (name, distribution,
    description), then the plugins that failed to load and the entry points of `zoo.*` groups
    that are no kind (`unknown_groups`), if any."""
    lines: list[str] = []
    for title in KINDS:
        rows = [(e.name, e.dist, e.spec.description) for e in entries(title)]
        lines += [*([""] if lines else []), *_format_rows(title, rows)]
    failures = failed_plugins()
    if failures:
        rows = [(f.name, f.dist, f"{f.group} {f.value}: {f.describe_error()}") for f in failures]
        lines.append("")
        lines += _format_rows("failed plugins", rows)
    unknown = unknown_groups()
    if unknown:
        rows = [(u.group, ", ".join(u.dists), f"{', '.join(u.names)}: {u.hint()}") for u in unknown]
        lines.append("")
        lines += _format_rows("entry points in unknown groups (ignored)", rows)
    return "\n".join(lines)


def reset() -> None:
    """Forget discovered and registered plugins: the next lookup discovers the installed ones
    anew (after installing a plugin into a running session; between tests)."""
    _discover.cache_clear()
    own_distribution.cache_clear()
    _registered.clear()
