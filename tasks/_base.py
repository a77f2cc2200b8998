"""What every task provides: fixed-shape episodes from a key (`AbstractTask`), or an
environment to act in (`AbstractEnvironment`)."""

import abc

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray, PyTree

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


class AbstractEnvironment(eqx.Module):
    """An environment acted in: a task of another kind, trained on by reinforcement learning.

    Static configuration plus jittable, vmappable `reset` and `step` over a state that is a
    pytree of arrays. An environment knows nothing of the agent acting in it: it says what its
    observations and actions look like (`io`, an `IOSpec.environment`), and how an episode
    starts and moves on.

    Observations are dicts of arrays: `"image"` (`uint8 [*io.x_shape]`, e.g. MiniGrid's
    egocentric `7 x 7 x (type, colour, state)` view), `"direction"` (`int32 []`) and, where the
    environment has a mission, `"mission"` (`int32 [io.mission_len]` token ids, padded with 0).
    An episode succeeds when it terminates with a positive reward.
    """

    @property
    @abc.abstractmethod
    def io(self) -> IOSpec:
        """Shapes of observations and the number of actions (`IOSpec.environment`)."""

    @property
    @abc.abstractmethod
    def max_steps(self) -> int:
        """Steps after which an episode is truncated."""

    @abc.abstractmethod
    def reset(self, key: PRNGKeyArray) -> tuple[PyTree[Array], dict[str, Array]]:
        """A fresh episode: `(state, observation)`. Jittable and vmappable over `key`."""

    @abc.abstractmethod
    def step(
        self, state: PyTree[Array], action: Int[Array, ""], key: PRNGKeyArray
    ) -> tuple[PyTree[Array], dict[str, Array], Float[Array, ""], Bool[Array, ""], Bool[Array, ""]]:
        """`(state, observation, reward, terminated, truncated)` after `action`; `key` drives
        whatever the environment does at random (e.g. moving obstacles). Jittable and
        vmappable."""

    def show(self, state: PyTree[Array]) -> np.ndarray | None:
        """A picture of one (unbatched, concrete) state, `uint8 RGB [h, w, 3]`, for a person
        to look at (`zoo show`). NumPy, not jitted. `None` (the default) where there is none."""
        del state
        return None

    def observe(self, state: PyTree[Array]) -> dict[str, Array] | None:
        """The observation of `state`, where it is a function of the state alone, as `reset`
        and `step` return it; `None` (the default) where it is not. With it, `autoreset_step`
        observes once, the state it keeps, instead of observing both the stepped and the fresh
        state and choosing (the observation is often most of a step's cost)."""
        del state
        return None


def autoreset_step(
    env: AbstractEnvironment, state: PyTree[Array], action: Int[Array, ""], key: PRNGKeyArray
) -> tuple[PyTree[Array], dict[str, Array], Float[Array, ""], Bool[Array, ""], Bool[Array, ""]]:
    """`env.step`, then a fresh episode in place of a finished one: `(state, observation,
    reward, done, success)`, where `done = terminated | truncated` belongs to the step taken
    and the returned state and observation are those of the next episode where `done`.

    `reset` runs at every call (under `vmap`, a choice between both states costs no less than
    computing both); where the environment has `observe`, only the kept state is observed."""
    step_key, reset_key = jax.random.split(key)
    state, obs, reward, terminated, truncated = env.step(state, action, step_key)
    fresh_state, fresh_obs = env.reset(reset_key)
    done = terminated | truncated
    state = jax.tree.map(lambda new, old: jnp.where(done, new, old), fresh_state, state)
    observed = env.observe(state)  # then the observations of `step` and `reset` go unused
    if observed is None:
        obs = jax.tree.map(lambda new, old: jnp.where(done, new, old), fresh_obs, obs)
    else:
        obs = observed
    return state, obs, reward, done, terminated & (reward > 0)
