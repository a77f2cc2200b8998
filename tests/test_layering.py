"""The import arrows of docs/design.md, checked on the source text (parsed with `ast`, nothing
imported).

- `runs -> plugins' registry -> (zoo, tasks)`: `zoo` imports none of `tasks`, `plugins`, `runs`;
  `tasks` imports none of `plugins`, `runs`, and from `zoo` only the JAX-free I/O-spec module
  `zoo.io`; the registry (`plugins/__init__.py`, `_registry.py`, `_spec.py`, `builtin.py`)
  imports no `runs`.
- The built-in plugins (every other module of `plugins/`: the algorithms, hooks and one
  experiment package per paper) are leaves: they may import `runs`, but only its public names,
  as a third party would; `runs` never imports them (it finds them through entry points).
- `runs/` names no paper: none of the seed papers' authors appears in its source.
- No module imports another top-level package's private modules (a module path component
  starting with `_`, other than `__init__`): `from tasks._base import X` in `runs/` is one,
  `from ._base import X` in `zoo/mlp.py` is not (same package).

Every import statement counts, wherever it is (inside functions, under `TYPE_CHECKING`).
Relative imports resolve against the file's package. Dynamic imports (`importlib`, the
registry's `"module:attr"` strings) are not seen.
"""

import ast
import dataclasses
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

PACKAGES = ("zoo", "tasks", "plugins", "runs")
"""The project's importable top-level packages (the layers of docs/design.md)."""

FORBIDDEN: dict[str, tuple[str, ...]] = {
    "zoo": ("tasks", "plugins", "runs"),
    "tasks": ("plugins", "runs", "zoo"),  # except zoo.io, see ALLOWED
    "plugins": ("runs",),
    "runs": (),
}
"""Per layer, the top-level packages its modules must not import."""

REGISTRY = ("plugins/__init__.py", "plugins/_registry.py", "plugins/_spec.py", "plugins/builtin.py")
"""The modules of the plugin registry (the rest of `plugins/` are built-in plugins, leaves)."""

LEAVES = ("plugins.algorithms", "plugins.hooks", "plugins.schug2024", "plugins.lake2019")
LEAVES += ("plugins.madan2021", "plugins.builtin")
"""The built-in plugins, which `runs` must not import."""

PAPERS = r"\b(schug|lake|madan)"
"""The seed papers' first authors, which `runs/` must not name (word starts: not `blake2b`)."""

ALLOWED: dict[str, tuple[str, ...]] = {"tasks": ("zoo.io",)}
"""Per layer, modules of a forbidden package it may import all the same (and their submodules)."""


@dataclasses.dataclass(frozen=True)
class Violation:
    path: str
    line: int
    rule: str
    statement: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.rule} (`{self.statement}`)"


def _package_of(path: str) -> list[str]:
    """The package a file (relative POSIX path) belongs to, as components: `zoo/mlp.py` ->
    `["zoo"]`, `zoo/__init__.py` -> `["zoo"]`, `tests/plugin_pkg/x/m.py` -> its folders."""
    return path.split("/")[:-1]


def _resolve(node: ast.ImportFrom, path: str) -> str:
    """The absolute module `from <module> import ...` names, relative levels resolved."""
    if node.level == 0:
        return node.module or ""
    package = _package_of(path)
    if node.level - 1 > len(package) - 1:
        raise ValueError(f"{path}:{node.lineno}: relative import beyond the top-level package")
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_private(component: str) -> bool:
    return component.startswith("_") and component != "__init__"


