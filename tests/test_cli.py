"""The `zoo` command line: listing, usage errors, train / eval / resume, presets, and a
third-party plugin installed as its own distribution."""

import ast
import dataclasses
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from conftest import make_tiny_config, pip_install_offline

import plugins
import runs.run
from runs.algorithms.config import BilevelConfig
from runs.checkpoint import Checkpoints
from runs.cli import UsageError, main, parse_train
from runs.config import PluginSource
from runs.presets import get_preset, get_sweep

REPO = pathlib.Path(__file__).resolve().parents[1]
PLUGIN_PKG = REPO / "tests" / "plugin_pkg"

TINY = [
    "--task.num-modules", "4",
    "--task.max-active", "2",
    "--task.hidden", "8",
    "--task.in-features", "4",
    "--task.out-features", "3",
    "--task.shots-support", "8",
    "--task.shots-query", "8",
    "--task.num-norm-inputs", "16",
    "--task.ood-h", "1", "2",
    "--model.hidden", "8",
    "--model.num-hidden", "2",
    "--model.num-templates", "4",
    "--algorithm.inner.steps", "2",
    "--algorithm.outer.lr", "0.01",
    "--algorithm.outer.meta-batch", "4",
    "--steps-per-call", "2",
    "--checkpoint-every", "2",
    "--keep", "5",
    "--eval.every", "2",
    "--eval.tasks", "4",
    "--eval.batch", "2",
    "--seed", "0",
    "--no-progress",
]  # fmt: skip
TRAIN = ["train", "hyperteacher", "linear-hypernet"]
POOLS = ["test", "ood", "ood_1", "ood_2"]


def _exit_code(argv: list[str]) -> int:
    """`main(argv)`, with a `SystemExit` (tyro's way out) turned into its code."""
    try:
        return main(argv)
    except SystemExit as error:
        return error.code if isinstance(error.code, int) else 1


def _never_train(*args, **kwargs):
    raise AssertionError("training started although the settings are invalid")


