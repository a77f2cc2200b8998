"""The specs the entry points point at. Importing this module imports no JAX."""

from plugins import ModelSpec, TaskSpec

from .config import ExampleANILConfig, ExampleRegressionConfig

example_anil = ModelSpec(
    name="v010-example-anil",
    config=ExampleANILConfig,
    factory="zoo_example_plugin_v010.model:make",
    description="Example plugin: 1-hidden-layer tanh MLP whose readout adapts per task (ANIL).",
)

example_regression = TaskSpec(
    name="v010-example-regression",
    config=ExampleRegressionConfig,
    factory="zoo_example_plugin_v010.task:make",
    description="Example plugin: linear regression tasks y = x @ W from a fixed pool of W.",
)
