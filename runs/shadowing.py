"""Whether `zoo`, `tasks`, `plugins` and `runs` are ours.

The distribution `compgen-zoo` installs four top-level packages with generic names, which
distributions on PyPI use too (`zoo`, `runs`, `tasks`). One of those, installed beside it,
either shadows ours (a module of the same name earlier on `sys.path`) or overwrites our
`__init__.py` (pip writes into the same folder). Either way our code would run a stranger's
module and fail far from the cause. `check_packages` says which file is foreign, which
distribution put it there and what to do; the CLI runs it before anything else, and `runs`
on the first use of its attributes (`runs.load`, ...).

Each of our packages carries a marker, `__distribution__ = "compgen-zoo"`, in its
`__init__.py`; the check needs nothing but the standard library.
"""

import importlib
import importlib.metadata
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path

DISTRIBUTION = "compgen-zoo"
"""The distribution installing our top-level packages (`plugins.DISTRIBUTION`)."""
PACKAGES = ("zoo", "tasks", "plugins", "runs")
"""Our top-level packages."""
MARKER = "__distribution__"
"""The attribute each of our packages sets to `DISTRIBUTION`."""

_ROOT = Path(__file__).resolve().parent.parent  # the folder holding our four packages
_checked = False


class ShadowedPackageError(ImportError):
    """A top-level package of ours is another distribution's module."""


def _is_ours(dist: importlib.metadata.Distribution) -> bool:
    name = (dist.metadata["Name"] or "").lower().replace("_", "-")
    if name == DISTRIBUTION:
        return True
    return any(ep.value.startswith("plugins.builtin:") for ep in dist.entry_points)


def _owners(path: Path) -> list[importlib.metadata.Distribution]:
    """The installed distributions other than ours whose record lists the file `path`."""
    found: dict[str, importlib.metadata.Distribution] = {}
    for dist in importlib.metadata.distributions():  # a folder twice on sys.path: twice
        for file in dist.files or ():
            if file.name == path.name and Path(str(dist.locate_file(file))).resolve() == path:
                if not _is_ours(dist):
                    found.setdefault(dist.metadata["Name"], dist)
                break
    return list(found.values())


def _describe(name: str, origin: str | None, expected: Path) -> str:
    """What is wrong with `import name` (found at `origin` rather than at `expected`, or at
    `expected` but without our marker), and how to fix it."""
    ours = f"{DISTRIBUTION} installs the top-level packages {', '.join(PACKAGES)}"
    if origin is None:
        return (
            f"`import {name}` finds no file of {DISTRIBUTION}'s `{name}` package ({expected}). "
            f"Reinstall it: pip install --force-reinstall {DISTRIBUTION}"
        )
    path = Path(origin).resolve()
    owners = _owners(path)
    by = ", ".join(f"{d.metadata['Name']} {d.version}" for d in owners)
    if path == expected:
        who = f"the distribution {by}" if owners else "another distribution"
        fix = f"pip uninstall {owners[0].metadata['Name']}; then " if owners else ""
        return (
            f"{path} is not {DISTRIBUTION}'s: {who} wrote its own top-level `{name}` over it "
            f"({ours}, and one folder cannot hold both). Fix: {fix}pip install "
            f"--force-reinstall {DISTRIBUTION}; keep the other package in a virtual "
            "environment of its own."
        )
    if owners:
        fix = (
            f"pip uninstall {owners[0].metadata['Name']}, or keep it in a virtual environment "
            "of its own"
        )
        where = f" (installed by {by})"
    else:
        folder = path.parent.parent if path.name == "__init__.py" else path.parent
        fix = f"rename or move it, or take {folder} off sys.path (PYTHONPATH, the current folder)"
        where = ""
    return (
        f"`import {name}` finds {path}{where}, which shadows {DISTRIBUTION}'s `{name}` "
        f"({expected}); {ours}. Fix: {fix}."
    )


def foreign_packages(root: Path = _ROOT, names: Sequence[str] = PACKAGES) -> list[str]:
    """A message for each of `names` that Python finds elsewhere than in `root/<name>/`, or
    whose module lacks our marker; empty if all are ours."""
    problems = []
    for name in names:
        expected = (root / name / "__init__.py").resolve()
        module = sys.modules.get(name)
        if module is not None:
            origin = getattr(module, "__file__", None)
        else:
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                spec = None
            origin = spec.origin if spec is not None else None
        if origin is None or Path(origin).resolve() != expected:
            problems.append(_describe(name, origin, expected))
            continue
        try:
            ours = getattr(importlib.import_module(name), MARKER, None) == DISTRIBUTION
        except Exception:  # a stranger's __init__.py in our folder may fail in any way
            ours = False
        if not ours:
            problems.append(_describe(name, origin, expected))
    return problems


def check_packages() -> None:
    """Raise `ShadowedPackageError` if one of our top-level packages is another
    distribution's module; its message names the file and the fix. Checks once per process
    (until it passes)."""
    global _checked
    if _checked:
        return
    problems = foreign_packages()
    if problems:
        raise ShadowedPackageError("\n".join(problems))
    _checked = True
