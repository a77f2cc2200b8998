"""Sweeps: a grid of tiny runs, resumable, collected into a table and a figure; the CLI around
them; `zoo info`."""

import csv
import dataclasses
import json
import math
import os
import pathlib
import re
import sys
import types

import jax
import numpy as np
import pytest
from conftest import make_tiny_config

import runs.presets
import runs.run
import runs.sweeps
from runs.cli import main
from runs.sweeps import Select, Sweep, SweepRun, plan, report, run_sweep


def _tiny_sweep() -> Sweep:
    base = make_tiny_config(steps=2, eval_every=2)
    other = dataclasses.replace(
        base, task=dataclasses.replace(base.task, split="non-compositional")
    )
    return Sweep(
        "tiny",
        (
            SweepRun("comp", base, {"support": "compositional"}),
            SweepRun("noncomp", other, {"support": "non-compositional"}),
        ),
        metrics=("ood.accuracy", "identification.r2_ood"),
        x="support",
        paper={"comp": {"ood.accuracy": 0.9}},
        seeds=(0, 1),
    )


def test_plan_applies_seeds_and_steps():
    items = plan(_tiny_sweep(), seeds=(3,), steps=4)
    assert [(r.label, s, c.run.seed, c.run.steps) for r, s, c in items] == [
        ("comp", 3, 3, 4),
        ("noncomp", 3, 3, 4),
    ]
    for _, _, config in items:
        assert config.run.checkpoint_every % config.run.steps_per_call == 0


def test_a_sweep_can_set_a_task_field_to_each_seed():
    """`seed_task="split_seed"` gives each run of the hyperteacher a split drawn from its own
    seed (the authors' run seed drew both); the default leaves the task alone."""
    sweep = dataclasses.replace(_tiny_sweep(), seed_task="split_seed")
    assert [(s, c.task.split_seed) for _, s, c in plan(sweep, seeds=(0, 5))] == [
        (0, 0),
        (5, 5),
        (0, 0),
        (5, 5),
    ]
    assert {c.task.split_seed for _, _, c in plan(_tiny_sweep(), seeds=(0, 5))} == {0}
    assert runs.presets.get_sweep("schug2024/fig3b-cpu").seed_task == "split_seed"


def _memory_mappings() -> int:
    with open("/proc/self/maps") as f:
        return sum(1 for _ in f)


