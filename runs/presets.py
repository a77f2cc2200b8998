"""Named presets and sweeps of every installed experiment (`zoo.experiments` plugins): the
lookups of `runs.experiments` under the names the CLI and scripts use. Nothing here names a
paper; the built-in papers' presets live in their own experiment plugins under `plugins/`."""

from .experiments import UnknownNameError, get_preset, get_sweep, preset, presets, sweeps

__all__ = ["UnknownNameError", "get_preset", "get_sweep", "preset", "presets", "sweeps"]
