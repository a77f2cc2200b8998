"""Task generators: pure, jittable functions key -> episodes (see `AbstractTask`).

Deliberately light: importing `tasks` (or `tasks.config`) imports no JAX; `AbstractTask`,
`Episode` and `Split` are imported on first use, and a generator's module (e.g.
`tasks.hyperteacher`) is imported to build it.
"""

import importlib
from typing import TYPE_CHECKING

__distribution__ = "compgen-zoo"  # checked by runs.shadowing: a foreign `tasks` lacks it

if TYPE_CHECKING:
    from ._base import AbstractEnvironment, AbstractTask, Episode, Split, autoreset_step

_LAZY = {
    "AbstractEnvironment": "._base",
    "autoreset_step": "._base",
    "AbstractTask": "._base",
    "Episode": "._base",
    "Split": "._base",
}

__all__ = ["AbstractEnvironment", "AbstractTask", "Episode", "Split", "autoreset_step"]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'tasks' has no attribute {name!r}")
