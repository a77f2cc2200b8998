"""A complete third-party package (`tests/plugin_full`: a model, a task, an algorithm, an
experiment with presets and a sweep, a hook and a pretrained model), pip-installed and driven
end to end through the `zoo` command line and `runs.load`, as a user of it would."""

import csv
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from conftest import pip_install_offline

REPO = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = REPO / "tests" / "plugin_full"
DIST = "zoo-full-plugin"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The package pip-installed into a directory of its own, seen by subprocesses only."""
    target = tmp_path_factory.mktemp("full-site")
    pip_install_offline(PACKAGE, target)
    return target


def zoo(site: pathlib.Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    script = shutil.which("zoo")
    command = [*([script] if script else [sys.executable, "-m", "runs.cli"]), *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"zoo {' '.join(args)}:\n{done.stdout}\n{done.stderr[-3000:]}"
    return done


def test_every_kind_is_listed_with_its_distribution(site):
    listing = zoo(site, "list").stdout
    rows = [line.split()[:2] for line in listing.splitlines() if line.startswith("  ")]
    for name in ("sine", "sine-mlp", "multitask", "sines", "step-log", "sine-anil-tiny"):
        assert [name, DIST] in rows, listing
    assert "failed plugins" not in listing
    presets = zoo(site, "presets").stdout
    assert "sines/sine-anil" in presets and "sines/sine-multitask" in presets
    assert "sines/compare" in zoo(site, "sweeps").stdout


def test_preset_train_eval_load_with_the_plugin_algorithm_and_hook(site, tmp_path):
    out = tmp_path / "run"
    zoo(
        site,
        "train",
        "--preset",
        "sines/sine-multitask",
        "--out",
        str(out),
        "--no-progress",
        "--hooks",
        "step-log",
    )
    config = json.loads((out / "config.json").read_text())
    assert config["algorithm_name"] == "multitask"
    assert config["algorithm"]["outer"]["lr"] == 1e-2
    logged = (out / "step-log.txt").read_text().split()
    assert [line.split(":")[0] for line in logged] == ["2", "4"]  # every step of the preset's 2
    zoo(site, "eval", str(out), "--no-progress")
    evaluation = json.loads((out / "eval.json").read_text())
    assert evaluation["step"] == 4 and set(evaluation["pools"]) == {"test", "ood"}
    code = f"import runs; r = runs.load({str(out)!r}); print(type(r.model).__name__, r.step)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    loaded = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split() == ["SineMLP", "4"]


def test_a_meta_learner_defaults_to_bilevel_over_the_plugin_baseline(site, tmp_path):
    out = tmp_path / "run"
    flags = ["--steps", "2", "--steps-per-call", "2", "--checkpoint-every", "2"]
    flags += ["--eval.tasks", "2", "--algorithm.outer.meta-batch", "2", "--no-progress"]
    zoo(site, "train", "sine", "sine-mlp", "--out", str(out), *flags)
    assert json.loads((out / "config.json").read_text())["algorithm_name"] == "bilevel"


def test_the_plugin_sweep_runs_and_reports(site, tmp_path):
    out = tmp_path / "sweep"
    zoo(site, "sweep", "sines/compare", "--out", str(out), "--seeds", "0", "--no-progress")
    zoo(site, "report", str(out))
    with (out / "summary.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert {row["label"] for row in rows} == {"sine-anil", "sine-multitask"}, rows
    paper = {row["label"]: row["paper"] for row in rows}
    assert paper == {"sine-anil": "0.5", "sine-multitask": ""}  # the plugin's reference value
    assert (out / "figure.png").is_file()


def test_the_shipped_pretrained_model_lists_loads_and_re_evaluates_to_its_card(site):
    """The package ships a `zoo export` of a 4-step run (zoo_full_plugin/pretrained/): `zoo
    pretrained` lists it, `runs.load("pretrained:NAME")` reads it from the installed package,
    and `zoo eval pretrained:NAME` prints its card's numbers (to the printed digits; the card
    was measured on another host)."""
    rows = [line.split() for line in zoo(site, "pretrained").stdout.splitlines()]
    assert rows[0] == ["name", "paper", "task", "metric", "size", "distribution"]
    (row,) = [r for r in rows[1:] if r[0] == "sine-anil-tiny"]  # beside the zoo's own
    assert row[-1] == DIST and "sine" in row
    code = "import runs; m = runs.load('pretrained:sine-anil-tiny'); print(type(m.model).__name__, m.step)"
    assert zoo_python(site, code).stdout.split() == ["SineMLP", "4"]
    card = json.loads((PACKAGE / "zoo_full_plugin/pretrained/sine-anil-tiny/card.json").read_text())
    printed = zoo(site, "eval", "pretrained:sine-anil-tiny", "--no-progress").stdout
    table = {line.split()[0]: line.split()[1:] for line in printed.splitlines()[1:] if line.strip()}
    for pool in ("test", "ood"):
        assert abs(float(table[pool][0]) - card["metrics"][f"{pool}/loss"]) < 1e-3, printed


def zoo_python(site: pathlib.Path, code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return done
