"""Configs of the example plugin: plain frozen dataclasses, whose fields become CLI flags."""

import dataclasses


@dataclasses.dataclass(frozen=True)
class ExampleANILConfig:
    """Config of the `example-anil` model."""

    hidden: int = 16
    """Width of the hidden layer."""


@dataclasses.dataclass(frozen=True)
class ExampleRegressionConfig:
    """Config of the `example-regression` task."""

    in_features: int = 4
    """Size of one input vector."""
    out_features: int = 1
    """Size of one target vector."""
    num_tasks: int = 8
    """Size of the fixed pool of weight matrices; the first half is the `"train"` pool, the
    rest the `"test"` pool."""
    shots: int = 8
    """Number of examples in the support set, and in the query set, of one episode."""
