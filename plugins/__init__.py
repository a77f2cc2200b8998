"""The plugin registry.

Models and tasks are found through the entry-point groups `zoo.models` and `zoo.tasks`
(built-in ones included), or added at run time with `register`. Each is described by a light
spec (`ModelSpec`, `TaskSpec`) whose factory is imported only when the plugin is built.
"""

from ._registry import (
    AmbiguousPluginError,
    Entry,
    FailedPlugin,
    PluginError,
    UnknownPluginError,
    failed_plugins,
    format_listing,
    list_models,
    list_tasks,
    model_spec,
    register,
    task_spec,
)
from ._spec import ModelSpec, TaskSpec

__all__ = [
    "AmbiguousPluginError",
    "Entry",
    "FailedPlugin",
    "ModelSpec",
    "PluginError",
    "TaskSpec",
    "UnknownPluginError",
    "failed_plugins",
    "format_listing",
    "list_models",
    "list_tasks",
    "model_spec",
    "register",
    "task_spec",
]
