"""A clone of the repository is self-contained: no tracked file cites notes that live outside it.

The authors' settings and the build specifications are the repository's own pages
(`docs/authors-settings.md`, `docs/specs/`, `docs/design.md`); a file that pointed at a folder
beside the checkout, or at the working notes those pages were written from, would send a
reader of a clone nowhere.
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Written in pieces, so that this file does not match its own patterns.
FORBIDDEN = (
    "../" + "shared",
    "REFERENCE" + "_FACTS",
    "schug_gridworlds" + ".md",
    "meta_rims" + ".md",
    "env_choice" + ".md",
    "shared/" + "DESIGN.md",
)
"""Names that only make sense outside the repository."""

EXEMPT = frozenset(
    {
        "CHANGELOG.md",  # history: it may say where the pages came from
    }
)
"""Tracked files the check skips."""


def offending_lines(text: str) -> list[tuple[int, str]]:
    """`(line number, line)` of every line of `text` that names one of `FORBIDDEN`."""
    pattern = re.compile("|".join(re.escape(name) for name in FORBIDDEN))
    return [(i, line) for i, line in enumerate(text.splitlines(), 1) if pattern.search(line)]


def tracked_files() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    return [name for name in out.decode().split("\0") if name]


def test_the_pattern_finds_each_name():
    for name in FORBIDDEN:
        assert offending_lines(f"see {name}, section 2") == [(1, f"see {name}, section 2")]
    assert offending_lines("see docs/authors-settings.md and docs/specs/meta-rims.md") == []


def test_no_tracked_file_cites_notes_outside_the_repository():
    found = []
    for name in tracked_files():
        path = ROOT / name
        if name in EXEMPT or not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", errors="ignore")
        found += [f"{name}:{i}: {line.strip()}" for i, line in offending_lines(text)]
    assert not found, (
        "These lines cite files outside the repository; point them at the repository's own "
        "pages (docs/authors-settings.md, docs/specs/, docs/design.md) instead:\n"
        + "\n".join(found)
    )
