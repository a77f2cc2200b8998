"""Specs of the built-in models and tasks. `pyproject.toml` registers each of them under the
`zoo.models` / `zoo.tasks` entry points, exactly as a third-party package registers its own.
Only configuration modules are imported here (no JAX)."""

from tasks.config import HyperteacherConfig
from zoo.config import LinearHypernetConfig

from ._spec import ModelSpec, TaskSpec

linear_hypernet = ModelSpec(
    name="linear-hypernet",
    config=LinearHypernetConfig,
    factory="zoo.linear_hypernet:make",
    description="Linear hypernetwork: NTK ReLU MLP generated from task embeddings (Schug et al. 2024, D.3)",
)

hyperteacher = TaskSpec(
    name="hyperteacher",
    config=HyperteacherConfig,
    factory="tasks.hyperteacher:make",
    description="Hyperteacher: teacher MLP whose hidden layers are modular compositions (Schug et al. 2024, C.2)",
)
