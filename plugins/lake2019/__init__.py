"""Lake 2019: its presets, sweeps and reference values as the `lake2019` experiment
(entry point `zoo.experiments`). This module is light (no JAX); the presets are built by
`lake2019.presets.experiment` on first use."""

from plugins import ExperimentSpec

spec = ExperimentSpec(
    name="lake2019",
    factory="plugins.lake2019.presets:experiment",
    paper="Lake 2019, Compositional generalization through meta sequence-to-sequence learning (NeurIPS)",
    description="Lake 2019: presets and sweeps",
    order=-2,  # zoo presets lists schug2024, lake2019, madan2021 first, in that order
)
