"""The plugin registry.

Plugins of each kind in `KINDS` (models, tasks, algorithms, experiments, hooks, pretrained
models) are found through the kind's entry-point group (`zoo.models`, `zoo.tasks`,
`zoo.algorithms`, `zoo.experiments`, `zoo.hooks`, `zoo.pretrained`; built-in ones included),
or added at run time with `register`. Each is described by a light spec (`ModelSpec`,
`TaskSpec`, `AlgorithmSpec`, `ExperimentSpec`, `HookSpec`, `PretrainedSpec`) whose factory is
imported only when the plugin is built (a pretrained model has none: `runs.load` reads it).

A plugin package declares `dependencies = ["compgen-zoo"]` (`DISTRIBUTION`): the distribution
that installs `zoo`, `tasks`, `plugins` and `runs`.
"""

from ._registry import (
    DISTRIBUTION,
    KINDS,
    AmbiguousPluginError,
    Entry,
    FailedPlugin,
    Kind,
    PluginError,
    PluginWarning,
    UnknownGroup,
    UnknownPluginError,
    algorithm_spec,
    entries,
    entry,
    experiment_spec,
    failed_plugins,
    format_listing,
    hook_spec,
    list_models,
    list_tasks,
    model_spec,
    own_distribution,
    pretrained_spec,
    register,
    reset,
    spec,
    task_spec,
    unknown_groups,
    unregister,
)
from ._spec import (
    AlgorithmSpec,
    ExperimentSpec,
    HookSpec,
    ModelSpec,
    PretrainedSpec,
    Spec,
    TaskSpec,
)

__distribution__ = "compgen-zoo"  # checked by runs.shadowing: a foreign `plugins` lacks it

__all__ = [
    "DISTRIBUTION",
    "KINDS",
    "AlgorithmSpec",
    "AmbiguousPluginError",
    "Entry",
    "ExperimentSpec",
    "FailedPlugin",
    "HookSpec",
    "Kind",
    "ModelSpec",
    "PluginError",
    "PluginWarning",
    "PretrainedSpec",
    "Spec",
    "TaskSpec",
    "UnknownGroup",
    "UnknownPluginError",
    "algorithm_spec",
    "entries",
    "entry",
    "experiment_spec",
    "failed_plugins",
    "format_listing",
    "hook_spec",
    "list_models",
    "list_tasks",
    "model_spec",
    "own_distribution",
    "pretrained_spec",
    "register",
    "reset",
    "spec",
    "task_spec",
    "unknown_groups",
    "unregister",
]
