"""The specs the entry points point at. Importing this module imports no JAX."""

from plugins import ModelSpec, TaskSpec

from .config import ExampleActivationMLPConfig, ExampleANILConfig, ExampleRegressionConfig

example_anil = ModelSpec(
    name="example-anil",
    config=ExampleANILConfig,
    factory="zoo_example_plugin.model:make",
    description="Example plugin: 1-hidden-layer tanh MLP whose readout adapts per task (ANIL).",
)

example_activation_mlp = ModelSpec(
    name="example-activation-mlp",
    config=ExampleActivationMLPConfig,
    factory="zoo_example_plugin.activation_mlp:make",
    description="Example plugin: eqx.nn.MLP body (an activation-function leaf) and a fast readout.",
)

example_regression = TaskSpec(
    name="example-regression",
    config=ExampleRegressionConfig,
    factory="zoo_example_plugin.task:make",
    description="Example plugin: linear regression tasks y = x @ W from a fixed pool of W.",
)
