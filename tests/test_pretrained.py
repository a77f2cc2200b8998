"""Pretrained models: `zoo export` writes the shippable layout of a finished run, `runs.load`
reads it back (by path or as `pretrained:NAME`, registered in `zoo.pretrained`), bit-equal,
and refuses tampered files, missing plugins and weights that do not fit, before compiling."""

import dataclasses
import hashlib
import json
import shutil
import sys
from pathlib import Path

import equinox as eqx
import jax.tree_util as jtu
import numpy as np
import pytest
from conftest import make_tiny_config

import plugins
import runs
import runs.cli
from runs import pretrained
from runs.pretrained import PretrainedError


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A finished tiny run (4 steps of the tiny hyperteacher)."""
    out = tmp_path_factory.mktemp("pretrained") / "run"
    runs.train(make_tiny_config(steps=4, eval_every=4), out, progress=False)
    return out


@pytest.fixture(scope="module")
def exported(run_dir, tmp_path_factory) -> Path:
    to = tmp_path_factory.mktemp("exported") / "tiny-hypernet"
    assert runs.cli.main(["export", str(run_dir), "--to", str(to), "--not", "a test model"]) == 0
    return to


def _arrays(model) -> list[np.ndarray]:
    return [np.asarray(x) for x in jtu.tree_leaves(eqx.filter(model, eqx.is_array))]


def _copy(exported: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(exported, tmp_path / "copy"))


def _redigest(directory: Path) -> None:
    """Rewrite digests.json after a deliberate edit, so that only the edit's effect is tested."""
    files = [p for p in sorted(directory.rglob("*")) if p.is_file() and p.name != "digests.json"]
    digests = {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files
    }
    (directory / "digests.json").write_text(json.dumps(digests))


def test_export_writes_the_layout_and_a_card(run_dir, exported):
    names = {p.name for p in exported.iterdir()}
    assert names == {"model", "config.json", "digests.json", "card.json", "card.md"}
    assert not (exported / "model" / "train_state").exists()
    assert (exported / "config.json").read_bytes() == (run_dir / "config.json").read_bytes()
    digests = json.loads((exported / "digests.json").read_text())
    on_disk = {str(p.relative_to(exported)) for p in exported.rglob("*") if p.is_file()}
    assert set(digests) == on_disk - {"digests.json"}
    for name, digest in digests.items():
        assert hashlib.sha256((exported / name).read_bytes()).hexdigest() == digest
    card = json.loads((exported / "card.json").read_text())
    history = runs.run.read_history(run_dir)[0]
    assert card["name"] == "tiny-hypernet"
    assert (card["task"], card["model"], card["seed"], card["steps"]) == (
        "hyperteacher",
        "linear-hypernet",
        0,
        4,
    )
    assert card["commit"] == history["commit"] and card["host_kind"] == history["device_kind"]
    assert card["licence"] == "MIT" and card["not"] == "a test model"
    assert card["paper"] is None and card["preset"] is None
    assert 0 < card["size"] < 100_000
    final = [r for r in runs.read_metrics(run_dir) if r.get("pool") == "test"][-1]
    assert card["metrics"]["test/accuracy"] == final["accuracy"]
    assert "tiny-hypernet" in (exported / "card.md").read_text()


