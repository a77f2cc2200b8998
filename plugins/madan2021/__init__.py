"""Madan et al. 2021: its presets, sweeps and reference values as the `madan2021` experiment
(entry point `zoo.experiments`). This module is light (no JAX); the presets are built by
`madan2021.presets.experiment` on first use."""

from plugins import ExperimentSpec

spec = ExperimentSpec(
    name="madan2021",
    factory="plugins.madan2021.presets:experiment",
    paper="Madan et al. 2021, Fast and slow learning of recurrent independent mechanisms (ICLR)",
    description="Madan et al. 2021: presets and sweeps",
    order=-1,  # zoo presets lists schug2024, lake2019, madan2021 first, in that order
)
