"""Where a run's code came from and what it ran on, recorded in the run directory's
`history.jsonl` at every start and resume, so that each reported number names the commit it was
produced at and the things its exact bits depend on (README, "Same seed, same numbers")."""

import functools
import os
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


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


# Vector instruction sets that change how XLA:CPU compiles (and so the last bits of a result).
_SIMD = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "amx_tile")
_SIMD_ARM = ("asimd", "sve", "sve2", "sme")


def _cpu() -> str | None:
    """The host processor: its model and the vector instruction sets it has, e.g. `"AMD EPYC
    (sse4_2 avx avx2 fma)"` (from /proc/cpuinfo; `platform.processor()` where there is none).
    XLA compiles for the host's instruction sets, so two hosts of one model name but other
    sets (a virtual machine's "AMD EPYC" with or without AVX-512) can give other numbers."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or None
    fields: dict[str, str] = {}
    for line in text.splitlines():  # the first processor's fields
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    model = fields.get("model name") or fields.get("CPU part") or platform.processor()
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    simd = [f for f in (*_SIMD, *_SIMD_ARM) if f in flags]
    return f"{model} ({' '.join(simd)})" if simd else model or None


def _cores() -> int | None:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


@functools.cache
def provenance() -> dict[str, Any]:
    """`{"version", "commit", "dirty", "jax", "jaxlib", "python", "host", "cpu", "cores"}` of
    this process: the zoo's installed version, the git commit of its source checkout with `dirty`
    set when tracked files differ from it (both None when the code is not a git checkout, e.g. a
    wheel), the versions of JAX, jaxlib and Python, the host name, its processor (`_cpu`) and
    the number of cores this process may run on (XLA:CPU sizes its thread pool by it, and at
    larger shapes the thread count changes the last bits of a result)."""
    import jax

    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {
        "version": _version(plugins.own_distribution()),
        "commit": commit,
        "dirty": None if status is None else bool(status),
        "jax": jax.__version__,
        "jaxlib": _version("jaxlib"),
        "python": platform.python_version(),
        "host": platform.node(),
        "cpu": _cpu(),
        "cores": _cores(),
    }
