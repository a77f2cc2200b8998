"""The state of a training run: one `eqx.Module` that every algorithm trains and every
checkpoint saves."""

import equinox as eqx
from jaxtyping import Array, Int, PRNGKeyArray, PyTree


class TrainState(eqx.Module):
    """Everything that changes while a run trains.

    The step counter and the run's key live here, so that a compiled chunk of steps is a pure
    function of the state: step `s` draws its randomness from `fold_in(key, s)`, and a run split
    into chunks differently (or killed and resumed) gives the same numbers.
    """

    step: Int[Array, ""]
    """Steps taken."""
    model: PyTree
    """The model being trained (any `zoo.AbstractLearner`; non-array leaves included)."""
    opt_state: PyTree
    """The optimizer's state."""
    key: PRNGKeyArray
    """The run's training key; constant over the run."""
    extra: PyTree = None
    """Algorithm state beside the model (environment states, recurrent carries, ...);
    `None` for algorithms that keep none."""