def _snapshot(directory: pathlib.Path) -> dict[str, tuple[int, bytes]]:
    return {
        str(p.relative_to(directory)): (p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def _zoo_command(args: list[str], site: pathlib.Path) -> tuple[list[str], dict[str, str]]:
    """The `zoo` console script run with the plugin on the path, and its environment."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    script = shutil.which("zoo")
    return [*([script] if script else [sys.executable, "-m", "runs.cli"]), *args], env


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """`tests/plugin_pkg` pip-installed into a temporary directory (not on this process's
    path: only the subprocesses below see it)."""
    target = tmp_path_factory.mktemp("site")
    pip_install_offline(PLUGIN_PKG, target)
    return target


@pytest.fixture(scope="module")
def plugin_run(plugin_site: pathlib.Path, tmp_path_factory: pytest.TempPathFactory):
    """`zoo train example-regression example-anil ...` in a subprocess, started at once and
    awaited by `wait()`, so that it overlaps the tests in between."""
    out = tmp_path_factory.mktemp("plugin") / "run"
    flags = ["--steps", "4", "--out", str(out), "--steps-per-call", "2", "--checkpoint-every", "2"]
    flags += ["--eval.every", "2", "--eval.tasks", "4", "--algorithm.outer.meta-batch", "4"]
    flags += ["--no-progress"]
    command, env = _zoo_command(
        ["train", "example-regression", "example-anil", *flags], plugin_site
    )
    stdout, stderr = out.parent / "stdout.txt", out.parent / "stderr.txt"
    # Files, not pipes: the child never waits on a reader.
    with stdout.open("w") as out_file, stderr.open("w") as err_file:
        child = subprocess.Popen(command, env=env, stdout=out_file, stderr=err_file)

    def wait() -> tuple[pathlib.Path, str]:
        child.wait(timeout=600)
        assert child.returncode == 0, stderr.read_text()[-3000:]
        return out, stdout.read_text()

    yield wait
    if child.poll() is None:
        child.kill()
        child.wait()


def test_third_party_plugin_is_listed(plugin_site: pathlib.Path, plugin_run):
    command, env = _zoo_command(["list"], plugin_site)
    listing = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert listing.returncode == 0, listing.stderr
    for name in ("example-anil", "example-regression", "linear-hypernet", "hyperteacher"):
        assert name in listing.stdout
    rows = [line.split()[:2] for line in listing.stdout.splitlines() if line.startswith("  ")]
    assert ["example-anil", "zoo-example-plugin"] in rows, listing.stdout
    assert ["example-regression", "zoo-example-plugin"] in rows, listing.stdout
    assert "failed plugins" not in listing.stdout


def test_list(capsys: pytest.CaptureFixture[str]):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    rows = [line.split()[:2] for line in out.splitlines() if line.startswith("  ")]
    own = plugins.own_distribution()  # compgen-zoo (zoo where installed before the rename)
    assert ["linear-hypernet", own] in rows and ["hyperteacher", own] in rows, out
    assert out.index("linear-hypernet") > out.index("models:")
    assert out.index("hyperteacher") > out.index("tasks:")


def test_no_command_prints_usage(capsys: pytest.CaptureFixture[str]):
    assert main([]) == 0
    assert "usage: zoo COMMAND" in capsys.readouterr().out
    assert main(["trian"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'trian'. Did you mean 'train'?" in err
    assert "usage: zoo COMMAND" in err


def test_version(capsys: pytest.CaptureFixture[str]):
    from importlib import metadata

    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    name, version = out.split()
    assert name in ("compgen-zoo", "zoo") and version == metadata.version(name)


def test_train_help_exits_0_on_stdout(capsys: pytest.CaptureFixture[str]):
    for flag in ("--help", "-h"):
        assert main(["train", flag]) == 0
        captured = capsys.readouterr()
        assert "usage: zoo train TASK MODEL" in captured.out and "models:" in captured.out
        assert captured.err == ""
    assert main(["train", "hyperteacher", "--help"]) == 0
    assert "usage: zoo train TASK MODEL" in capsys.readouterr().out


def test_a_closed_pipe_is_no_error(tmp_path: pathlib.Path):
    """`zoo presets | head -1`: the reader leaves early; no traceback."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, "-m", "runs.cli", "presets"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # before the child writes anything: it starts up for a second
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == 1
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_train_without_names_lists_tasks_and_models(capsys: pytest.CaptureFixture[str]):
    assert main(["train"]) == 2
    err = capsys.readouterr().err
    assert "usage: zoo train TASK MODEL" in err
    tasks, models = err.split("tasks:")[1].split("models:")
    assert "hyperteacher" in tasks and "linear-hypernet" in models
    assert main(["train", "hyperteacher"]) == 2
    assert "usage: zoo train TASK MODEL" in capsys.readouterr().err


def test_unknown_names_give_close_matches(capsys: pytest.CaptureFixture[str]):
    assert main(["train", "hyperteachr", "linear-hypernet"]) == 2
    assert "Did you mean 'hyperteacher'?" in capsys.readouterr().err
    assert main(["train", "hyperteacher", "linear-hypernt"]) == 2
    assert "Did you mean 'linear-hypernet' or" in capsys.readouterr().err


def test_flags_build_the_config(tiny_config):
    config, command = parse_train([*TRAIN[1:], "--steps", "4", "--out", "somewhere", *TINY])
    # The algorithm is chosen from the kinds of task and model, and named.
    assert config == dataclasses.replace(tiny_config, algorithm_name="bilevel")
    assert isinstance(config.algorithm, BilevelConfig)
    assert command.out == pathlib.Path("somewhere") and not command.resume
    assert not command.progress


def test_the_algorithm_flag(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path):
    config, _ = parse_train([*TRAIN[1:], "--algorithm", "bilevel", "--out", "x", *TINY])
    assert config.algorithm_name == "bilevel"
    assert _exit_code([*TRAIN, "--algorithm", "bilevl", "--out", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err  # algorithms are plugins, looked up as the others are
    assert "Unknown algorithm 'bilevl'.\nDid you mean 'bilevel'?" in err
    assert "Available algorithms: bilevel, in-context, " in err
    out = tmp_path / "b"
    assert _exit_code([*TRAIN, "--algorithm", "in-context", "--out", str(out), *TINY]) == 2
    err = capsys.readouterr().err
    assert "Algorithm 'in-context' cannot train LinearHypernet on Hyperteacher" in err
    assert "its model must be an instance of AbstractInContextLearner" in err
    assert not out.exists()


def test_the_flags_of_0_1_are_aliases_of_the_algorithm_flags():
    """`--inner.*` and `--outer.*` (0.1's sections) give the config of `--algorithm.inner.*`
    and `--algorithm.outer.*`, in either spelling of a value."""
    given = ["--out", "x", "--steps", "4"]
    new, _ = parse_train(
        [*TRAIN[1:], *given, "--algorithm.outer.lr", "0.01", "--algorithm.inner.steps", "3"]
    )
    assert new.algorithm.outer.lr == 0.01 and new.algorithm.inner.steps == 3
    old, _ = parse_train([*TRAIN[1:], *given, "--outer.lr", "0.01", "--inner.steps", "3"])
    assert old == new
    old, _ = parse_train([*TRAIN[1:], *given, "--outer.lr=0.01", "--inner.steps=3"])
    assert old == new
    lower, _ = parse_train([*TRAIN[1:], *given, "--outer.lr", "0.001", "--inner.steps", "3"])
    assert lower != new  # the alias carries its value
    # The in-context algorithm has an outer optimizer and no inner loop.
    context = ["mutual-exclusivity", "meta-seq2seq", *given]
    new, _ = parse_train([*context, "--algorithm.outer.meta-batch", "2"])
    old, _ = parse_train([*context, "--outer.meta-batch", "2"])
    assert old == new and new.algorithm.outer.meta_batch == 2
    with pytest.raises(UsageError, match=r"--inner\.steps .*'in-context' has none"):
        parse_train([*context, "--inner.steps", "3"])


def test_the_outer_flags_of_0_1_are_refused_for_an_algorithm_without_them():
    """PPO's optimizer is `--algorithm.lr`: `--outer.lr` is refused, naming the algorithm and
    its own `--algorithm.*` flags."""
    with pytest.raises(UsageError) as info:
        parse_train(["doorkey-5x5", "lstm-agent", "--out", "x", "--outer.lr", "0.01"])
    message = str(info.value)
    assert "--outer.lr" in message and "'ppo' has none" in message
    assert "--algorithm." in message
    config, _ = parse_train(["doorkey-5x5", "lstm-agent", "--out", "x", "--algorithm.lr", "0.01"])
    assert config.algorithm_name == "ppo" and config.algorithm.lr == 0.01


def test_two_algorithms_of_equal_preference_are_an_error_naming_both(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
):
    """Two algorithms of the same, highest, preference accept the pair: no choice is made;
    the error names both and `--algorithm`, which settles it."""
    import equinox as eqx

    from runs import algorithms

    names = ("bilevel-twin-a", "bilevel-twin-b")
    for name in names:
        plugins.register(
            plugins.AlgorithmSpec(
                name=name,
                config=BilevelConfig,
                factory="runs.algorithms.bilevel:make",
                algorithm="runs.algorithms.bilevel:Bilevel",
                preference=1,  # above the built-in bilevel's 0
                description="bilevel under another name",
            )
        )
    try:
        task, model = eqx.filter_eval_shape(runs.run.build, make_tiny_config())
        with pytest.raises(algorithms.AlgorithmError) as info:
            algorithms.choose(task, model)
        message = str(info.value)
        assert all(f"'__main__:{name}'" in message for name in names), message
        assert "--algorithm" in message and "same preference (1)" in message
        assert "'compgen-zoo:bilevel'" not in message  # of lower preference: no contender
        out = tmp_path / "run"
        assert _exit_code([*TRAIN, "--out", str(out), *TINY]) == 2
        err = capsys.readouterr().err
        assert all(name in err for name in names) and "--algorithm" in err
        assert not out.exists()
        config, _ = parse_train([*TRAIN[1:], "--algorithm", names[1], "--out", "x", *TINY])
        assert config.algorithm_name == names[1]
        assert algorithms.choose(task, model, names[0]).name == names[0]
    finally:
        for name in names:
            plugins.unregister(name)
    assert algorithms.choose(task, model).name == "bilevel"


def test_resume_with_allow_changes_takes_an_outer_rate_and_refuses_a_meta_batch(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    """`zoo train --resume --allow-changes` on a bilevel run: `--algorithm.outer.lr` is one of
    the optimizer scalars the algorithm's config declares changeable (under `algorithm.`);
    `--algorithm.outer.meta-batch` changes shapes and is refused, naming it. Nothing trains:
    only the checks made before compiling run."""
    out = tmp_path / "run"
    base = [*TRAIN, "--steps", "4", "--out", str(out), *TINY]
    config, _ = parse_train(base[1:])
    runs.run.save_config(runs.run.prepare(config, out, resume=False), out)
    assert "algorithm.outer.lr" in runs.run.changeable(config)
    assert "algorithm.outer.meta_batch" not in runs.run.changeable(config)
    started = []
    monkeypatch.setattr(
        runs.run, "_train", lambda config, out, *args, **kwargs: started.append(config) or out
    )
    resume = [*base, "--resume", "--allow-changes"]
    assert main([*resume, "--algorithm.outer.meta-batch", "2"]) == 1
    err = capsys.readouterr().err
    assert "algorithm.outer.meta_batch: saved 4, given 2" in err
    assert "also algorithm.inner.eps_root" in err  # what may change, with its prefix
    assert main([*base, "--resume", "--algorithm.outer.lr", "0.005"]) == 1  # not asked for
    assert "algorithm.outer.lr: saved 0.01, given 0.005" in capsys.readouterr().err
    assert not started
    assert main([*resume, "--algorithm.outer.lr", "0.005"]) == 0
    assert [c.algorithm.outer.lr for c in started] == [0.005]
    assert main([*resume, "--outer.lr", "0.005"]) == 0  # 0.1's flag, the same change
    assert [c.algorithm.outer.lr for c in started] == [0.005, 0.005]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--task.max-active", "9"], "max_active=9 exceeds num_modules=8"),
        (["--steps", "-1"], "steps must be >= 0"),
        (["--eval.every", "3", "--steps-per-call", "2", "--checkpoint-every", "2"], "eval.every"),
    ],
)
def test_invalid_settings_fail_before_training(
    flags: list[str],
    message: str,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
):
    monkeypatch.setattr(runs.run, "train", _never_train)
    monkeypatch.setenv("COLUMNS", "200")  # tyro's error box: keep the message on one line
    out = tmp_path / "run"
    assert _exit_code([*TRAIN, "--out", str(out), *flags]) != 0
    captured = capsys.readouterr()
    assert message in captured.err + captured.out
    assert not out.exists()


def test_presets(capsys: pytest.CaptureFixture[str]):
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    assert "schug2024/hyperteacher-compositional " in out
    assert "schug2024/hyperteacher-connected-cpu" in out
    # A preset is a config value; flags override it.
    config, command = parse_train(
        [
            "--preset",
            "schug2024/hyperteacher-compositional",
            "--steps",
            "10",
            "--algorithm.inner.steps",
            "3",
        ]
    )
    preset = get_preset("schug2024/hyperteacher-compositional")
    assert config.run.steps == 10 and config.algorithm.inner.steps == 3
    assert config.task == preset.task and config.model == preset.model
    assert config.algorithm.outer == preset.algorithm.outer
    assert config.task.split == "compositional"
    assert command.out.name == "schug2024-hyperteacher-compositional"
    with pytest.raises(UsageError, match="Did you mean 'schug2024/hyperteacher-compositional'"):
        parse_train(["--preset", "schug2024/hyperteacher-compositinal"])


def test_presets_columns_align(capsys: pytest.CaptureFixture[str]):
    from conftest import all_presets

    PRESETS = all_presets()

    assert main(["presets"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(PRESETS)
    descriptions = [description for description, _ in PRESETS.values()]
    columns = {line.index(d) for line, d in zip(lines, descriptions, strict=True)}
    assert len(columns) == 1, "the descriptions start in different columns"


def test_unknown_preset_or_sweep_is_a_lookup_error(capsys: pytest.CaptureFixture[str]):
    """Library code raises an exception a caller can catch, never `SystemExit`; the CLI
    turns it into a message and exit status 2."""
    from runs.presets import UnknownNameError

    with pytest.raises(UnknownNameError, match="Did you mean 'schug2024/fig2c-cpu'"):
        get_sweep("schug2024/fig2c-cp")
    with pytest.raises(LookupError, match="`zoo presets` lists them all"):
        get_preset("nothing-like-it")
    assert main(["train", "--preset", "schug2024/hyperteacher-compositinal"]) == 2
    assert "Unknown preset 'schug2024/hyperteacher-compositinal'" in capsys.readouterr().err
    assert main(["info", "--preset", "schug2024/hyperteacher-compositinal"]) == 2
    assert "Did you mean" in capsys.readouterr().err


def test_train_eval_resume(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "run"
    command = [*TRAIN, "--steps", "4", "--out", str(out), *TINY]
    assert main(command) == 0
    captured = capsys.readouterr()
    assert f"run saved in {out}" in captured.out
    # Without a progress bar, a line for each long silent stretch: compiling, the final
    # evaluation (not the earlier ones: the log stays short).
    assert captured.err.splitlines() == [
        "compiling the training step (2 steps per call)...",
        "evaluating test, ood, ood_1, ood_2 (4 tasks each)...",
    ]
    # The final evaluation, as a table, before the run's directory.
    table = captured.out.split("run saved in")[0].splitlines()
    assert table[0].split()[:3] == ["pool", "accuracy", "loss"] and "(step 4)" in table[0]
    last = {r["pool"]: r for r in runs.run.read_metrics(out) if r["step"] == 4}
    for line in table[1 : 1 + len(POOLS)]:
        pool, accuracy, loss = line.split()[:3]
        assert float(loss) == pytest.approx(last[pool]["loss"], abs=1e-4)
        assert float(accuracy) == pytest.approx(last[pool]["accuracy"], abs=1e-4)
    assert [line.split()[0] for line in table[1:]] == [*POOLS, "r2_test", "r2_ood"]
    sources = {}
    for kind, name in (("task", "hyperteacher"), ("model", "linear-hypernet")):
        entry = plugins.entry(f"{kind}s", name)
        sources[f"{kind}_source"] = PluginSource(entry.dist, entry.version)
    assert runs.run.read_config(out) == dataclasses.replace(
        make_tiny_config(steps=4), algorithm_name="bilevel", **sources
    )
    rows = runs.run.read_metrics(out)
    assert [(r["step"], r["pool"]) for r in rows] == [
        (step, pool) for step in (2, 4) for pool in ["train", *POOLS, "identification"]
    ]
    rows = [r for r in rows if r["pool"] != "identification"]
    found = [r for r in runs.run.read_metrics(out) if r["pool"] == "identification"][-1]

    # `zoo eval` scores the newest checkpoint on the same tasks as the run's own evaluation,
    # saying what it does.
    assert main(["eval", str(out)]) == 0
    printed, err = capsys.readouterr()
    assert "(step 4)" in printed
    assert f"step 4 of {out}: evaluating test, ood, ood_1, ood_2 (4 tasks each)" in err
    assert f"wrote {out / 'eval.json'}\n" in printed
    for pool in POOLS:
        assert any(line.startswith(pool + " ") for line in printed.splitlines()), printed
    report = json.loads((out / "eval.json").read_text())
    assert report["step"] == 4 and list(report["pools"]) == POOLS
    for row in rows[-len(POOLS) :]:
        for name in ("loss", "accuracy"):
            assert report["pools"][row["pool"]][name] == pytest.approx(row[name], rel=1e-5)
    # Linear decodability of the hypernetwork's embeddings, as in the run's last evaluation.
    assert set(report["identification"]) == {"r2_test", "r2_ood"}
    for name, value in report["identification"].items():
        assert value == pytest.approx(found[name], rel=1e-4, abs=1e-5)
        assert any(line.startswith(name) for line in printed.splitlines())

    # An older checkpoint: the numbers of the run's own evaluation at that step; the
    # evaluation of step 4 is kept, and the message says where.
    assert main(["eval", str(out), "--step", "2"]) == 0
    printed = capsys.readouterr().out
    assert "(step 2)" in printed
    assert "the earlier evaluation there is kept as eval-step4.json" in printed
    assert json.loads((out / "eval-step4.json").read_text())["step"] == 4
    report = json.loads((out / "eval.json").read_text())
    assert report["step"] == 2
    for row in rows[1 : 1 + len(POOLS)]:
        assert row["step"] == 2
        assert report["pools"][row["pool"]]["loss"] == pytest.approx(row["loss"], rel=1e-5)
    assert main(["eval", str(out), "--step", "3"]) == 1
    assert "No checkpoint at step 3" in capsys.readouterr().err
    assert main(["eval", str(tmp_path)]) == 1
    assert "holds no zoo run" in capsys.readouterr().err

    # The same command again would overwrite the run: refused, nothing changed.
    before = _snapshot(out)
    assert main(command) == 1
    assert "--resume" in capsys.readouterr().err
    assert _snapshot(out) == before

    # --resume with more steps continues to the new end. With a progress bar, the bar says
    # what is happening while it does not move.
    progress = [flag for flag in TINY if flag != "--no-progress"]
    assert main([*TRAIN, "--steps", "6", "--out", str(out), "--resume", *progress]) == 0
    err = capsys.readouterr().err
    for words in (
        "building the task and model",
        "compiling the training step (2 steps per call)",
        "evaluating test, ood, ood_1, ood_2 (4 tasks each)",
    ):
        assert f"train - {words}: " in err, err
    assert "4/6" in err and "6/6" in err
    assert [r["step"] for r in runs.run.read_metrics(out) if r["pool"] == "train"] == [2, 4, 6]
    assert Checkpoints(out).steps()[-1] == 6
    assert runs.run.load(out).step == 6
    assert runs.run.read_config(out).run.steps == 6


def test_eval_keeps_earlier_evaluations(tmp_path: pathlib.Path):
    from runs.evaluation import _keep_earlier

    output = tmp_path / "eval.json"
    report = {"step": 4, "inner_steps": None, "tasks": 8, "pools": {"test": {"loss": 1.0}}}
    assert _keep_earlier(output, report, 8) is None  # nothing there
    output.write_text(json.dumps(report))
    assert _keep_earlier(output, report, 8) is None  # the same numbers: nothing to keep
    assert output.exists()
    newer = {**report, "step": 6}
    assert _keep_earlier(output, newer, 8) == tmp_path / "eval-step4.json"
    assert json.loads((tmp_path / "eval-step4.json").read_text()) == report
    # Other settings than the run's are in the name; a taken name gets a number.
    output.write_text(json.dumps({**report, "inner_steps": 50, "tasks": 100}))
    assert _keep_earlier(output, newer, 8) == tmp_path / "eval-step4-inner50-tasks100.json"
    output.write_text(json.dumps({**report, "pools": {}}))
    assert _keep_earlier(output, newer, 8) == tmp_path / "eval-step4-2.json"
    output.write_text("{torn")
    assert _keep_earlier(output, newer, 8) == tmp_path / "eval-earlier.json"
    assert not output.exists()


def test_third_party_plugin_trains(plugin_run):
    out, stdout = plugin_run()
    assert f"run saved in {out}" in stdout
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [(r["step"], r["pool"]) for r in rows] == [
        (2, "train"),
        (2, "test"),
        (4, "train"),
        (4, "test"),
    ]
    assert all(r["mse"] >= 0 and r["loss"] == pytest.approx(r["mse"]) for r in rows)
    config = json.loads((out / "config.json").read_text())
    assert config["task_name"] == "example-regression"
    assert config["model_name"] == "example-anil"
    assert Checkpoints(out).steps() == [0, 2, 4]


def test_every_preset_builds():
    """Each preset's task and model build (abstractly: nothing is computed), and `zoo info`
    can count its parameters."""
    import equinox as eqx
    from conftest import all_presets

    PRESETS = all_presets()
    from runs.run import build, resolve
    from zoo import param_counts

    for name, (_, config) in PRESETS.items():
        _, model = eqx.filter_eval_shape(build, resolve(config))
        assert param_counts(model)["meta"] > 0, name


def test_every_command_is_a_small_module_of_its_own():
    """`runs/cli/` holds one module per command, each with its `main(argv)`; `zoo COMMAND`
    imports that module alone."""
    import importlib

    import runs.cli

    folder = pathlib.Path(runs.cli.__file__).parent
    for name in runs.cli.COMMANDS:
        module = importlib.import_module(f"runs.cli.{name}")
        assert callable(module.main), name
        assert len((folder / f"{name}.py").read_text().splitlines()) < 400, name
    code = "import sys, runs.cli; runs.cli.main(['list']); print(sorted(m for m in sys.modules if m.startswith('runs.cli.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = ast.literal_eval(out.stdout.splitlines()[-1])
    assert (
        "runs.cli.list" in loaded
        and "runs.cli.eval" not in loaded
        and "runs.cli.sweep" not in loaded
    )
