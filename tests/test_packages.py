"""Our top-level packages have generic names (`zoo`, `tasks`, `plugins`, `runs`): a foreign
module of one of these names, ahead on the path or written over ours, is named with the fix."""

import os
import pathlib
import shutil
import subprocess
import sys
import textwrap
import tomllib

from runs.shadowing import DISTRIBUTION, PACKAGES, foreign_packages

REPO = pathlib.Path(__file__).resolve().parents[1]

LIST = "from runs.cli import main; raise SystemExit(main(['list']))"


def _run(code: str, *path: pathlib.Path) -> subprocess.CompletedProcess[str]:
    """Run `code` with `path` first on `sys.path` (in the first folder of `path`, so that the
    current folder is no checkout of ours)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, path))}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=path[0], capture_output=True, text=True
    )


def _dist_info(folder: pathlib.Path, name: str, version: str, files: list[str]) -> None:
    """A distribution `name` that installed `files` into `folder`, as pip records one."""
    info = folder / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in [*files, f"{info.name}/RECORD"]))


def test_the_distribution_has_a_name_of_its_own():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION == "compgen-zoo"
    plugin = tomllib.loads((REPO / "tests" / "plugin_pkg" / "pyproject.toml").read_text())
    assert plugin["project"]["dependencies"] == [DISTRIBUTION]
    wheel = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]
    assert tuple(wheel["targets"]["wheel"]["packages"]) == PACKAGES
    assert foreign_packages() == []


def test_a_foreign_package_ahead_on_the_path_is_named(tmp_path: pathlib.Path):
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "__init__.py").write_text("def add(todo): ...\n")
    _dist_info(tmp_path, "tasks", "2.8.0", ["tasks/__init__.py"])
    result = _run(LIST, tmp_path, REPO)
    assert result.returncode == 2, result.stderr
    message = result.stderr
    assert message.startswith(f"zoo: `import tasks` finds {tmp_path / 'tasks' / '__init__.py'}")
    assert "(installed by tasks 2.8.0)" in message and "pip uninstall tasks" in message
    assert str(REPO / "tasks" / "__init__.py") in message and "Traceback" not in message

    # A module of no distribution (a stray file in the current folder, say), met by runs.load.
    (tmp_path / "zoo.py").write_text("")
    result = _run("import runs; runs.load('nowhere')", tmp_path, REPO)
    assert "ShadowedPackageError: `import zoo` finds" in result.stderr
    assert f"take {tmp_path} off sys.path" in result.stderr


def test_a_foreign_init_written_over_ours_is_named(tmp_path: pathlib.Path):
    """`pip install runs` writes PyPI's `runs/__init__.py` over ours (one folder holds both)."""
    for package in PACKAGES:
        shutil.copytree(
            REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    (tmp_path / "runs" / "__init__.py").write_text(
        textwrap.dedent(
            """\
            def run(*commands):
                ...
            """
        )
    )
    _dist_info(tmp_path, "runs", "1.3.0", ["runs/__init__.py"])
    result = _run(LIST, tmp_path)
    assert result.returncode == 2, result.stderr
    init = tmp_path / "runs" / "__init__.py"
    assert result.stderr.startswith(f"zoo: {init} is not compgen-zoo's: the distribution runs")
    assert "pip uninstall runs; then pip install --force-reinstall compgen-zoo" in result.stderr
