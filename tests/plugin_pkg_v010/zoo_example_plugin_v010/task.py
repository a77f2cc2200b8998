"""The `example-regression` task: linear regression `y = x @ W_t`, with `W_t` drawn from a
fixed pool of matrices made once from the build key."""

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
from jaxtyping import Array, Float, PRNGKeyArray

from tasks._base import AbstractTask, Episode, Split

from .config import ExampleRegressionConfig


class ExampleRegression(AbstractTask):
    """A family of linear regression tasks; the latent of an episode is the one-hot id of its
    weight matrix. Task ids `[0, num_tasks // 2)` form the `"train"` pool, the others the
    `"test"` pool, so that test tasks are never seen in training."""

    config: ExampleRegressionConfig = eqx.field(static=True)
    weights: Float[Array, "num_tasks in_features out_features"]

    def __init__(self, config: ExampleRegressionConfig, *, key: PRNGKeyArray):
        if config.num_tasks < 2:
            raise ValueError(
                f"num_tasks must be at least 2 (one per pool), got {config.num_tasks}."
            )
        self.config = config
        shape = (config.num_tasks, config.in_features, config.out_features)
        self.weights = jr.normal(key, shape) / jnp.sqrt(config.in_features)

    @property
    def in_features(self) -> int:
        return self.config.in_features

    @property
    def out_features(self) -> int:
        return self.config.out_features

    def pools(self) -> tuple[str, ...]:
        return ("train", "test")

    def sample(self, key: PRNGKeyArray, pool: str = "train") -> Episode:
        half = self.config.num_tasks // 2
        if pool == "train":
            low, high = 0, half
        elif pool == "test":
            low, high = half, self.config.num_tasks
        else:
            raise ValueError(f"Unknown pool {pool!r}; the pools are {self.pools()}.")
        task_key, support_key, query_key = jr.split(key, 3)
        task_id = jr.randint(task_key, (), low, high)
        weight = self.weights[task_id]
        shape = (self.config.shots, self.config.in_features)
        x_support = jr.normal(support_key, shape)
        x_query = jr.normal(query_key, shape)
        return Episode(
            support=Split(x_support, x_support @ weight),
            query=Split(x_query, x_query @ weight),
            latent=jax.nn.one_hot(task_id, self.config.num_tasks),
        )

    def loss(self, pred: Array, y: Array) -> Float[Array, ""]:
        return jnp.mean((pred - y) ** 2)

    def metrics(self, pred: Array, y: Array) -> dict[str, Float[Array, ""]]:
        return {"mse": self.loss(pred, y)}


def make(config: ExampleRegressionConfig, *, key: PRNGKeyArray) -> ExampleRegression:
    """The factory named by the `example-regression` spec."""
    return ExampleRegression(config, key=key)