def test_a_sweep_runs_every_run_once_and_reports(tmp_path, monkeypatch: pytest.MonkeyPatch):
    sweep = _tiny_sweep()
    mappings = []  # the process's memory mappings as each run starts
    train = runs.run.train

    def counting_train(*args, **kwargs):
        if os.path.exists("/proc/self/maps"):
            mappings.append(_memory_mappings())
        return train(*args, **kwargs)

    monkeypatch.setattr(runs.run, "train", counting_train)
    assert run_sweep(sweep, "tiny", tmp_path, progress=False) == []
    if mappings:
        # The runs' compiled programs are freed between runs (each held ~3,000 mappings on CPU,
        # and a long sweep hit the kernel's limit): runs 2-4 start with what run 2 started with.
        assert len(mappings) == 4 and max(mappings[1:]) - mappings[1] < 1000, mappings
    for label in ("comp", "noncomp"):
        for seed in (0, 1):
            config = json.loads((tmp_path / label / f"seed_{seed}" / "config.json").read_text())
            assert config["run"]["seed"] == seed
    with open(tmp_path / "results.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and {"ood.accuracy", "identification.r2_ood", "step"} <= set(rows[0])
    assert all(r["finished"] == "True" for r in rows)
    assert len({r.get("commit") for r in rows}) == 1  # every run names the code it was trained at
    assert {r["device"] for r in rows} == {jax.devices()[0].device_kind}  # ... and the device
    summary = json.loads((tmp_path / "summary.json").read_text())
    comp = next(e for e in summary if e["label"] == "comp" and e["metric"] == "ood.accuracy")
    values = [float(r["ood.accuracy"]) for r in rows if r["label"] == "comp"]
    assert comp["n"] == 2 and comp["mean"] == pytest.approx(sum(values) / 2)
    assert comp["paper"] == 0.9
    assert (tmp_path / "figure.png").stat().st_size > 1000

    # Running it again trains nothing: every run is finished.
    def no_training(*args, **kwargs):
        raise AssertionError("a finished run was trained again")

    monkeypatch.setattr("runs.run.train", no_training)
    assert run_sweep(sweep, "tiny", tmp_path, progress=False) == []


def test_an_unfinished_run_of_a_sweep_is_resumed(tmp_path, monkeypatch: pytest.MonkeyPatch):
    sweep = _tiny_sweep()
    run_sweep(sweep, "tiny", tmp_path, seeds=(0,), only=("comp",), progress=False)
    calls = []
    original = runs.run.train

    def spy(config, out, *, resume=False, progress=True):
        calls.append((out.parent.name, resume))
        return original(config, out, resume=resume, progress=progress)

    monkeypatch.setattr("runs.run.train", spy)
    # Longer runs: the finished 2-step run continues from its checkpoint to 4 steps.
    run_sweep(sweep, "tiny", tmp_path, seeds=(0,), steps=4, progress=False)
    assert calls == [("comp", True), ("noncomp", False)]


def test_the_summary_leaves_out_unfinished_runs(tmp_path):
    sweep = _tiny_sweep()
    run_sweep(sweep, "tiny", tmp_path, seeds=(0,), progress=False)
    config = tmp_path / "noncomp" / "seed_0" / "config.json"
    record = json.loads(config.read_text())
    record["run"]["steps"] = 4  # as if the run had been stopped half-way
    config.write_text(json.dumps(record))
    summary = report(tmp_path)["summary"]
    assert {e["label"] for e in summary} == {"comp"}
    with open(tmp_path / "results.csv") as f:
        finished = {r["label"]: r["finished"] for r in csv.DictReader(f)}
    assert finished == {"comp": "True", "noncomp": "False"}


def test_a_sweep_exports_its_finished_runs_without_checkpoints(tmp_path, capsys):
    """`zoo report DIR --export DEST`: DEST gets the finished runs' small files and the sweep's
    record, and reports the same numbers as DIR; unfinished runs stay behind."""
    src, dest = tmp_path / "src", tmp_path / "dest"
    run_sweep(_tiny_sweep(), "tiny", src, seeds=(0,), progress=False)
    config = src / "noncomp" / "seed_0" / "config.json"
    record = json.loads(config.read_text())
    record["run"]["steps"] = 4  # as if the run had been stopped half-way
    config.write_text(json.dumps(record))
    png = b"\x89PNG\r\n\x1a\n\x00\xff"  # a run's plot (e.g. `zoo eval --activity`): bytes
    (src / "comp" / "seed_0" / "activity.png").write_bytes(png)
    assert main(["report", str(src), "--export", str(dest)]) == 0
    assert "exported 1 finished runs" in capsys.readouterr().out
    assert (dest / "comp" / "seed_0" / "activity.png").read_bytes() == png
    assert (
        not (dest / "noncomp").exists() and not (dest / "comp" / "seed_0" / "checkpoints").exists()
    )
    assert (dest / "comp" / "seed_0" / "history.jsonl").exists()
    assert not (src / "comp" / "seed_0" / ".lock").exists()  # released with the run
    assert not (dest / "comp" / "seed_0" / ".lock").exists()
    with open(src / "results.csv") as f, open(dest / "results.csv") as g:
        finished = [r for r in csv.DictReader(f) if r["finished"] == "True"]
        assert finished == list(csv.DictReader(g))
    assert json.loads((dest / "sweep.json").read_text())["seeds"] == [0]
    other = json.loads((src / "sweep.json").read_text()) | {"name": "other"}
    (src / "sweep.json").write_text(json.dumps(other))
    assert main(["report", str(src), "--export", str(dest)]) == 1
    assert "holds the sweep 'tiny'" in capsys.readouterr().err


def test_a_sweep_reported_at_a_step_compares_runs_of_different_lengths_there(tmp_path, capsys):
    """`zoo report DIR --step N`: every run counts with its evaluation at step N (a longer run
    cut there, a run that stopped before N left out of the summary); the step is recorded, so a
    plain `zoo report` and an export give the same numbers, and `--step 0` goes back."""
    src, dest = tmp_path / "src", tmp_path / "dest"
    run_sweep(_tiny_sweep(), "tiny", src, seeds=(0,), steps=2, progress=False)
    run_sweep(_tiny_sweep(), "tiny", src, seeds=(1,), steps=4, only=("comp",), progress=False)
    run_sweep(_tiny_sweep(), "tiny", src, seeds=(1,), steps=1, only=("noncomp",), progress=False)
    long_run = src / "comp" / "seed_1"
    at_2, at_4 = runs.sweeps.final_metrics(long_run, 2), runs.sweeps.final_metrics(long_run)
    assert (at_2["step"], at_4["step"]) == (2, 4) and at_2["ood.accuracy"] != at_4["ood.accuracy"]

    def table(directory):
        with open(directory / "results.csv") as f:
            return {(r["label"], r["seed"]): r for r in csv.DictReader(f)}

    assert main(["report", str(src)]) == 0  # each run at its last step: 4, 2 and 1
    rows = table(src)
    assert rows["comp", "1"]["step"] == "4.0" and rows["noncomp", "1"]["step"] == "1.0"
    assert main(["report", str(src), "--step", "2"]) == 0
    rows = table(src)
    assert {k: (r["step"], r["finished"]) for k, r in rows.items()} == {
        ("comp", "0"): ("2.0", "True"),
        ("comp", "1"): ("2.0", "True"),
        ("noncomp", "0"): ("2.0", "True"),
    }  # the 1-step run has no evaluation at step 2
    assert float(rows["comp", "1"]["ood.accuracy"]) == pytest.approx(at_2["ood.accuracy"])
    summary = json.loads((src / "summary.json").read_text())
    assert {(e["label"], e["n"]) for e in summary if e["metric"] == "ood.accuracy"} == {
        ("comp", 2),
        ("noncomp", 1),
    }
    assert main(["report", str(src)]) == 0 and table(src) == rows  # the step was recorded
    assert main(["report", str(src), "--export", str(dest)]) == 0
    assert table(dest) == rows
    assert json.loads((dest / "sweep.json").read_text())["report_step"] == 2
    assert main(["report", str(src), "--step", "0"]) == 0
    assert table(src)["comp", "1"]["step"] == "4.0"
    assert main(["report", str(src), "--export", str(dest)]) == 1  # dest is at step 2
    assert "reported at step 2" in capsys.readouterr().err
    assert main(["report", str(src), "--step", "-1"]) == 1
    assert "--step must be 0 or more" in capsys.readouterr().err


def test_a_sweep_reported_at_its_best_evaluation_keeps_each_runs_best_model(tmp_path, capsys):
    """`zoo report DIR --best test.loss`: every run counts with its evaluation of lowest
    in-distribution loss (the model the authors of Schug et al. keep), a diverged evaluation
    (loss not finite) counting as worst; the run still counts as finished at its last step. The
    choice is recorded (a plain report and an export agree), an export into a directory reported
    otherwise is refused, `--best last` goes back, and a metric the runs lack is an error."""
    src, dest, other = tmp_path / "src", tmp_path / "dest", tmp_path / "other"
    run_sweep(_tiny_sweep(), "tiny", src, seeds=(0,), steps=4, progress=False)
    at = {}
    for label, loss in (("comp", {2: 0.5, 4: math.nan}), ("noncomp", {2: 0.7, 4: 0.6})):
        path = src / label / "seed_0" / "metrics.jsonl"
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        assert {r["step"] for r in rows if r["pool"] == "test"} == {2, 4}
        for r in rows:
            if r["pool"] == "test":
                r["loss"] = loss[r["step"]]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        at[label] = {s: runs.sweeps.final_metrics(src / label / "seed_0", s) for s in (2, 4)}
    assert at["comp"][2]["ood.accuracy"] != at["comp"][4]["ood.accuracy"]

    def table(directory):
        with open(directory / "results.csv") as f:
            return {r["label"]: r for r in csv.DictReader(f)}

    assert main(["report", str(src), "--best", "test.loss"]) == 0
    assert "model of lowest test.loss" in capsys.readouterr().out
    rows = table(src)
    assert {k: (r["step"], r["final_step"], r["finished"]) for k, r in rows.items()} == {
        "comp": ("2.0", "4.0", "True"),  # step 4 diverged
        "noncomp": ("4.0", "4.0", "True"),
    }
    assert float(rows["comp"]["ood.accuracy"]) == pytest.approx(at["comp"][2]["ood.accuracy"])
    summary = json.loads((src / "summary.json").read_text())
    assert [e["n"] for e in summary] == [1] * len(summary)
    assert main(["report", str(src)]) == 0 and table(src) == rows  # the choice was recorded
    assert main(["report", str(src), "--export", str(dest)]) == 0
    assert table(dest) == rows
    assert main(["report", str(src), "--step", "2"]) == 0  # the best up to step 2
    assert table(src)["noncomp"]["step"] == "2.0" and table(src)["comp"]["step"] == "2.0"
    assert main(["report", str(src), "--step", "0", "--best", "last"]) == 0
    assert {r["step"] for r in table(src).values()} == {"4.0"}
    assert "final_step" not in table(src)["comp"]
    assert main(["report", str(src), "--export", str(dest)]) == 1
    assert "reports each run's model of lowest test.loss" in capsys.readouterr().err
    assert main(["report", str(src), "--export", str(other)]) == 0
    assert main(["report", str(src), "--best", "loss"]) == 1
    assert "--best must be `last`, `pool.metric`" in capsys.readouterr().err
    assert main(["report", str(src), "--best", "test.nope"]) == 1
    error = capsys.readouterr().err
    assert "not evaluated on 'test.nope'" in error and "test.loss" in error


def test_a_bad_setting_fails_before_any_run(tmp_path):
    sweep = _tiny_sweep()
    bad = dataclasses.replace(sweep.runs[1].config, model_name="no-such-model")
    sweep = dataclasses.replace(
        sweep, runs=(sweep.runs[0], dataclasses.replace(sweep.runs[1], config=bad))
    )
    with pytest.raises(ValueError, match="sweep run 'noncomp'"):
        run_sweep(sweep, "tiny", tmp_path, progress=False)
    assert not (tmp_path / "comp").exists()


@pytest.fixture
def tiny_experiment(monkeypatch):
    """An experiment `test` with the sweeps `tiny` and `other`, registered for one test as a
    plugin would register it."""
    import plugins
    import runs.experiments

    module = types.ModuleType("_test_experiment")
    sweeps = {"tiny": _tiny_sweep(), "other": _tiny_sweep()}
    module.experiment = lambda: runs.experiments.Experiment(  # pyright: ignore[reportAttributeAccessIssue]
        sweeps={k: (lambda presets, s=s: s) for k, s in sweeps.items()}
    )
    monkeypatch.setitem(sys.modules, "_test_experiment", module)
    plugins.register(plugins.ExperimentSpec(name="test", factory="_test_experiment:experiment"))
    runs.experiments.clear_cache()
    yield
    plugins.unregister("test")
    runs.experiments.clear_cache()


def test_the_cli_runs_and_reports_a_named_sweep(tmp_path, tiny_experiment, capsys):
    out = tmp_path / "sweep"
    assert main(["sweep", "test/tiny", "--out", str(out), "--seeds", "0", "--no-progress"]) == 0
    assert main(["report", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "comp" in printed and "ood.accuracy" in printed and "(paper 0.9)" in printed
    assert main(["sweeps"]) == 0
    assert "test/tiny" in capsys.readouterr().out
    # Another sweep cannot share the directory.
    assert main(["sweep", "test/other", "--out", str(out), "--seeds", "0"]) == 2
    assert "holds the sweep 'test/tiny'" in capsys.readouterr().err


def test_report_of_a_directory_without_a_sweep_is_an_error(tmp_path, capsys):
    assert main(["report", str(tmp_path)]) == 1
    assert "holds no sweep" in capsys.readouterr().err


def test_unknown_sweep_names_close_matches(capsys):
    assert main(["sweep", "schug2024/fig3b-cp", "--out", "unused"]) == 2
    assert "Did you mean 'schug2024/fig3b-cpu'" in capsys.readouterr().err


def test_every_named_sweep_is_valid():
    for name, sweep in runs.presets.sweeps().items():
        runs.sweeps.validate(sweep, seeds=(0,))
        assert len({r.label for r in sweep.runs}) == len(sweep.runs), name


def test_the_lake_sweeps_carry_the_numbers_their_presets_quote():
    """The paper's values drawn in the Lake 2019 figures are those the presets' descriptions
    cite (e.g. "Table 2, ... (paper: 99.95%)"), and every Lake preset is in a sweep."""
    from plugins.lake2019 import presets as lake

    swept = set()
    for name in ("lake2019/tables2-3", "lake2019/mutual-exclusivity"):
        sweep = runs.presets.get_sweep(name)
        for run in sweep.runs:
            preset = next(p for p, (_, c) in lake.PRESETS.items() if c == run.config)
            swept.add(preset)
            quoted = re.search(r"paper: ([0-9.]+)%", lake.PRESETS[preset][0])
            assert quoted is not None, preset
            (value,) = sweep.paper[run.label].values()
            assert value == pytest.approx(float(quoted.group(1)) / 100), preset
    assert swept == set(lake.LAKE_EXPERIMENTS)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["info", "anil"], "538,120 meta, 4,104 fast"),
        (["info", "maml"], "305,288 meta, 305,288 fast"),
        (["info", "linear-hypernet"], "631,168 meta, 136 fast"),
        (["info", "--preset", "schug2024/hyperteacher-compositional-anil-cpu"], "anil"),
    ],
)
def test_zoo_info_prints_parameter_counts(argv, expected, capsys):
    assert main(argv) == 0
    assert expected in capsys.readouterr().out


