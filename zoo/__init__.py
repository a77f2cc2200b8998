"""zoo: typed Equinox learners for compositional generalization.

Submodules are imported on first use, so that `import zoo.config` (done when plugins are
listed) does not import JAX. `IOSpec` is imported at once: its module imports no JAX.
"""

import importlib
from typing import TYPE_CHECKING

from .io import IOSpec

__distribution__ = "compgen-zoo"  # checked by runs.shadowing: a foreign `zoo` lacks it

if TYPE_CHECKING:
    from ._base import (
        FAST,
        FIXED,
        META,
        SLOW,
        AbstractActorCritic,
        AbstractIdentifiable,
        AbstractInContextLearner,
        AbstractLearner,
        AbstractMetaLearner,
        AbstractModular,
        AbstractModuleActivity,
        AbstractSplitForward,
        Label,
        array_labels,
        checked_labels,
        count_params,
        param_counts,
    )
    from .agents import ActorCritic
    from .linear_hypernet import LinearHypernet
    from .mlp import ANIL, MAML
    from .nonlinear_hypernet import NonlinearHypernet
    from .rims import RIMCell, RIMNoise
    from .seq2seq import MetaSeq2Seq
    from .shallow_hypernet import ShallowHypernet

_BASE = (
    "FAST",
    "FIXED",
    "META",
    "SLOW",
    "AbstractActorCritic",
    "AbstractIdentifiable",
    "AbstractInContextLearner",
    "AbstractLearner",
    "AbstractMetaLearner",
    "AbstractModular",
    "AbstractModuleActivity",
    "AbstractSplitForward",
    "Label",
    "array_labels",
    "checked_labels",
    "count_params",
    "param_counts",
)
_LAZY = {
    **dict.fromkeys(_BASE, "._base"),
    "LinearHypernet": ".linear_hypernet",
    "NonlinearHypernet": ".nonlinear_hypernet",
    "ANIL": ".mlp",
    "MAML": ".mlp",
    "ShallowHypernet": ".shallow_hypernet",
    "MetaSeq2Seq": ".seq2seq",
    "ActorCritic": ".agents",
    "RIMCell": ".rims",
    "RIMNoise": ".rims",
}

__all__ = [
    "ANIL",
    "FAST",
    "FIXED",
    "MAML",
    "META",
    "SLOW",
    "AbstractActorCritic",
    "AbstractIdentifiable",
    "AbstractInContextLearner",
    "AbstractLearner",
    "AbstractMetaLearner",
    "AbstractModular",
    "AbstractModuleActivity",
    "AbstractSplitForward",
    "ActorCritic",
    "IOSpec",
    "Label",
    "LinearHypernet",
    "MetaSeq2Seq",
    "NonlinearHypernet",
    "RIMCell",
    "RIMNoise",
    "ShallowHypernet",
    "array_labels",
    "checked_labels",
    "count_params",
    "param_counts",
]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'zoo' has no attribute {name!r}")
