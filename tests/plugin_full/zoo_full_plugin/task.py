"""The `sine` task: regression onto `a sin(x + p)`, one (a, p) per episode."""

import equinox as eqx
import jax.numpy as jnp
import jax.random as jr
from jaxtyping import Array, Float, PRNGKeyArray

from tasks import AbstractTask, Episode, Split
from zoo import IOSpec

from .config import SineConfig


class Sine(AbstractTask):
    """Sine regression; the `ood` pool holds the last phase of the grid, never trained on."""

    config: SineConfig = eqx.field(static=True)

    @property
    def io(self) -> IOSpec:
        return IOSpec.vectors(1, 1)

    def pools(self) -> tuple[str, ...]:
        return ("train", "test", "ood")

    def sample(self, key: PRNGKeyArray, pool: str = "train") -> Episode:
        if pool not in self.pools():
            raise ValueError(f"Unknown pool {pool!r}; the pools are {self.pools()}.")
        c = self.config
        a_key, p_key, s_key, q_key = jr.split(key, 4)
        amplitude = jnp.linspace(0.5, 2.0, c.amplitudes)[jr.randint(a_key, (), 0, c.amplitudes)]
        seen = c.phases - 1
        index = jr.randint(p_key, (), 0, seen) if pool != "ood" else seen
        phase = jnp.linspace(0.0, jnp.pi, c.phases)[index]

        def split(k) -> Split:
            x = jr.uniform(k, (c.shots, 1), minval=-jnp.pi, maxval=jnp.pi)
            return Split(x, amplitude * jnp.sin(x + phase))

        return Episode(
            support=split(s_key), query=split(q_key), latent=jnp.stack([amplitude, phase])
        )

    def loss(self, pred: Array, y: Array) -> Float[Array, ""]:
        return jnp.mean((pred - y) ** 2)

    def metrics(self, pred: Array, y: Array) -> dict[str, Float[Array, ""]]:
        return {"mse": self.loss(pred, y)}


def make(config: SineConfig, *, key: PRNGKeyArray) -> Sine:
    """The factory of the `sine` task (it draws nothing at build time)."""
    del key
    return Sine(config)