def test_zoo_info_unknown_model(capsys):
    assert main(["info", "anl"]) == 2
    assert "anil" in capsys.readouterr().err


def test_runs_trained_in_parallel_processes_match_the_sequential_ones(tmp_path):
    sweep = _tiny_sweep()
    assert run_sweep(sweep, "tiny", tmp_path / "one", seeds=(0,), progress=False) == []
    assert run_sweep(sweep, "tiny", tmp_path / "two", seeds=(0,), jobs=2) == []
    for label in ("comp", "noncomp"):
        one = runs.sweeps.final_metrics(tmp_path / "one" / label / "seed_0")
        two = runs.sweeps.final_metrics(tmp_path / "two" / label / "seed_0")
        assert one and one == pytest.approx(two, rel=1e-6, abs=1e-7)
        assert (tmp_path / "two" / "logs" / f"{label}-seed_0.log").exists()


def test_a_failed_worker_is_reported(tmp_path):
    sweep = _tiny_sweep()
    directory = tmp_path / "noncomp" / "seed_0"
    directory.mkdir(parents=True)
    (directory / "stray.txt").write_text("not a run")  # the worker refuses this directory
    failures = run_sweep(sweep, "tiny", tmp_path, seeds=(0,), only=("noncomp",), jobs=2)
    assert len(failures) == 1 and "noncomp seed 0" in failures[0]
    assert "not empty" in failures[0]
    assert (directory / "stray.txt").read_text() == "not a run"
    with pytest.raises(ValueError, match="--jobs"):
        run_sweep(sweep, "tiny", tmp_path, jobs=0)