def test_load_gives_back_the_runs_model_bit_equal(run_dir, exported):
    model, config, step = runs.load(run_dir)
    loaded = runs.load(exported)
    assert isinstance(loaded, runs.run.Loaded)
    assert loaded.step == step == 4
    assert loaded.config == config
    assert jtu.tree_structure(eqx.filter(loaded.model, eqx.is_array)) == jtu.tree_structure(
        eqx.filter(model, eqx.is_array)
    )
    for a, b in zip(_arrays(model), _arrays(loaded.model), strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    with pytest.raises(PretrainedError, match="step 4 only"):
        runs.load(exported, step=2)


def test_evaluation_of_the_export_equals_the_runs(run_dir, exported):
    of_run = runs.evaluate_run(run_dir, write=False)
    of_export = runs.evaluate_run(exported, write=False)
    assert of_run.step == of_export.step
    assert of_run.pools == of_export.pools


@pytest.fixture
def registered(exported, tmp_path, monkeypatch):
    """The export shipped inside an importable package and registered as `tiny-hypernet`."""
    package = tmp_path / "zoo_weights_pkg"
    (package / "weights").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    shutil.copytree(exported, package / "weights" / "tiny-hypernet")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = plugins.PretrainedSpec(
        "tiny-hypernet", path="zoo_weights_pkg:weights/tiny-hypernet", description="a test"
    )
    plugins.register(spec, dist="zoo-weights-pkg")
    yield spec
    plugins.unregister("tiny-hypernet", dist="zoo-weights-pkg")
    sys.modules.pop("zoo_weights_pkg", None)


def test_pretrained_name_loads_lists_and_evaluates(run_dir, registered, capsys):
    model, _, _ = runs.load(run_dir)
    loaded = runs.load("pretrained:tiny-hypernet")
    for a, b in zip(_arrays(model), _arrays(loaded.model), strict=True):
        assert np.array_equal(a, b)
    assert runs.load("pretrained:zoo-weights-pkg:tiny-hypernet").step == 4

    assert runs.cli.main(["pretrained"]) == 0
    out = capsys.readouterr().out
    header, *rows = out.splitlines()
    assert header.split() == ["name", "paper", "task", "metric", "size", "distribution"]
    (row,) = [r for r in rows if r.split()[0] == "tiny-hypernet"]  # beside the zoo's own
    assert "hyperteacher" in row and "zoo-weights-pkg" in row
    assert runs.cli.main(["list"]) == 0
    listing = capsys.readouterr().out
    assert "pretrained:" in listing and "tiny-hypernet" in listing

    assert runs.cli.main(["eval", "pretrained:tiny-hypernet", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert runs.cli.main(["eval", str(run_dir), "--no-progress"]) == 0
    assert capsys.readouterr().out.splitlines()[:-1] == printed.splitlines()
    assert not (registered.directory() / "eval.json").exists()


def test_an_unknown_pretrained_name_is_a_clear_error(registered):
    with pytest.raises(PretrainedError, match="Did you mean 'tiny-hypernet'"):
        runs.load("pretrained:tiny-hypernt")
    assert runs.cli.main(["eval", "pretrained:nothing-here", "--no-progress"]) == 1


def test_a_file_that_does_not_match_its_digest_is_refused(exported, tmp_path):
    copy = _copy(exported, tmp_path)
    data = sorted(p for p in (copy / "model").rglob("*") if p.is_file() and p.stat().st_size > 0)
    target = max(data, key=lambda p: p.stat().st_size)
    raw = bytearray(target.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    target.write_bytes(bytes(raw))
    with pytest.raises(PretrainedError, match="does not match its digest"):
        runs.load(copy)
    (copy / "model" / "stray").write_text("x")
    target.unlink()
    with pytest.raises(PretrainedError, match=r"is missing.*stray is not in digests\.json"):
        runs.load(copy)


def test_a_card_naming_a_missing_model_is_refused(exported, tmp_path):
    copy = _copy(exported, tmp_path)
    card = json.loads((copy / "card.json").read_text())
    (copy / "card.json").write_text(json.dumps({**card, "model": "not-installed-net"}))
    _redigest(copy)
    with pytest.raises(PretrainedError, match="needs the model 'not-installed-net'"):
        runs.load(copy)


def test_weights_that_do_not_fit_the_config_are_refused_before_compiling(
    exported, tmp_path, monkeypatch
):
    copy = _copy(exported, tmp_path)
    config = json.loads((copy / "config.json").read_text())
    config["model"]["hidden"] = 16
    (copy / "config.json").write_text(json.dumps(config))
    _redigest(copy)

    def no_compiling(*args, **kwargs):
        raise AssertionError("compiled")

    monkeypatch.setattr(eqx, "filter_jit", no_compiling)
    with pytest.raises(PretrainedError, match=r"do not fit.*float32\[.*16"):
        runs.load(copy)


def test_export_refuses_bad_input_and_writes_nothing(run_dir, tmp_path, capsys):
    with pytest.raises(PretrainedError, match="holds no zoo run"):
        pretrained.export(tmp_path, tmp_path / "a")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "file").write_text("x")
    with pytest.raises(PretrainedError, match="not empty"):
        pretrained.export(run_dir, busy)
    assert [p.name for p in busy.iterdir()] == ["file"]

    unfinished = Path(shutil.copytree(run_dir, tmp_path / "unfinished"))
    config = json.loads((unfinished / "config.json").read_text())
    config["run"]["steps"] = 8
    (unfinished / "config.json").write_text(json.dumps(config))
    assert runs.cli.main(["export", str(unfinished), "--to", str(tmp_path / "b")]) == 1
    assert "is not finished" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy", "unfinished"]

    empty = tmp_path / "empty"
    empty.mkdir()
    pretrained.export(run_dir, empty, name="given", preset="schug2024/hyperteacher")
    card = pretrained.read_card(empty)
    assert card["name"] == "given" and card["preset"] == "schug2024/hyperteacher"
    assert "Schug" in card["paper"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy", "empty", "unfinished"]


def test_pretrained_spec_paths_are_checked():
    with pytest.raises(ValueError, match="package:relative/dir"):
        plugins.PretrainedSpec("x", path="no-colon").directory()
    with pytest.raises(FileNotFoundError):
        plugins.PretrainedSpec("x", path="plugins:no/such/dir").directory()
    with pytest.raises(TypeError, match=r"runs\.load"):
        plugins.PretrainedSpec("x", path="plugins:x").load()
    assert dataclasses.fields(plugins.PretrainedSpec)[0].name == "name"


def test_a_recorded_check_is_measured_again_bit_equal(run_dir, tmp_path):
    model, config, _ = runs.load(run_dir)
    small = {"tasks": 2, "batch": 2}
    recorded = pretrained.measure(model, config, small)
    assert "test/accuracy" in recorded and "ood/loss" in recorded
    assert recorded != pretrained.measure(model, config)  # 2 tasks per pool, not the run's 4
    to = pretrained.export(
        run_dir, tmp_path / "checked", check={"eval": small, "metrics": recorded}
    )
    assert pretrained.read_card(to)["check"]["eval"] == small
    card_says, measured = pretrained.recheck(to)
    assert card_says == measured == recorded
    with pytest.raises(PretrainedError, match="records no check"):
        pretrained.recheck(pretrained.export(run_dir, tmp_path / "unchecked"))


def _first_model(directory: Path):
    """The model of a run's step-0 checkpoint (what it started from)."""
    return runs.load(directory, step=0).model


def test_init_starts_a_run_from_pretrained_weights_and_records_it(run_dir, exported, tmp_path):
    trained = runs.load(exported).model
    fresh = _first_model(run_dir)
    for source in (str(exported), str(run_dir)):
        out = tmp_path / f"from-{Path(source).name}"
        config = make_tiny_config(steps=2, eval_every=2, seed=1, init=source)
        runs.train(config, out, progress=False)
        assert runs.run.read_config(out).run.init == source
        started = _first_model(out)
        for a, b in zip(_arrays(trained), _arrays(started), strict=True):
            assert np.array_equal(a, b)
        assert not all(
            np.array_equal(a, c) for a, c in zip(_arrays(started), _arrays(fresh), strict=True)
        )


def test_init_with_weights_that_do_not_fit_fails_before_compiling(exported, tmp_path, monkeypatch):
    def no_compiling(*args, **kwargs):
        raise AssertionError("compiled")

    monkeypatch.setattr(eqx, "filter_jit", no_compiling)
    config = make_tiny_config(steps=2, init=str(exported))
    bigger = dataclasses.replace(config, model=dataclasses.replace(config.model, hidden=16))
    out = tmp_path / "misfit"
    with pytest.raises(runs.RunError, match=r"run\.init .*do not fit.*16.*leave --init out"):
        runs.train(bigger, out, progress=False)
    assert not out.exists()
    with pytest.raises(runs.RunError, match="neither a pretrained model"):
        runs.train(make_tiny_config(init=str(tmp_path)), tmp_path / "x", progress=False)
    with pytest.raises(runs.RunError, match="tiny-hypernt"):
        runs.train(make_tiny_config(init="pretrained:tiny-hypernt"), tmp_path / "y", progress=False)


def _hub_cache(exported: Path, cache: Path, repo: str = "someone/tiny-hypernet") -> str:
    """Lay `exported` out as the Hugging Face Hub's cache holds a downloaded snapshot of `repo`
    (refs/main naming a commit, snapshots/COMMIT/ holding the files)."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    root = cache / f"models--{repo.replace('/', '--')}"
    (root / "refs").mkdir(parents=True)
    (root / "refs" / "main").write_text(commit)
    shutil.copytree(exported, root / "snapshots" / commit)
    return commit


def test_a_hub_repository_loads_from_the_cache_offline(run_dir, exported, tmp_path):
    pytest.importorskip("huggingface_hub")
    import subprocess

    cache = tmp_path / "hub"
    commit = _hub_cache(exported, cache)
    env = {**__import__("os").environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    code = (
        "import runs, numpy as np, equinox as eqx, jax.tree_util as jtu\n"
        "a = runs.load('hf:someone/tiny-hypernet').model\n"
        f"b = runs.load('hf:someone/tiny-hypernet@{commit}').model\n"
        f"c = runs.load({str(run_dir)!r}).model\n"
        "leaves = lambda m: [np.asarray(x) for x in jtu.tree_leaves(eqx.filter(m, eqx.is_array))]\n"
        "print(all(np.array_equal(x, y) and np.array_equal(x, z) for x, y, z in zip(leaves(a), leaves(b), leaves(c))))\n"
        "try:\n"
        "    runs.load('hf:someone/not-cached')\n"
        "except runs.RunError as error:\n"
        "    print('refused:', error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "True"
    assert lines[1].startswith("refused: hf:someone/not-cached could not be fetched")
    with pytest.raises(PretrainedError, match="hf:OWNER/REPO"):
        runs.load("hf:no-owner")
