"""The specs the entry points point at. Importing this module imports no JAX."""

from plugins import AlgorithmSpec, ExperimentSpec, HookSpec, ModelSpec, PretrainedSpec, TaskSpec

from .config import MultitaskConfig, SineConfig, SineMLPConfig, StepLogConfig

sine = TaskSpec(
    name="sine",
    config=SineConfig,
    factory="zoo_full_plugin.task:make",
    description="Full plugin: sine regression with held-out phases.",
)

sine_mlp = ModelSpec(
    name="sine-mlp",
    config=SineMLPConfig,
    factory="zoo_full_plugin.model:make",
    description="Full plugin: tanh MLP with a fast readout.",
)

multitask = AlgorithmSpec(
    name="multitask",
    config=MultitaskConfig,
    factory="zoo_full_plugin.algorithm:make",
    algorithm="zoo_full_plugin.algorithm:Multitask",
    description="Full plugin: the multi-task baseline (no adaptation)",
    preference=-1,  # asked for by name; bilevel stays the default for meta-learners
)

sines = ExperimentSpec(
    name="sines",
    factory="zoo_full_plugin.experiment:experiment",
    paper="zoo-full-plugin example (no paper)",
    description="Full plugin: adaptation against the multi-task baseline.",
)

step_log = HookSpec(
    name="step-log",
    config=StepLogConfig,
    factory="zoo_full_plugin.hooks:make",
    description="Full plugin: appends each step's loss to OUT/step-log.txt.",
)

sine_anil_tiny = PretrainedSpec(
    name="sine-anil-tiny",
    path="zoo_full_plugin:pretrained/sine-anil-tiny",
    description="Full plugin: preset sines/sine-anil, 4 steps (zoo export of a test run).",
)