def test_report_draws_learning_curves_for_runs_that_count_frames(tmp_path):
    """Runs whose training rows count environment frames get `curves.csv` / `curves.png`:
    every evaluation against the frames seen."""
    import json

    from runs.sweeps import report

    record = {
        "name": "test/rl",
        "description": "RL. Paper: none",
        "runs": [{"label": "agent", "facets": {"agent": "a"}, "config": {}}],
        "metrics": ["eval.success"],
        "x": "agent",
        "hue": None,
        "paper": {},
        "seeds": [0, 1],
    }
    (tmp_path / "sweep.json").write_text(json.dumps(record))
    for seed in (0, 1):
        run = tmp_path / "agent" / f"seed_{seed}"
        run.mkdir(parents=True)
        (run / "config.json").write_text(json.dumps({"run": {"steps": 4}}))
        rows = []
        for step in (2, 4):
            rows.append({"step": step, "pool": "train", "loss": 1.0, "frames": step * 100})
            rows.append({"step": step, "pool": "eval", "success": step / 4 - seed / 10})
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report(tmp_path)
    lines = (tmp_path / "curves.csv").read_text().splitlines()
    assert lines[0] == "label,seed,frames,eval.success"
    assert lines[1:] == ["agent,0,200,0.5", "agent,0,400,1.0", "agent,1,200,0.4", "agent,1,400,0.9"]
    assert (tmp_path / "curves.png").stat().st_size > 0


