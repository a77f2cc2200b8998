"""What every task generator provides: fixed-shape episodes from a key."""

import abc

import equinox as eqx
import numpy as np
from jaxtyping import Array, Float, PRNGKeyArray, PyTree

from zoo.io import IOSpec


class Split(eqx.Module):
    """A labelled set of inputs and targets (the support or the query set of one task)."""

    x: PyTree[Array]
    y: PyTree[Array]


class Episode(eqx.Module):
    """One task: a support set to adapt on, a query set to be scored on, and the task's
    ground-truth latent code where the generator has one (else an empty array)."""

    support: Split
    query: Split
    latent: Float[Array, "..."]


class AbstractTask(eqx.Module):
    """A task generator: static configuration plus a jittable, vmappable `sample`.

    A task knows nothing of the model that learns it. It says what its data look like (`io`:
    shapes, dtypes, vocabularies; a model is built from it), how to score a prediction
    (`loss`, `metrics`), and which pools of tasks exist (`pools`: at least `"train"`;
    evaluation pools beside it).
    """

    @property
    @abc.abstractmethod
    def io(self) -> IOSpec:
        """Shapes and dtypes of one example's input and target, the size of a prediction
        vector, and the vocabularies of token data: what a model factory is given to build a
        model for this task."""

    @abc.abstractmethod
    def pools(self) -> tuple[str, ...]:
        """Names of the task pools `sample` can draw from; `"train"` comes first."""

    @abc.abstractmethod
    def sample(self, key: PRNGKeyArray, pool: str = "train") -> Episode:
        """Draw one episode from `pool`. Jittable and vmappable over `key`."""

    @abc.abstractmethod
    def loss(self, pred: Array, y: Array) -> Float[Array, ""]:
        """Mean loss of predictions `pred` against targets `y` (one split of one task)."""

    @abc.abstractmethod
    def metrics(self, pred: Array, y: Array) -> dict[str, Float[Array, ""]]:
        """Named scalar metrics (e.g. `accuracy`) of `pred` against `y`."""

    def test_episodes(self) -> list[Episode]:
        """Fixed test episodes scored whole, beside the sampled pools (e.g. Lake 2019's SCAN
        test sets: thousands of queries, evaluated in batches). Default: none."""
        return []

    def modules(self) -> Float[Array, "modules ..."] | None:
        """The ground-truth modules of the generator, `[M, fan_in, hidden]`, where the task's
        layer of a task with code `z` is `sum_m z[m] * modules[m]` (for module alignment);
        `None` where there are none to compare."""
        return None

    def show(self, episode: Episode) -> list[tuple[np.ndarray, str]] | None:
        """Pictures of one (unbatched, concrete) episode for a person to check by eye, as
        `(uint8 RGB image [h, w, 3], title)` panels in reading order (support before query);
        `zoo show` lays them out. NumPy, not jitted. `None` (the default) where the task has
        no picture of its episodes."""
        del episode
        return None
