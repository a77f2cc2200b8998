"""Experiments: a paper's presets and sweeps, registered as plugins of `zoo.experiments`.

An experiment plugin is a package of its own (the built-in papers are too, under `plugins/`).
Its entry point holds a `plugins.ExperimentSpec` whose factory returns an `Experiment`:

    # my_paper/__init__.py
    import runs

    def experiment() -> runs.Experiment:
        base = runs.TrainConfig(task=..., model=..., task_name="my-task", model_name="my-model")
        return runs.Experiment(
            presets={"small": runs.Preset(base, "the paper's Table 1 at CPU scale")},
            sweeps={"table1": lambda presets: runs.Sweep("Table 1", ...)},
        )

    # pyproject.toml
    [project.entry-points."zoo.experiments"]
    my-paper = "my_paper.spec:spec"   # plugins.ExperimentSpec(name="my-paper", factory=...)

Its presets are then `my-paper/small` for `zoo train --preset`, `zoo presets`, `zoo info`; its
sweeps `my-paper/table1` for `zoo sweep`, `zoo sweeps`, `zoo report`, exactly as the built-in
papers'. Nothing here imports JAX.
"""

import dataclasses
import difflib
import functools
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import plugins

from .config import TrainConfig
from .scoreboard import Claim

if TYPE_CHECKING:
    from .sweeps import Sweep


class UnknownNameError(KeyError):
    """No preset or sweep of that name; the message lists close matches."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclasses.dataclass(frozen=True)
class Preset:
    """A named training configuration: a paper's settings as plain values (flags override
    them)."""

    config: TrainConfig
    """The run's whole configuration."""
    description: str = ""
    """What it is, in a line: the figure or table, the scale, how it differs from the paper."""
    authors_counts: tuple[int, int] | None = None
    """The (meta, fast) parameter counts of the authors' model, if known: `zoo info --preset`
    compares them with ours."""


SweepFactory = Callable[[Mapping[str, Preset]], "Sweep"]
"""Builds a sweep from the experiment's presets (by their names within the experiment)."""


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One paper's presets and sweeps, with the paper's reference values inside the sweeps
    (`runs.Sweep.paper`)."""

    presets: Mapping[str, Preset] = dataclasses.field(default_factory=dict)
    """Presets by name within the experiment (`hyperteacher-cpu`, not `paper/hyperteacher-cpu`)."""
    sweeps: Mapping[str, SweepFactory] = dataclasses.field(default_factory=dict)
    """Sweeps by name within the experiment, each built on first use from the presets."""
    description: str = ""
    """The paper and what the experiment covers, in a line."""
    claims: tuple[Claim, ...] = ()
    """The paper's claims and table cells, each with where our number is committed: what
    `zoo scoreboard` scores (see `runs.Claim`)."""

    def __post_init__(self):
        for kind, names in (("preset", self.presets), ("sweep", self.sweeps)):
            for name in names:
                if not name or "/" in name:
                    raise ValueError(
                        f"Experiment {kind} name {name!r} must be non-empty and hold no '/': "
                        "the experiment's own name is its prefix."
                    )
        for name, preset in self.presets.items():
            if not isinstance(preset, Preset):
                raise TypeError(
                    f"Experiment preset {name!r} is a {type(preset).__name__}; wrap its config "
                    "as runs.Preset(config, 'description')."
                )
        for claim in self.claims:
            if not isinstance(claim, Claim):
                raise TypeError(
                    f"Experiment claim {claim!r} is a {type(claim).__name__}; state it as "
                    "runs.Claim(text, data, label, metric, paper=...)."
                )


@functools.cache
def _experiment(qualified: str) -> Experiment:
    entry = plugins.entry("experiments", qualified)
    experiment = entry.spec.load()()
    if not isinstance(experiment, Experiment):
        raise plugins.PluginError(
            f"The factory of experiment {entry.name!r} ({entry.dist}) returned a "
            f"{type(experiment).__name__}; it must return a runs.Experiment."
        )
    return experiment


def experiments() -> dict[str, Experiment]:
    """Every installed experiment, by name (its presets' and sweeps' prefix), in the order
    `zoo presets` lists them: by their specs' `order`, then by name."""
    found = sorted(plugins.entries("experiments"), key=lambda e: e.spec.order)  # stable
    return {e.name: _experiment(e.qualified_name) for e in found}


def presets() -> dict[str, Preset]:
    """Every preset of every installed experiment, by its full name `experiment/preset`."""
    return {
        f"{name}/{preset}": value
        for name, experiment in experiments().items()
        for preset, value in experiment.presets.items()
    }


def sweep_names() -> list[str]:
    """The full names `experiment/sweep` of every installed experiment's sweeps (nothing is
    built)."""
    return [
        f"{name}/{sweep}"
        for name, experiment in experiments().items()
        for sweep in experiment.sweeps
    ]


def _split(kind: str, name: str, names: Callable[[], Iterable[str]], listing: str):
    experiment, _, rest = name.partition("/")
    try:
        found = experiments().get(experiment) if rest else None
    except plugins.PluginError as error:
        raise UnknownNameError(f"Unknown {kind} {name!r}: {error}") from None
    if found is None:
        raise _unknown(kind, name, names(), listing)
    return found, rest


def preset(name: str) -> Preset:
    """The preset called `name` (`experiment/preset`).

    **Raises:** `UnknownNameError` naming close matches."""
    experiment, rest = _split("preset", name, lambda: presets(), "zoo presets")
    if rest not in experiment.presets:
        raise _unknown("preset", name, presets(), "zoo presets")
    return experiment.presets[rest]


def get_preset(name: str) -> TrainConfig:
    """The config of the preset called `name` (`experiment/preset`)."""
    return preset(name).config


@functools.cache
def _sweep(name: str) -> "Sweep":
    experiment, rest = _split("sweep", name, sweep_names, "zoo sweeps")
    if rest not in experiment.sweeps:
        raise _unknown("sweep", name, sweep_names(), "zoo sweeps")
    return experiment.sweeps[rest](experiment.presets)


def get_sweep(name: str) -> "Sweep":
    """The sweep called `name` (`experiment/sweep`), built on first use.

    **Raises:** `UnknownNameError` naming close matches."""
    return _sweep(name)


def sweeps() -> dict[str, "Sweep"]:
    """Every sweep of every installed experiment, built, by its full name."""
    return {name: get_sweep(name) for name in sweep_names()}


def clear_cache() -> None:
    """Forget the experiments and sweeps built so far (after `plugins.register` of one)."""
    _experiment.cache_clear()
    _sweep.cache_clear()


def _unknown(kind: str, name: str, names: Iterable[str], listing: str) -> UnknownNameError:
    close = difflib.get_close_matches(name, list(names), n=3)
    hint = f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
    return UnknownNameError(f"Unknown {kind} {name!r}.{hint} `{listing}` lists them all.")


__all__ = [
    "Experiment",
    "Preset",
    "SweepFactory",
    "UnknownNameError",
    "clear_cache",
    "experiments",
    "get_preset",
    "get_sweep",
    "preset",
    "presets",
    "sweep_names",
    "sweeps",
]
