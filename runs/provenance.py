"""Where a run's code came from, recorded in the run directory's `history.jsonl` at every start
and resume, so that each reported number names the commit it was produced at."""

import functools
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

import plugins

__all__ = ["provenance"]

_SOURCE = Path(__file__).resolve().parent.parent  # the checkout holding runs/, zoo/, tasks/


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(_SOURCE), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@functools.cache
def provenance() -> dict[str, Any]:
    """`{"version", "commit", "dirty", "jax", "python", "host"}` of this process: the installed
    version of the distribution (`compgen-zoo`), the git commit of its source checkout with `dirty` set when tracked files
    differ from it (both None when the code is not a git checkout, e.g. a wheel), JAX's version,
    Python's and the host name."""
    import jax

    try:
        version = metadata.version(plugins.own_distribution())
    except metadata.PackageNotFoundError:
        version = None
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {
        "version": version,
        "commit": commit,
        "dirty": None if status is None else bool(status),
        "jax": jax.__version__,
        "python": platform.python_version(),
        "host": platform.node(),
    }
