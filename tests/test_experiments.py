"""Experiments as plugins (`zoo.experiments`): a third party's experiment, registered at run
time as its entry point would register it, works with `zoo presets`, `zoo sweeps`, `zoo info
--preset`, `zoo train --preset`, `zoo sweep` and `zoo report` exactly as the built-in papers'."""

import dataclasses
import sys
import types

import pytest
from conftest import make_tiny_config

import plugins
import runs
import runs.experiments
from runs.cli import main

BUILT_IN = ("schug2024", "lake2019", "madan2021")
"""The built-in experiments, in the order `zoo presets` lists them."""


def _tiny_experiment() -> runs.Experiment:
    """What a third party's factory returns: two tiny presets and a sweep built from them."""
    base = make_tiny_config(steps=2, eval_every=2)
    other = dataclasses.replace(
        base, task=dataclasses.replace(base.task, split="non-compositional")
    )

    def compare(presets) -> runs.Sweep:
        return runs.Sweep(
            "compositional against non-compositional support",
            tuple(
                runs.SweepRun(label, presets[name].config, {"support": label})
                for label, name in (("comp", "tiny"), ("noncomp", "tiny-noncomp"))
            ),
            metrics=("ood.accuracy",),
            x="support",
            paper={"comp": {"ood.accuracy": 0.9}},
            seeds=(0, 1),
        )

    return runs.Experiment(
        presets={
            "tiny": runs.Preset(base, "a tiny hyperteacher run", authors_counts=(1, 2)),
            "tiny-noncomp": runs.Preset(other, "the same on the non-compositional split"),
        },
        sweeps={"compare": compare},
        description="A third party's tiny experiment",
    )


@pytest.fixture
def third_party(monkeypatch: pytest.MonkeyPatch):
    """The experiment `third-party`, registered for one test (its factory in a module of its
    own, found by its `module:attr` string as an entry point's would be)."""
    module = types.ModuleType("_third_party_experiment")
    module.experiment = _tiny_experiment  # pyright: ignore[reportAttributeAccessIssue]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    spec = plugins.ExperimentSpec(
        name="third-party",
        factory=f"{module.__name__}:experiment",
        paper="Someone et al. 2025",
        description="a third party's experiment",
    )
    plugins.register(spec, dist="third-party-dist")
    runs.experiments.clear_cache()
    yield
    plugins.unregister("third-party", dist="third-party-dist")
    runs.experiments.clear_cache()


def test_the_built_in_experiments_are_listed_first_in_their_order():
    assert tuple(runs.experiments.experiments())[:3] == BUILT_IN
    names = list(runs.experiments.presets())
    assert names[0] == "schug2024/hyperteacher-compositional"
    assert [n.partition("/")[0] for n in names] == sorted(
        (n.partition("/")[0] for n in names), key=BUILT_IN.index
    )


def test_a_third_party_experiment_is_listed_after_the_built_in_ones(third_party, capsys):
    assert list(runs.experiments.experiments()) == [*BUILT_IN, "third-party"]
    assert main(["presets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2].split(None, 1) == ["third-party/tiny", "a tiny hyperteacher run"]
    assert lines[-1].split()[0] == "third-party/tiny-noncomp"
    assert main(["sweeps"]) == 0
    (line,) = [x for x in capsys.readouterr().out.splitlines() if "third-party" in x]
    assert line.split()[:5] == ["third-party/compare", "2", "runs", "x", "2"]
    assert runs.experiments.get_preset("third-party/tiny") == make_tiny_config(steps=2)
    # The sweep is built from the experiment's own presets.
    sweep = runs.experiments.get_sweep("third-party/compare")
    assert sweep.runs[1].config.task.split == "non-compositional"


def test_zoo_info_compares_a_third_party_preset_with_its_authors_counts(third_party, capsys):
    assert main(["info", "--preset", "third-party/tiny"]) == 0
    printed = capsys.readouterr().out
    assert "authors':   1 meta, 2 fast" in printed
    assert "see the preset in the experiment plugin 'third-party'" in printed


def test_zoo_train_runs_a_third_party_preset(third_party, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "--preset", "third-party/tiny", "--out", str(out), "--no-progress"]) == 0
    assert f"run saved in {out}" in capsys.readouterr().out
    config = runs.read_config(out)
    assert config.run.steps == 2 and config.task == make_tiny_config().task
    assert len(runs.read_metrics(out)) > 0


def test_zoo_sweep_and_report_run_a_third_party_sweep(third_party, tmp_path, capsys):
    out = tmp_path / "sweep"
    command = ["sweep", "third-party/compare", "--out", str(out), "--seeds", "0", "--no-progress"]
    assert main([*command, "--only", "comp"]) == 0
    assert (out / "comp" / "seed_0").is_dir() and not (out / "noncomp").exists()
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "comp" in printed and "ood.accuracy" in printed and "(paper 0.9)" in printed


def test_unknown_names_of_an_experiment_name_close_matches(third_party, capsys):
    assert main(["train", "--preset", "third-party/tiny-noncom", "--out", "unused"]) == 2
    assert "Did you mean 'third-party/tiny-noncomp'" in capsys.readouterr().err
    assert main(["sweep", "third-party/compar", "--out", "unused"]) == 2
    assert "Did you mean 'third-party/compare'" in capsys.readouterr().err
    with pytest.raises(runs.experiments.UnknownNameError, match="`zoo presets`"):
        runs.experiments.preset("third-party")


def test_an_experiment_checks_its_names_and_presets():
    config = make_tiny_config()
    with pytest.raises(ValueError, match="hold no '/'"):
        runs.Experiment(presets={"a/b": runs.Preset(config)})
    with pytest.raises(ValueError, match="non-empty"):
        runs.Experiment(sweeps={"": lambda presets: None})  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match=r"runs\.Preset"):
        runs.Experiment(presets={"a": config})  # pyright: ignore[reportArgumentType]


def test_a_factory_that_returns_no_experiment_is_a_plugin_error(monkeypatch):
    module = types.ModuleType("_not_an_experiment")
    module.experiment = lambda: {"presets": {}}  # pyright: ignore[reportAttributeAccessIssue]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    plugins.register(plugins.ExperimentSpec(name="broken", factory="_not_an_experiment:experiment"))
    runs.experiments.clear_cache()
    try:
        with pytest.raises(plugins.PluginError, match=r"must return a runs\.Experiment"):
            runs.experiments.experiments()
    finally:
        plugins.unregister("broken")
        runs.experiments.clear_cache()
