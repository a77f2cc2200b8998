"""Schug et al. 2024: its presets, sweeps and reference values as the `schug2024` experiment
(entry point `zoo.experiments`). This module is light (no JAX); the presets are built by
`schug2024.presets.experiment` on first use."""

from plugins import ExperimentSpec

spec = ExperimentSpec(
    name="schug2024",
    factory="plugins.schug2024.presets:experiment",
    paper="Schug et al. 2024, Discovering modular solutions that generalize compositionally (ICLR)",
    description="Schug et al. 2024: presets and sweeps",
    order=-3,  # zoo presets lists schug2024, lake2019, madan2021 first, in that order
)