def test_learning_curves_get_a_row_of_panels_per_level(tmp_path):
    """A sweep with an x facet (levels) and a hue (agents) draws a row per level, each with
    a line per agent; a sweep with one level draws one row."""
    import json

    from runs.sweeps import _curves

    runs = [
        {"label": f"{level}-{agent}", "facets": {"level": level, "agent": agent}, "config": {}}
        for level in ("easy", "hard")
        for agent in ("lstm", "rims")
    ]
    record = {
        "description": "RL",
        "runs": runs,
        "metrics": ["eval.success", "eval.return"],
        "x": "level",
        "hue": "agent",
        "seeds": [0],
    }
    for run in runs:
        directory = tmp_path / run["label"] / "seed_0"
        directory.mkdir(parents=True)
        rows = [
            {"step": 1, "pool": "train", "frames": 100},
            {"step": 1, "pool": "eval", "success": 0.5, "return": 0.3},
        ]
        (directory / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert _curves(record, tmp_path) == [
        ("easy", "eval.success"),
        ("easy", "eval.return"),
        ("hard", "eval.success"),
        ("hard", "eval.return"),
    ]
    record["runs"] = runs[:2]
    assert _curves(record, tmp_path) == [(None, "eval.success"), (None, "eval.return")]


def test_a_grid_sweep_is_drawn_as_heat_maps(tmp_path):
    """Sweeps that cross two settings (`plot="grid"`) get a heat map per metric: x across,
    hue down, NaN where no run finished."""
    record = {
        "name": "test/grid",
        "metrics": ["ood.mse", "identification.alignment"],
        "x": "hidden",
        "hue": "modules",
        "runs": [
            {"label": f"h{h}-m{m}", "facets": {"hidden": f"x{h}", "modules": f"x{m}"}}
            for h in (1, 2, 4)
            for m in (1, 2)
        ],
    }
    summary = [
        {
            "label": f"h{h}-m{m}",
            "hidden": f"x{h}",
            "modules": f"x{m}",
            "metric": metric,
            "mean": value * h + m,
            "std": 0.0,
            "n": 3,
            "paper": "",
        }
        for h in (1, 2, 4)
        for m in (1, 2)
        for metric, value in (("ood.mse", 0.01), ("identification.alignment", 0.1))
        if (h, m) != (4, 2)  # not finished
    ]
    maps = runs.sweeps._grid_figure(record, summary, tmp_path / "figure.png")
    assert (tmp_path / "figure.png").stat().st_size > 1000
    np.testing.assert_allclose(
        maps["ood.mse"], [[1.01, 1.02, 1.04], [2.01, 2.02, np.nan]], equal_nan=True
    )
    assert maps["identification.alignment"][0, 2] == pytest.approx(1.4)
    assert runs.presets.get_sweep("schug2024/fig2d-grid-cpu").plot == "grid"


def _write_runs(out, runs, values, steps=4):
    """Fake finished run directories: `values[label]` is one `{metric: value}` per seed."""
    for run in runs:
        for seed, metrics in enumerate(values[run["label"]]):
            directory = out / run["label"] / f"seed_{seed}"
            directory.mkdir(parents=True)
            (directory / "config.json").write_text(json.dumps({"run": {"steps": steps}}))
            rows = {}
            for name, value in metrics.items():
                pool, metric = name.split(".")
                rows.setdefault(pool, {"step": steps, "pool": pool})[metric] = value
            lines = "".join(json.dumps(r) + "\n" for r in rows.values())
            (directory / "metrics.jsonl").write_text(lines)


def test_a_selecting_sweep_reports_the_best_rate_of_each_cell(tmp_path):
    """With `select`, each group of runs differing only in the learning rate reports the rate
    of lowest mean test loss (the same for every seed, whatever the OOD numbers), compared on
    the seeds finished in all of the group's runs; results.csv keeps every run, marked."""
    runs = [
        {"label": f"h{h}-lr{lr}", "facets": {"hidden": f"h{h}", "lr": f"lr {lr}"}, "config": {}}
        for h in (1, 2)
        for lr in ("a", "b", "c")
    ]
    # h1: b has seed 0 only, so the rates are compared on seed 0 (b 0.6 < c 0.7), although c
    # has the lower mean over its own two seeds (0.55)
    test_loss = {"h1": {"a": (1.0, 1.0), "b": (0.6,), "c": (0.7, 0.4)}}
    test_loss["h2"] = {"a": (math.nan, 0.0), "b": (0.9, 0.9), "c": (0.1, 0.1)}  # a diverged
    values = {
        f"{h}-lr{lr}": [{"test.loss": loss, "ood.accuracy": 10 * loss} for loss in test_loss[h][lr]]
        for h in test_loss
        for lr in test_loss[h]
    }
    _write_runs(tmp_path, runs, values)
    record = {
        "name": "test/select",
        "description": "lr per cell",
        "runs": runs,
        "metrics": ["ood.accuracy"],
        "x": "hidden",
        "hue": None,
        "paper": {},
        "seeds": [0, 1],
        "select": {"facet": "lr", "metric": "test.loss", "maximize": False},
    }
    (tmp_path / "sweep.json").write_text(json.dumps(record))
    summary = report(tmp_path)["summary"]
    assert [(e["label"], e["lr"], e["selection"]) for e in summary] == [
        ("h1-lrb", "lr b", "lowest test.loss (mean of seeds 0) of 3/3 lr"),
        ("h2-lrc", "lr c", "lowest test.loss (mean of seeds 0, 1) of 3/3 lr"),
    ]
    assert summary[0]["mean"] == pytest.approx(6.0) and summary[0]["n"] == 1
    assert summary[1]["mean"] == pytest.approx(1.0) and summary[1]["n"] == 2
    with open(tmp_path / "results.csv") as f:
        selected = {(r["label"], r["seed"]): r["selected"] for r in csv.DictReader(f)}
    assert selected[("h1-lrb", "0")] == "True" and selected[("h1-lrc", "1")] == "False"
    assert len(selected) == 11

    record["select"]["maximize"] = True  # highest test loss: the other end, never a diverged run
    (tmp_path / "sweep.json").write_text(json.dumps(record))
    assert [e["label"] for e in report(tmp_path)["summary"]] == ["h1-lra", "h2-lrb"]


def test_a_cell_chosen_among_fewer_rates_than_the_sweep_lists_says_so(tmp_path):
    """A group some of whose runs have not finished is chosen among the others only; its cell
    in the heat map reads `(k of n)` so that it does not pass for a fully tuned one."""
    labels = [f"h{h}-lr{lr}" for h in (1, 2) for lr in ("a", "b", "c")]
    record = {
        "name": "test/partial",
        "runs": [
            {"label": label, "facets": {"hidden": label[:2], "lr": label[3:]}, "config": {}}
            for label in labels
        ],
        "metrics": ["ood.accuracy"],
        "x": "hidden",
        "hue": "lr",
        "plot": "grid",
        "paper": {},
        "seeds": [0],
        "select": {"facet": "lr", "metric": "test.loss", "maximize": False},
    }
    finished = [r for r in record["runs"] if r["label"] != "h2-lrc"]  # h2: 2 of its 3 rates
    values = {r["label"]: [{"test.loss": 1.0, "ood.accuracy": 0.5}] for r in finished}
    _write_runs(tmp_path, finished, values)
    rows = [{"label": r["label"], "seed": 0, "finished": True, "test.loss": 1.0} for r in finished]
    chosen = runs.sweeps._select(record, rows)
    assert chosen is not None
    assert {label: (c.compared, c.of) for label, c in chosen.items()} == {
        "h1-lra": (3, 3),
        "h2-lra": (2, 3),
    }
    assert runs.sweeps._partial(chosen["h1-lra"]) == ""
    assert runs.sweeps._partial(chosen["h2-lra"]) == " (2 of 3)"
    assert chosen["h2-lra"].text == "lowest test.loss (mean of seeds 0) of 2/3 lr"
    (tmp_path / "sweep.json").write_text(json.dumps(record))
    summary = report(tmp_path)["summary"]
    assert [e["selection"] for e in summary] == [chosen["h1-lra"].text, chosen["h2-lra"].text]
    assert (tmp_path / "figure.png").stat().st_size > 1000


def test_a_cell_chosen_on_fewer_seeds_than_it_shows_says_so(tmp_path):
    """Runs of a group are compared on the seeds all of them finished; where the chosen run
    shows more seeds than that, its cell reads `(s seeds)`, and one compared on all its seeds
    reads nothing."""
    record = {
        "name": "test/seeds",
        "runs": [
            {"label": f"h1-lr{lr}", "facets": {"hidden": "h1", "lr": lr}, "config": {}}
            for lr in ("a", "b")
        ],
        "metrics": ["ood.accuracy"],
        "x": "hidden",
        "hue": "lr",
        "plot": "grid",
        "paper": {},
        "seeds": [0, 1, 2],
        "select": {"facet": "lr", "metric": "test.loss", "maximize": False},
    }
    # lr a: seeds 0-2, lowest loss on seeds 0 and 2; lr b: seeds 0 and 2 only
    losses = {("h1-lra", 0): 1.0, ("h1-lra", 1): 9.0, ("h1-lra", 2): 1.0}
    losses |= {("h1-lrb", 0): 2.0, ("h1-lrb", 2): 2.0}
    rows = [
        {"label": label, "seed": seed, "finished": True, "test.loss": loss}
        for (label, seed), loss in losses.items()
    ]
    chosen = runs.sweeps._select(record, rows)
    assert chosen is not None and set(chosen) == {"h1-lra"}
    choice = chosen["h1-lra"]
    assert (choice.compared, choice.of, choice.seeds) == (2, 2, 2)
    assert choice.text == "lowest test.loss (mean of seeds 0, 2) of 2/2 lr"
    assert runs.sweeps._partial(choice, 3) == " (2 seeds)"
    assert runs.sweeps._partial(choice, 2) == ""
    assert runs.sweeps._partial(choice._replace(seeds=1), 3) == " (1 seed)"
    assert runs.sweeps._partial(choice._replace(compared=1), 3) == " (1 of 2) (2 seeds)"
    alone = choice._replace(seeds=0)  # runs sharing no seed are each judged on their own
    assert runs.sweeps._partial(alone, 3) == ""


def test_a_selection_the_runs_cannot_make_is_an_error():
    base = make_tiny_config(steps=2, eval_every=2)
    run = SweepRun("a", base, {"support": "compositional"})
    with pytest.raises(ValueError, match="facet 'lr', which runs \\['a'\\] do not have"):
        Sweep("s", (run,), ("ood.accuracy",), x="support", select=Select("lr", "test.loss"))
    twin = SweepRun("b", base, {"support": "compositional", "lr": "lr 1"})
    with pytest.raises(ValueError, match="share every facet"):
        Sweep(
            "s",
            (dataclasses.replace(twin, label="a"), twin),
            ("ood.accuracy",),
            x="support",
            select=Select("lr", "test.loss"),
        )
    with pytest.raises(ValueError, match="also plots it"):
        Sweep("s", (twin,), ("ood.accuracy",), x="lr", select=Select("lr", "test.loss"))


def test_fig3f_with_rates_reuses_the_single_rate_runs():
    """`schug2024/fig3f-lr-cpu` is `fig3f-cpu` at each of the authors' three outer rates: its
    1e-3 runs are `fig3f-cpu`'s (same configs), so those can be copied in, not re-run."""
    single = {r.label: r for r in runs.presets.get_sweep("schug2024/fig3f-cpu").runs}
    tuned = runs.presets.get_sweep("schug2024/fig3f-lr-cpu")
    assert len(tuned.runs) == 3 * len(single)
    for label, run in single.items():
        assert (
            tuned.runs[[r.label for r in tuned.runs].index(f"{label}-lr0.001")].config == run.config
        )
    assert {r.config.algorithm.outer.lr for r in tuned.runs} == {3e-4, 1e-3, 3e-3}
    assert tuned.select == Select("lr", "test.loss")


def test_facets_neither_plotted_nor_selected_get_a_row_of_panels_each(tmp_path):
    """Runs differing in a facet that is neither `x` nor `hue` (e.g. the kind of codes) are
    drawn in a row of their own, not over one another; the paper-size sweeps that cross more
    than two settings rely on it."""
    record = {
        "name": "test/panels",
        "metrics": ["ood.mse"],
        "x": "hidden",
        "hue": "modules",
        "runs": [
            {"label": f"{c}-h{h}-m1", "facets": {"hidden": f"x{h}", "modules": "x1", "codes": c}}
            for c in ("discrete", "continuous")
            for h in (1, 2)
        ],
    }
    summary = []
    for run in record["runs"]:  # continuous twice discrete; hidden x2 twice x1
        facets = run["facets"]
        mean = (1.0 if facets["codes"] == "discrete" else 2.0) * (
            2 if facets["hidden"] == "x2" else 1
        )
        summary.append({**facets, "label": run["label"], "metric": "ood.mse", "mean": mean})
        summary[-1] |= {"std": 0.0, "n": 1, "paper": ""}
    maps = runs.sweeps._grid_figure(record, summary, tmp_path / "grid.png")
    assert set(maps) == {"ood.mse (discrete)", "ood.mse (continuous)"}
    np.testing.assert_allclose(maps["ood.mse (discrete)"], [[1.0, 2.0]])
    np.testing.assert_allclose(maps["ood.mse (continuous)"], [[2.0, 4.0]])
    rows = [{"label": e["label"], "finished": True, "ood.mse": e["mean"]} for e in summary]
    runs.sweeps._figure(record, summary, rows, tmp_path / "bars.png")
    assert (tmp_path / "bars.png").stat().st_size > 1000
    for name in ("schug2024/fig2d-grid", "schug2024/fig3f"):  # crossed: heat maps, by row
        assert runs.presets.get_sweep(name).plot == "grid"


def test_the_bar_figure_gives_slots_only_to_settings_with_a_result(tmp_path):
    """A sweep run in part (the x32 student of a six-setting Fig. 2D sweep) is drawn as the
    settings that have results, not as empty slots for the rest."""
    record = {
        "name": "test/partial",
        "metrics": ["ood.mse", "alignment"],
        "x": "hidden",
        "hue": None,
        "runs": [{"label": f"x{h}", "facets": {"hidden": f"x{h}"}} for h in (1, 2, 4, 32)],
    }
    summary = [
        {"label": label, "hidden": label, "metric": metric, "mean": 0.5, "std": 0.1, "n": 2}
        | {"paper": 0.7 if metric == "alignment" else ""}
        for label in ("x2", "x32")
        for metric in ("ood.mse", "alignment")
    ]
    rows = [
        {"label": e["label"], "finished": True, e["metric"]: m} for e in summary for m in (0.4, 0.6)
    ]
    drawn = runs.sweeps._figure(record, summary, rows, tmp_path / "bars.png")
    assert drawn == ["x2", "x32"]
    assert (tmp_path / "bars.png").stat().st_size > 1000
    # Every setting reported: every one drawn, in the sweep's order.
    summary += [e | {"label": "x1", "hidden": "x1"} for e in summary[:2]]
    summary += [e | {"label": "x4", "hidden": "x4"} for e in summary[:2]]
    assert runs.sweeps._figure(record, summary, rows, tmp_path / "b.png") == [
        "x1",
        "x2",
        "x4",
        "x32",
    ]


def test_fig2d_against_weight_decay_reuses_the_runs_at_zero():
    """`schug2024/fig2d-wd-cpu` is `fig2d-cpu`'s discrete students at the authors' four weight
    decays; its runs at 0 are `fig2d-cpu`'s (same configs), so those can be copied in."""
    single = {r.label: r for r in runs.presets.get_sweep("schug2024/fig2d-cpu").runs}
    decays = {r.label: r for r in runs.presets.get_sweep("schug2024/fig2d-wd-cpu").runs}
    for ratio in (1, 2, 4, 8):
        assert decays[f"discrete-x{ratio}-wd0"].config == single[f"discrete-x{ratio}"].config
        weight_decays = {
            decays[f"discrete-x{ratio}-wd{d}"].config.algorithm.outer.weight_decay
            for d in ("1e-05", "0.0001", "0.001")
        }
        assert weight_decays == {1e-5, 1e-4, 1e-3}


def test_the_fig2d_diagonal_to_x32_extends_fig2d_cpu():
    """`schug2024/fig2d-cpu-x32` is `fig2d-cpu`'s diagonal out to the authors' largest factor:
    its x1-x8 runs are `fig2d-cpu`'s (so `--reuse` copies them), and x16 and x32 scale the
    teacher's hidden width (16) and module count (6) by 16 and 32, all else equal."""
    single = {r.label: r for r in runs.presets.get_sweep("schug2024/fig2d-cpu").runs}
    wide = {r.label: r for r in runs.presets.get_sweep("schug2024/fig2d-cpu-x32").runs}
    assert set(wide) == set(single) | {
        f"{d}-x{r}" for d in ("discrete", "continuous") for r in (16, 32)
    }
    for label, run in single.items():
        assert wide[label].config == run.config
    for dist in ("discrete", "continuous"):
        for ratio in (16, 32):
            config = wide[f"{dist}-x{ratio}"].config
            assert (config.model.hidden, config.model.num_modules) == (16 * ratio, 6 * ratio)
            x1 = single[f"{dist}-x1"].config
            assert dataclasses.replace(config, model=x1.model) == x1
    assert "x16, x32" in runs.presets.get_sweep("schug2024/fig2d-cpu-x32").description


def _assert_only_the_outer_lr_differs(fast: Sweep, slow: Sweep, lr: float = 1e-3):
    """`slow` has `fast`'s runs with outer lr `lr` (the authors' 1e-3 unless given) in place of
    the CPU presets' 3e-3, and nothing else changed."""
    by_label = {r.label: r for r in fast.runs}
    assert {r.label for r in slow.runs} == set(by_label)
    assert {by_label[r.label].config.algorithm.outer.lr for r in slow.runs} == {3e-3}
    for run in slow.runs:
        assert run.config.algorithm.outer.lr == lr
        outer = dataclasses.replace(run.config.algorithm.outer, lr=3e-3)
        algorithm = dataclasses.replace(run.config.algorithm, outer=outer)
        assert dataclasses.replace(run.config, algorithm=algorithm) == by_label[run.label].config


def test_the_fig2d_diagonal_at_the_authors_outer_lr_changes_only_the_lr():
    """`schug2024/fig2d-cpu-x32-lr1e-3` is the diagonal out to x32 with the authors' outer
    learning rate 1e-3 in place of the CPU presets' 3e-3, nothing else changed; its continuous
    x1-x8 runs are the diagonal cells of the continuous grid at 1e-3 (so `--reuse` copies them)."""
    slow = runs.presets.get_sweep("schug2024/fig2d-cpu-x32-lr1e-3")
    _assert_only_the_outer_lr_differs(runs.presets.get_sweep("schug2024/fig2d-cpu-x32"), slow)
    grid = {
        r.label: r
        for r in runs.presets.get_sweep("schug2024/fig2d-grid-continuous-cpu-lr1e-3").runs
    }
    diagonal = {r.label: r for r in slow.runs}
    for ratio in (1, 2, 4, 8):
        assert (
            grid[f"continuous-h{ratio}-m{ratio}"].config == diagonal[f"continuous-x{ratio}"].config
        )
    assert "outer lr 0.001" in slow.description


def test_the_fig2d_diagonal_at_a_third_of_the_authors_lr_changes_only_the_lr():
    """`schug2024/fig2d-cpu-x32-lr3e-4` is the same diagonal at outer lr 3e-4 (for the students
    that diverge at 1e-3), nothing else changed, and its title says so."""
    slow = runs.presets.get_sweep("schug2024/fig2d-cpu-x32-lr3e-4")
    _assert_only_the_outer_lr_differs(runs.presets.get_sweep("schug2024/fig2d-cpu-x32"), slow, 3e-4)
    assert "outer lr 0.0003" in slow.description


def test_the_continuous_fig2d_grid_crosses_the_factors_and_reuses_the_diagonal():
    """`schug2024/fig2d-grid-continuous-cpu` is the CPU grid with continuous codes: every
    student trains on continuous codes, and its diagonal is `fig2d-cpu`'s continuous runs."""
    single = {r.label: r for r in runs.presets.get_sweep("schug2024/fig2d-cpu").runs}
    grid = {r.label: r for r in runs.presets.get_sweep("schug2024/fig2d-grid-continuous-cpu").runs}
    assert len(grid) == 16
    discrete = runs.presets.get_sweep("schug2024/fig2d-grid-cpu").runs
    assert {r.config.task.distribution for r in discrete} == {"discrete"}
    assert {r.config.task.distribution for r in grid.values()} == {"continuous"}
    for ratio in (1, 2, 4, 8):
        assert grid[f"continuous-h{ratio}-m{ratio}"].config == single[f"continuous-x{ratio}"].config
    assert grid["continuous-h2-m8"].config.model.hidden == 32
    assert grid["continuous-h2-m8"].config.model.num_modules == 48


def test_the_continuous_fig2d_grid_at_the_authors_outer_lr_changes_only_the_lr():
    """`schug2024/fig2d-grid-continuous-cpu-lr1e-3` is the continuous CPU grid with the authors'
    outer learning rate 1e-3 in place of the CPU presets' 3e-3, and nothing else changed."""
    slow = runs.presets.get_sweep("schug2024/fig2d-grid-continuous-cpu-lr1e-3")
    _assert_only_the_outer_lr_differs(
        runs.presets.get_sweep("schug2024/fig2d-grid-continuous-cpu"), slow
    )
    assert "outer lr 0.001" in slow.description


def test_a_sweep_copies_runs_another_sweep_trained_with_the_same_config(tmp_path, capsys):
    """`reuse`: a run whose exact config and seed a finished run of another sweep trained is
    copied, not trained (its history names the origin); another config or seed is not."""
    first = tmp_path / "first"
    run_sweep(_tiny_sweep(), "tiny", first, seeds=(0,), only=["comp"], progress=False)
    base = _tiny_sweep().runs[0].config
    outer = dataclasses.replace(base.algorithm.outer, lr=3 * base.algorithm.outer.lr)
    faster = dataclasses.replace(base, algorithm=dataclasses.replace(base.algorithm, outer=outer))
    second = Sweep(
        "again",
        (SweepRun("twin", base, {"lr": "a"}), SweepRun("faster", faster, {"lr": "b"})),
        metrics=("ood.accuracy",),
        x="lr",
        seeds=(0,),
    )
    candidates = runs.sweeps._finished_runs([first])
    assert [path for path, _ in candidates] == [first / "comp" / "seed_0"]
    for seed, index in ((0, 1), (1, 0)):  # another config, another seed
        config = plan(second, (seed,))[index][2]
        assert runs.sweeps._reuse(candidates, config, tmp_path / "x") is None
    assert not (tmp_path / "x").exists()
    with pytest.raises(ValueError, match=r"--reuse .* is not a directory"):
        run_sweep(second, "again", tmp_path / "second", reuse=[tmp_path / "missing"])

    out = tmp_path / "second"
    run_sweep(second, "again", out, seeds=(0,), only=["twin"], progress=False, reuse=[first])
    assert "twin seed 0: copied from" in capsys.readouterr().err
    copied, origin = out / "twin" / "seed_0", first / "comp" / "seed_0"
    assert (copied / "metrics.jsonl").read_text() == (origin / "metrics.jsonl").read_text()
    history = runs.run.read_history(copied)
    assert history[-1]["event"] == "copied" and history[-1]["from"] == str(origin.resolve())
    assert [e["n"] for e in report(out)["summary"]] == [1]


def test_a_sweep_reuses_exported_runs_and_never_retrains_their_copies(tmp_path, capsys):
    """An exported sweep (`export`: the committed kind, no checkpoints) serves `reuse`: its
    finished runs are copied and count as done; a copy cannot be continued to more steps (it
    has no checkpoint to resume), which is an error that leaves its numbers as they were."""
    first, exported = tmp_path / "first", tmp_path / "exported"
    run_sweep(_tiny_sweep(), "tiny", first, seeds=(0,), only=["comp"], progress=False)
    assert runs.sweeps.export(first, exported) == ["comp/seed_0"]
    assert not (exported / "comp" / "seed_0" / "checkpoints").exists()

    out = tmp_path / "second"
    run_sweep(
        _tiny_sweep(), "tiny", out, seeds=(0,), only=["comp"], progress=False, reuse=[exported]
    )
    assert "comp seed 0: copied from" in capsys.readouterr().err
    copied = out / "comp" / "seed_0"
    metrics = (copied / "metrics.jsonl").read_text()
    assert metrics == (first / "comp" / "seed_0" / "metrics.jsonl").read_text()
    run_sweep(_tiny_sweep(), "tiny", out, seeds=(0,), only=["comp"], progress=False)
    assert "comp seed 0: done already" in capsys.readouterr().err

    failures = run_sweep(
        _tiny_sweep(), "tiny", out, seeds=(0,), steps=4, only=["comp"], progress=False
    )
    assert len(failures) == 1 and "no checkpoints" in failures[0]
    assert (copied / "metrics.jsonl").read_text() == metrics
    assert not (copied / "checkpoints").exists()


def test_keep_sets_the_checkpoints_each_run_keeps_and_a_run_resumes_under_another(tmp_path):
    """`--keep 1` leaves one checkpoint per run (a run directory small enough to bring back
    from a GPU call); the count changes no number, so a run stopped under one `keep` resumes
    under another, and a finished run of another sweep is reused whatever it kept."""
    sweep = _tiny_sweep()
    with pytest.raises(ValueError, match="--keep must be at least 1"):
        run_sweep(sweep, "tiny", tmp_path, keep=0)
    assert {c.run.keep for _, _, c in plan(sweep, seeds=(0,), keep=1)} == {1}
    assert {c.run.keep for _, _, c in plan(sweep, seeds=(0,))} == {5}  # each run's own

    out = tmp_path / "sweep"
    run_sweep(sweep, "tiny", out, seeds=(0,), steps=4, only=["comp"], progress=False, keep=1)
    checkpoints = out / "comp" / "seed_0" / "checkpoints"
    assert sorted(p.name for p in checkpoints.iterdir() if p.name.isdigit()) == ["4"]
    # The same run to 6 steps under the sweep's own keep may resume it; another lr may not.
    config = plan(sweep, seeds=(0,), steps=6)[0][2]
    runs.run.prepare(config, out / "comp" / "seed_0", resume=True)
    outer = dataclasses.replace(config.algorithm.outer, lr=0.5)
    other = dataclasses.replace(
        config, algorithm=dataclasses.replace(config.algorithm, outer=outer)
    )
    with pytest.raises(runs.run.RunError, match=r"algorithm\.outer\.lr"):
        runs.run.prepare(other, out / "comp" / "seed_0", resume=True)

    config = plan(sweep, seeds=(0,), steps=4)[0][2]
    candidates = runs.sweeps._finished_runs([out])
    assert runs.sweeps._reuse(candidates, config, tmp_path / "copy") is not None


@pytest.mark.parametrize(("outer_data", "per_step"), [("fresh", 1), ("reuse", 4)])
def test_rl_curves_are_drawn_against_frames_and_policy_updates(tmp_path, outer_data, per_step):
    """`curves.csv` holds the policy updates beside the frames (a two-loop algorithm counts its
    fast iterations per step); `curves-updates.png` draws the runs against them."""
    import dataclasses

    from runs.run import save_config
    from runs.sweeps import _curves

    preset = runs.experiments.get_preset("madan2021/doorkey-5x5-meta-rims")
    config = dataclasses.replace(
        preset,
        algorithm=dataclasses.replace(preset.algorithm, outer_data=outer_data, inner_updates=None),
    )
    assert config.algorithm.updates_per_step == per_step
    record = {
        "description": "RL",
        "runs": [{"label": "m", "facets": {}}],
        "metrics": ["eval.success"],
        "seeds": [0],
    }
    directory = tmp_path / "m" / "seed_0"
    directory.mkdir(parents=True)
    save_config(config, directory)
    frames = config.algorithm.frames_per_step
    rows = []
    for step in (1, 2):
        rows.append({"step": step, "pool": "train", "frames": step * frames})
        rows.append({"step": step, "pool": "eval", "success": 0.1 * step})
    (directory / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    _curves(record, tmp_path)
    lines = (tmp_path / "curves.csv").read_text().splitlines()
    assert lines[0] == "label,seed,frames,updates,eval.success"
    assert lines[2] == f"m,0,{2 * frames},{2 * per_step},0.2"
    assert (tmp_path / "curves.png").stat().st_size > 0
    assert (tmp_path / "curves-updates.png").stat().st_size > 0


def test_a_run_saved_before_sources_were_recorded_is_reused():
    """The committed Madan runs (0.1, no `task_source`/`model_source`) match their presets."""
    import dataclasses

    from runs.run import resolve
    from runs.sweeps import _finished_runs, _same_run

    repo = pathlib.Path(__file__).resolve().parents[1]
    found = dict(_finished_runs([repo / "docs/figures/madan2021-doorkey-cpu"]))
    saved = next(c for d, c in found.items() if d.parts[-2:] == ("doorkey-5x5-lstm", "seed_1"))
    assert saved.task_source is None
    preset = runs.experiments.get_preset("madan2021/doorkey-5x5-lstm")
    want = resolve(dataclasses.replace(preset, run=dataclasses.replace(preset.run, seed=1)))
    assert want.task_source is not None and _same_run(saved, want)
    elsewhere = dataclasses.replace(
        saved, task_source=dataclasses.replace(want.task_source, dist="x")
    )
    assert not _same_run(elsewhere, want)  # another distribution's task of the same name


def test_the_madan_sweeps_find_every_committed_run_and_the_presets_are_faithful():
    """Each committed Madan sweep's runs are the runs of the sweep of that name (so `zoo sweep
    --reuse` copies them in); the presets are the faithful reading (the RL code's attention
    across modules; Meta-RIMs' encoders in both loops and its slow loop on the fast frames)."""
    import dataclasses

    from plugins.madan2021.presets import SWEEPS
    from runs.run import resolve
    from runs.sweeps import _finished_runs, _same_run

    repo = pathlib.Path(__file__).resolve().parents[1]
    for name in ("doorkey-cpu", "ablations-cpu", "outer-data-cpu"):
        found = list(_finished_runs([repo / f"docs/figures/madan2021-{name}"]))
        sweep = SWEEPS[f"madan2021/{name}"]
        assert len(found) == 3 * len(sweep.runs)
        for directory, saved in found:
            label, seed = directory.parts[-2], int(directory.parts[-1].removeprefix("seed_"))
            config = next(r.config for r in sweep.runs if r.label == label)
            want = resolve(
                dataclasses.replace(config, run=dataclasses.replace(config.run, seed=seed))
            )
            assert _same_run(saved, want), directory
    meta = runs.experiments.get_preset("madan2021/doorkey-5x5-meta-rims")
    rims = runs.experiments.get_preset("madan2021/gotoobj-rims")
    assert meta.model.input_attention == rims.model.input_attention == "modules"
    assert meta.model.encoders == "both" and meta.algorithm.outer_data == "reuse"
    assert rims.model.encoders == "slow"  # one loop: the label changes nothing