def _module_on_disk(module: str, root: Path = ROOT) -> bool:
    """Whether `module` (dotted) is a module or package of the source tree under `root`."""
    base = root.joinpath(*module.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def check_source(
    source: str,
    path: str,
    *,
    layering: bool = True,
    is_module: Callable[[str], bool] = _module_on_disk,
) -> list[Violation]:
    """The violations of the import rules in one file.

    **Arguments:**

    - `source`: the file's text.
    - `path`: its path relative to the repository root, POSIX (`"runs/engine.py"`); its first
      component is the file's top-level package (its layer).
    - `layering`: check the arrows between layers too (else only the private-module rule).
    - `is_module`: whether a dotted name is a module (for `from pkg import _name`, which imports
      a private module only if `pkg._name` is one).

    **Returns:**

    One `Violation` per offending (statement, imported module, rule).
    """
    tree = ast.parse(source, filename=path)
    top = path.split("/")[0]
    leaf = top == "plugins" and path not in REGISTRY
    found: list[Violation] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [(alias.name, alias.name.split(".")) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(node, path)
            targets = []
            for alias in node.names:
                if alias.name == "*":
                    targets.append((base, base.split(".")))
                    continue
                full = f"{base}.{alias.name}"
                # `from pkg import name`: a module path only if `pkg.name` is a module.
                parts = full.split(".") if is_module(full) else base.split(".")
                targets.append((full, parts))
        else:
            continue
        statement = ast.get_source_segment(source, node) or ast.unparse(node)
        statement = " ".join(statement.split())
        for full, parts in targets:
            target_top = parts[0]
            if (
                layering
                and top == "runs"
                and any(full == m or full.startswith(m + ".") for m in LEAVES)
            ):
                rule = "runs must not import a built-in plugin (it finds them by entry point)"
                found.append(Violation(path, node.lineno, rule, statement))
            if leaf and target_top == "runs" and any(_is_private(p) for p in full.split(".")):
                rule = "a built-in plugin imports only public names of runs"
                found.append(Violation(path, node.lineno, rule, statement))
            if layering and not leaf and target_top in FORBIDDEN.get(top, ()):
                allowed = ALLOWED.get(top, ())
                if not any(full == a or full.startswith(a + ".") for a in allowed):
                    extra = f" (only {', '.join(allowed)})" if allowed else ""
                    rule = f"{top} must not import {target_top}{extra}"
                    found.append(Violation(path, node.lineno, rule, statement))
            if target_top in PACKAGES and target_top != top:
                private = [p for p in parts[1:] if _is_private(p)]
                if private:
                    rule = (
                        f"{top} must not import the private module "
                        f"{'.'.join(parts[: parts.index(private[0]) + 1])} of {target_top}"
                    )
                    found.append(Violation(path, node.lineno, rule, statement))
    return list(dict.fromkeys(found))  # one per statement and rule


def check_tree(folders: Iterable[str], *, layering: bool) -> list[Violation]:
    """The violations in every `.py` file under `folders` (relative to the repository root)."""
    found: list[Violation] = []
    for folder in folders:
        for file in sorted((ROOT / folder).rglob("*.py")):
            rel = file.relative_to(ROOT).as_posix()
            found += check_source(file.read_text(encoding="utf-8"), rel, layering=layering)
    return found


def _report(violations: list[Violation]) -> str:
    return f"{len(violations)} import rule violation(s):\n" + "\n".join(map(str, violations))


# ---------------------------------------------------------------------------- the checker


def _no_modules(name: str) -> bool:
    return False


def test_checker_flags_violations():
    source = "import os\nfrom runs.engine import train\n\ndef f():\n    import plugins\n"
    found = check_source(source, "zoo/x.py", is_module=_no_modules)
    assert [(v.line, v.rule) for v in found] == [
        (2, "zoo must not import runs"),
        (5, "zoo must not import plugins"),
    ]
    assert str(found[0]) == "zoo/x.py:2: zoo must not import runs (`from runs.engine import train`)"
    # tasks: zoo.io and nothing else from zoo.
    source = "from zoo.io import IOSpec\nimport zoo.io\nfrom zoo import io\nfrom zoo import MAML\n"
    found = check_source(source, "tasks/x.py", is_module=lambda name: name == "zoo.io")
    assert [v.line for v in found] == [4]
    assert found[0].rule == "tasks must not import zoo (only zoo.io)"
    # Private modules of another package, absolute or via `from pkg import _mod`.
    source = "from tasks._base import Episode\nfrom zoo import _base\nfrom zoo import _lazy\n"
    found = check_source(source, "runs/x.py", is_module=lambda name: name == "zoo._base")
    assert [(v.line, v.rule) for v in found] == [
        (1, "runs must not import the private module tasks._base of tasks"),
        (2, "runs must not import the private module zoo._base of zoo"),
    ]

    # Relative imports resolve against the file's package.
    def resolve(line: str, path: str) -> str:
        node = ast.parse(line).body[0]
        assert isinstance(node, ast.ImportFrom)
        return _resolve(node, path)

    assert resolve("from ..config import X", "tasks/sub/m.py") == "tasks.config"
    assert resolve("from . import _base", "zoo/__init__.py") == "zoo"
    assert resolve("from ._base import X", "zoo/mlp.py") == "zoo._base"
    with pytest.raises(ValueError, match="beyond the top-level package"):
        resolve("from ...runs import cli", "tasks/sub/m.py")


def test_checker_passes_clean_source():
    # zoo: its own private modules (relative or absolute), third-party private modules.
    source = (
        "import jax\nfrom jax._src import core\nfrom ._base import AbstractMetaLearner\n"
        "from . import _base\nfrom zoo._base import count_params\nfrom .mlp import MAML\n"
        "import equinox as eqx\n"
    )
    assert check_source(source, "zoo/m.py", is_module=lambda n: n == "zoo._base") == []
    # runs imports every layer's public modules; `._base` in runs/ is runs' own.
    source = (
        "from plugins import get_model\nfrom zoo.mlp import MAML\nimport tasks.hyperteacher\n"
        "from tasks.config import HyperteacherConfig\nfrom ._base import X\n"
    )
    assert check_source(source, "runs/m.py", is_module=_no_modules) == []
    # tasks may import zoo.io (and its names), plugins may import zoo and tasks.
    source = "from zoo.io import IOSpec\nimport zoo.io\nfrom zoo import io\n"
    assert check_source(source, "tasks/m.py", is_module=lambda n: n == "zoo.io") == []
    source = "from zoo.config import MLPConfig\nfrom tasks.config import HyperteacherConfig\n"
    assert check_source(source, "plugins/m.py", is_module=_no_modules) == []


# ---------------------------------------------------------------------------- the tree


def test_layers_import_downwards_only():
    violations = [v for v in check_tree(PACKAGES, layering=True) if "private" not in v.rule]
    assert not violations, _report(violations)


def test_layers_import_no_private_modules_of_other_packages():
    violations = [v for v in check_tree(PACKAGES, layering=True) if "private" in v.rule]
    assert not violations, _report(violations)


FROZEN = ("tests/plugin_pkg_v010/",)
"""Code kept as an old release had it (a plugin of the 0.1 API, which imported `zoo._base`):
it must not be updated, so the rules of today do not apply to it."""


def test_tests_and_scripts_import_no_private_modules():
    violations = [
        v for v in check_tree(("tests", "scripts"), layering=False) if not v.path.startswith(FROZEN)
    ]
    assert not violations, _report(violations)


def test_checker_tells_the_registry_from_the_built_in_plugins():
    source = "from runs import TrainConfig\nfrom runs.run import _keys\n"
    found = check_source(source, "plugins/schug2024/presets.py", is_module=_no_modules)
    assert [(v.line, v.rule) for v in found] == [
        (2, "a built-in plugin imports only public names of runs")
    ]
    found = check_source(source, "plugins/_registry.py", is_module=_no_modules)
    assert {v.rule for v in found} == {"plugins must not import runs"}
    found = check_source("import plugins.madan2021.meta_rims\n", "runs/x.py", is_module=_no_modules)
    assert [v.rule for v in found] == [
        "runs must not import a built-in plugin (it finds them by entry point)"
    ]


def test_runs_names_no_paper():
    import re

    named = [
        f"{file.relative_to(ROOT)}:{n}: {line.strip()}"
        for file in sorted((ROOT / "runs").rglob("*.py"))
        for n, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(PAPERS, line, re.IGNORECASE)
    ]
    assert not named, "runs/ names a paper; move it into the paper's plugin:\n" + "\n".join(named)
