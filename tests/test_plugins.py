"""The plugin registry, tested with a real third-party distribution (`tests/plugin_pkg`)
installed into a temporary directory, plus hand-written broken ones."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap
import warnings

import jax
import jax.numpy as jnp
import jax.random as jr
import pytest
from conftest import pip_install_offline

import plugins

REPO = pathlib.Path(__file__).resolve().parents[1]
PLUGIN_PKG = REPO / "tests" / "plugin_pkg"
DIST = "zoo-example-plugin"


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory):
    """`tests/plugin_pkg` pip-installed into a temporary directory put on `sys.path`."""
    target = tmp_path_factory.mktemp("site")
    pip_install_offline(PLUGIN_PKG, target)
    sys.path.insert(0, str(target))
    yield target
    sys.path.remove(str(target))
    for module in [m for m in sys.modules if m.partition(".")[0] == "zoo_example_plugin"]:
        del sys.modules[module]


@pytest.fixture(autouse=True)
def fresh_registry(plugin_path: pathlib.Path):
    """Every test (with the example plugin on the path) discovers anew, and leaves no
    registration behind."""
    plugins.reset()
    yield
    plugins.reset()


def _dummy_model(name: str = "example-anil") -> plugins.ModelSpec:
    return plugins.ModelSpec(name=name, config=dict, factory="builtins:dict", description="dummy")


def test_discovers_the_plugin_distribution():
    models = {(e.name, e.dist) for e in plugins.list_models()}
    tasks = {(e.name, e.dist) for e in plugins.list_tasks()}
    assert ("example-anil", DIST) in models
    assert ("example-regression", DIST) in tasks
    assert not [f for f in plugins.failed_plugins() if f.dist == DIST]
    assert plugins.model_spec("example-anil").factory == "zoo_example_plugin.model:make"
    entry = plugins.entry("models", "example-anil")
    assert (entry.dist, entry.version) == (DIST, "0.1.0")
    # `_` and `-` are the same in lookups, and a qualified name always works.
    assert plugins.task_spec("example_regression") is plugins.task_spec(
        f"{DIST}:example-regression"
    )
    listing = plugins.format_listing()
    assert "models:" in listing and "tasks:" in listing
    line = next(line for line in listing.splitlines() if "example-anil" in line)
    assert DIST in line and "ANIL" in line


def test_builds_task_and_model():
    task_spec = plugins.task_spec("example-regression")
    model_spec = plugins.model_spec("example-anil")
    task_key, model_key, sample_key = jr.split(jr.key(0), 3)
    task = task_spec.load()(task_spec.config(), key=task_key)
    model = model_spec.load()(model_spec.config(hidden=8), io=task.io, key=model_key)
    assert task.pools() == ("train", "test")

    sample = jax.jit(jax.vmap(lambda key: task.sample(key, "test")))
    episodes = sample(jr.split(sample_key, 5))
    assert episodes.support.x.shape == (5, 8, 4)
    assert episodes.query.y.shape == (5, 8, 1)
    assert jnp.all(jnp.argmax(episodes.latent, axis=-1) >= 4)  # test ids are the second half

    episode = task.sample(sample_key)
    pred = model(episode.query.x)
    assert pred.shape == (8, 1)
    assert set(task.metrics(pred, episode.query.y)) == {"mse"}
    assert task.loss(episode.query.y, episode.query.y) == 0

    fast, _ = model.partition()
    fast_leaves = jax.tree_util.tree_leaves(fast)
    assert len(fast_leaves) == 2
    assert fast_leaves[0] is model.readout.weight and fast_leaves[1] is model.readout.bias


def test_unknown_name_lists_close_matches():
    with pytest.raises(plugins.UnknownPluginError) as info:
        plugins.model_spec("example-anl")
    message = str(info.value)
    assert isinstance(info.value, KeyError)
    assert "Did you mean 'example-anil'" in message
    assert "Available models: " in message and "example-anil" in message.splitlines()[2]
    assert "zoo list" in message
    with pytest.raises(plugins.UnknownPluginError, match="zoo-example-plugin:example-anil") as info:
        plugins.model_spec("zoo-example-plugn:example-anil")
    assert "No distribution called 'zoo-example-plugn' is installed" in str(info.value)
    assert "(pip install zoo-example-plugn)" in str(info.value)
    for ours in ("zoo", "compgen-zoo", "__main__"):  # no `pip install zoo`: another project
        with pytest.raises(plugins.UnknownPluginError) as info:
            plugins.model_spec(f"{ours}:no-such-model")
        assert "pip install" not in str(info.value)


def test_two_distributions_claiming_one_name():
    plugins.register(_dummy_model(), dist="other-dist")
    with pytest.raises(plugins.AmbiguousPluginError) as info:
        plugins.model_spec("example-anil")
    message = str(info.value)
    assert "'other-dist'" in message and f"'{DIST}'" in message
    assert f"'{DIST}:example-anil'" in message
    assert plugins.model_spec(f"{DIST}:example-anil").factory == "zoo_example_plugin.model:make"
    assert plugins.model_spec("other_dist:example_anil").factory == "builtins:dict"
    entries = [e for e in plugins.list_models() if e.name == "example-anil"]
    assert [e.dist for e in entries] == ["other-dist", DIST]


def test_register():
    plugins.register(_dummy_model("my-model"))
    plugins.register(plugins.ModelSpec(name="my-model", config=dict, factory="builtins:list"))
    assert plugins.model_spec("my-model").factory == "builtins:list"  # replaced
    assert plugins.model_spec("__main__:my-model").factory == "builtins:list"
    with pytest.raises(ValueError, match="kebab-case"):
        plugins.register(_dummy_model("My_Model"))
    with pytest.raises(TypeError):
        plugins.register("my-model")  # pyright: ignore[reportArgumentType]


def test_a_new_kind_is_one_table_entry(tmp_path: pathlib.Path, monkeypatch):
    # A distribution declaring a plugin of a kind zoo does not have yet, and the spec class of
    # that kind, in a module of its own (as a plugin author's package would hold it).
    info = tmp_path / "zoo_widget_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: zoo-widget-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[zoo.widgets]\ngear = zoo_widgets:gear\n")
    (tmp_path / "zoo_widgets.py").write_text(
        textwrap.dedent(
            """\
            import dataclasses

            import plugins


            @dataclasses.dataclass(frozen=True)
            class WidgetSpec(plugins.Spec):
                \"\"\"A widget; its factory is called as `factory(config)`.\"\"\"


            gear = WidgetSpec(name="gear", config=dict, factory="builtins:dict", description="cog")
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "zoo_widgets", raising=False)
    import zoo_widgets  # pyright: ignore[reportMissingImports]

    monkeypatch.setitem(
        plugins.KINDS, "widgets", plugins.Kind("zoo.widgets", "widget", zoo_widgets.WidgetSpec)
    )

    # Discovered and listed.
    assert [(e.name, e.dist) for e in plugins.entries("widgets")] == [("gear", "zoo-widget-plugin")]
    listing = plugins.format_listing()
    assert listing.index("models:") < listing.index("tasks:") < listing.index("widgets:")
    line = next(line for line in listing.splitlines() if line.startswith("  gear"))
    assert "zoo-widget-plugin" in line and "cog" in line
    assert not [f for f in plugins.failed_plugins() if f.group == "zoo.widgets"]

    # Looked up, with close matches when misspelt.
    assert plugins.spec("widgets", "gear") is zoo_widgets.gear
    with pytest.raises(plugins.UnknownPluginError) as info_error:
        plugins.spec("widgets", "geer")
    message = str(info_error.value)
    assert message.startswith("Unknown widget 'geer'.")
    assert "Did you mean 'gear'?" in message and "Available widgets: gear." in message
    assert "every model, task, algorithm, experiment, hook, pretrained model and widget" in message
    with pytest.raises(
        ValueError,
        match="kinds are 'models', 'tasks', 'algorithms', 'experiments', 'hooks', 'pretrained', 'widgets'",
    ):
        plugins.spec("gadgets", "gear")

    # Registered under its kind, by the type of its spec.
    spring = zoo_widgets.WidgetSpec(name="spring", config=dict, factory="builtins:dict")
    plugins.register(spring)
    assert plugins.spec("widgets", "__main__:spring") is spring
    assert "spring" in [e.name for e in plugins.entries("widgets")]
    assert "spring" not in [e.name for e in plugins.list_models() + plugins.list_tasks()]

    # A widget is no model: declared as one, it is reported and skipped.
    (info / "entry_points.txt").write_text(
        "[zoo.widgets]\ngear = zoo_widgets:gear\n\n[zoo.models]\ncog = zoo_widgets:gear\n"
    )
    plugins.reset()
    failures = [f for f in plugins.failed_plugins() if f.dist == "zoo-widget-plugin"]
    assert [(f.group, f.name, type(f.error)) for f in failures] == [
        ("zoo.models", "cog", TypeError)
    ]


def test_a_factory_of_the_old_signature_is_refused(tmp_path: pathlib.Path, monkeypatch):
    (tmp_path / "zoo_old_factory.py").write_text(
        "def make(config, *, in_features, out_features, key):\n    return None\n"
        "def make_task(config, *, key):\n    return None\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "zoo_old_factory", raising=False)
    old = plugins.ModelSpec(name="old", config=dict, factory="zoo_old_factory:make")
    with pytest.raises(TypeError) as info:
        old.load()
    message = str(info.value)
    assert "`make(config, *, in_features, out_features, key)`" in message
    assert "`factory(config, *, io: zoo.IOSpec, key)`" in message
    task = plugins.TaskSpec(name="old-task", config=dict, factory="zoo_old_factory:make_task")
    assert task.load() is sys.modules["zoo_old_factory"].make_task
    wrong = plugins.TaskSpec(name="wrong", config=dict, factory="zoo_old_factory:make")
    with pytest.raises(TypeError, match=r"`factory\(config, \*, key\)`"):
        wrong.load()


def test_broken_plugins_are_reported_and_skipped(tmp_path: pathlib.Path, monkeypatch):
    info = tmp_path / "zoo_broken_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: zoo-broken-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        textwrap.dedent(
            """\
            [zoo.models]
            missing = zoo_broken_missing:spec
            raises = zoo_broken_raises:spec
            not-a-spec = zoo_broken_values:text
            misnamed = zoo_example_plugin.specs:example_anil

            [zoo.tasks]
            wrong-kind = zoo_example_plugin.specs:example_anil
            """
        )
    )
    (tmp_path / "zoo_broken_raises.py").write_text("raise RuntimeError('boom')\n")
    (tmp_path / "zoo_broken_values.py").write_text("text = 'not a spec'\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    # Discovery says nothing (it runs in every command): `zoo list` and lookups of the
    # broken names report them.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert "example-anil" in [e.name for e in plugins.list_models()]
        assert "example-regression" in [e.name for e in plugins.list_tasks()]
        failures = {f.name: f for f in plugins.failed_plugins() if f.dist == "zoo-broken-plugin"}
        assert plugins.model_spec("example-activation-mlp").name == "example-activation-mlp"
    assert [str(w.message) for w in caught] == []
    assert set(failures) == {"missing", "raises", "not-a-spec", "misnamed", "wrong-kind"}
    assert all(f.dist == "zoo-broken-plugin" for f in failures.values())
    assert isinstance(failures["missing"].error, ImportError)
    assert isinstance(failures["raises"].error, RuntimeError)
    assert isinstance(failures["not-a-spec"].error, TypeError)
    assert isinstance(failures["wrong-kind"].error, TypeError)
    assert isinstance(failures["misnamed"].error, ValueError)

    listing = plugins.format_listing()
    failed = listing[listing.index("failed plugins:") :]
    assert "zoo_broken_raises:spec" in failed
    assert "RuntimeError: boom" in failed and len(failed.splitlines()) == 6
    with pytest.raises(plugins.UnknownPluginError, match="failed to load: RuntimeError: boom"):
        plugins.model_spec("raises")
    with pytest.raises(plugins.UnknownPluginError, match="failed to load: RuntimeError: boom"):
        plugins.model_spec("zoo-broken-plugin:raises")


def test_a_broken_plugin_is_silent_until_asked_for(tmp_path: pathlib.Path, plugin_path):
    """A broken plugin prints nothing in `import runs`, in other commands or when other plugins
    are looked up; `zoo list` shows it, and so does looking it up."""
    info = tmp_path / "zoo_broken_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: zoo-broken-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[zoo.models]\nraises = zoo_broken_raises:spec\n")
    (tmp_path / "zoo_broken_raises.py").write_text("raise RuntimeError('boom')\n")
    script = textwrap.dedent(
        """\
        import sys
        import runs
        import plugins
        from runs.cli import main
        plugins.list_models()
        plugins.model_spec("example-anil")
        print("---", file=sys.stderr)
        main(["list"])
        """
    )
    path = os.pathsep.join([str(tmp_path), str(plugin_path), str(REPO)])
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == "---\n"
    listing = result.stdout
    assert listing.count("RuntimeError: boom") == 1 and "failed plugins:" in listing


def test_a_name_whose_other_provider_failed_warns_when_asked_for(
    tmp_path: pathlib.Path, monkeypatch
):
    info = tmp_path / "zoo_broken_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: zoo-broken-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[zoo.models]\nexample-anil = zoo_broken_raises:spec\n")
    (tmp_path / "zoo_broken_raises.py").write_text("raise RuntimeError('boom')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.warns(plugins.PluginWarning, match="failed to load: RuntimeError: boom") as caught:
        assert plugins.entry("models", "example-anil").dist == DIST
    assert f"using the one of '{DIST}'" in str(caught[0].message)


def test_listing_imports_no_model_code(plugin_path: pathlib.Path):
    # `-S` leaves site-packages (and so JAX) off the path: the listing must work without it.
    script = textwrap.dedent(
        """\
        import sys
        import plugins
        assert [e.name for e in plugins.list_models()] == ["example-activation-mlp", "example-anil"]
        assert [e.name for e in plugins.list_tasks()] == ["example-regression"]
        assert plugins.failed_plugins() == []
        plugins.format_listing()
        import zoo
        zoo.IOSpec.vectors(4, 1)
        imported = {"jax", "equinox", "zoo_example_plugin.model", "zoo_example_plugin.task"}
        assert not imported & set(sys.modules), imported & set(sys.modules)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_path), str(REPO)])}
    result = subprocess.run(
        [sys.executable, "-S", "-c", script], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


# --------------------------------------------------------------------------- runs of plugins


def _example_config(**changes):
    """A run of the example plugin's model on its task (nothing of it is trained here)."""
    from zoo_example_plugin.config import (  # pyright: ignore[reportMissingImports]
        ExampleANILConfig,
        ExampleRegressionConfig,
    )

    from runs.algorithms.config import BilevelConfig
    from runs.config import OuterConfig, RunConfig, TrainConfig

    return TrainConfig(
        task=ExampleRegressionConfig(),
        model=ExampleANILConfig(hidden=8),
        algorithm=BilevelConfig(outer=OuterConfig(meta_batch=4)),
        run=RunConfig(steps=2, steps_per_call=1, checkpoint_every=1),
        **{"task_name": "example-regression", "model_name": "example-anil", **changes},
    )


def _saved_run(directory: pathlib.Path, **changes) -> pathlib.Path:
    """`directory` holding the config.json a start of `_example_config` writes."""
    from runs.run import prepare, save_config

    save_config(prepare(_example_config(**changes), directory, resume=False), directory)
    return directory


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        ("zoo_no_such_module:make", r"does not load \(ModuleNotFoundError: No module named"),
        ("zoo_bad_factories:no_arrays", "returned a NoArrays with no array leaves"),
        ("zoo_bad_factories:a_dict", "returned a dict; it must return a zoo.AbstractLearner"),
    ],
)
def test_a_bad_model_factory_is_refused_before_anything_is_written(
    tmp_path: pathlib.Path, monkeypatch, factory: str, message: str
):
    from zoo_example_plugin.config import ExampleANILConfig  # pyright: ignore[reportMissingImports]

    from runs.run import RunError, train

    (tmp_path / "zoo_bad_factories.py").write_text(
        textwrap.dedent(
            """\
            import jax.tree_util as jtu
            from zoo import AbstractMetaLearner

            class NoArrays(AbstractMetaLearner):
                scale: float = 1.0

                def __call__(self, x):
                    return x * self.scale

                def labels(self):
                    return jtu.tree_map(lambda _: "fast", self)

            def no_arrays(config, *, io, key):
                return NoArrays()

            def a_dict(config, *, io, key):
                return {"w": 1.0}
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.register(plugins.ModelSpec(name="bad-anil", config=ExampleANILConfig, factory=factory))
    out = tmp_path / "run"
    with pytest.raises(RunError, match=message) as info:
        train(_example_config(model_name="bad-anil"), out, progress=False)
    assert factory in str(info.value) and "bad-anil" in str(info.value)
    assert not out.exists()


def test_a_bad_task_factory_is_refused(tmp_path: pathlib.Path, monkeypatch):
    from zoo_example_plugin.config import (  # pyright: ignore[reportMissingImports]
        ExampleRegressionConfig,
    )

    from runs.run import RunError, train

    (tmp_path / "zoo_bad_task.py").write_text("def make(config, *, key):\n    return [1, 2]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = plugins.TaskSpec(
        name="bad-task", config=ExampleRegressionConfig, factory="zoo_bad_task:make"
    )
    plugins.register(spec)
    with pytest.raises(RunError, match=r"returned a list; it must return a tasks.AbstractTask or"):
        train(_example_config(task_name="bad-task"), tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


def test_a_run_records_and_resolves_through_its_plugins_distribution(tmp_path: pathlib.Path):
    from runs.run import read_config

    run = _saved_run(tmp_path / "run")
    saved = json.loads((run / "config.json").read_text())
    assert saved["model_source"] == {"dist": DIST, "version": "0.1.0"}
    assert saved["task_source"] == {"dist": DIST, "version": "0.1.0"}
    # A second distribution claims the name: the run still loads the plugin it was made with.
    plugins.register(_dummy_model(), dist="other-dist")
    with pytest.raises(plugins.AmbiguousPluginError):
        plugins.model_spec("example-anil")
    config = read_config(run)
    assert type(config.model).__name__ == "ExampleANILConfig" and config.model.hidden == 8
    assert config.model_source is not None and config.model_source.dist == DIST


def test_an_old_run_with_an_ambiguous_name_is_read_by_its_settings(tmp_path: pathlib.Path):
    import dataclasses

    from runs.run import RunError, read_config

    run = _saved_run(tmp_path / "run")
    data = json.loads((run / "config.json").read_text())
    del data["model_source"], data["task_source"]  # as saved before they were recorded
    (run / "config.json").write_text(json.dumps(data))

    @dataclasses.dataclass(frozen=True)
    class OtherConfig:
        width: int = 3

    other = plugins.ModelSpec(name="example-anil", config=OtherConfig, factory="builtins:dict")
    plugins.register(other, dist="other-dist")
    config = read_config(run)  # only the example plugin's config class reads `hidden`
    assert config.model_source is not None and config.model_source.dist == DIST

    plugins.register(_dummy_model(), dist="other-dist")  # `dict` reads anything
    with pytest.raises(RunError, match=r'add e.g. "model_source": \{"dist": '):
        read_config(run)


def test_a_run_whose_plugin_is_uninstalled_names_the_package(
    tmp_path: pathlib.Path, plugin_path: pathlib.Path, monkeypatch
):
    from runs.run import RunError, load, read_config

    run = _saved_run(tmp_path / "run")
    # The plugin's distribution uninstalled (off the path).
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(plugin_path)])
    plugins.reset()
    with pytest.raises(RunError) as info:
        load(run)
    message = str(info.value)
    assert message.startswith(f"{run}: The run's task 'example-regression' comes from")
    assert f"'{DIST}' 0.1.0, which is not installed" in message
    assert f"pip install '{DIST}==0.1.0'" in message

    # Installed, but a version that no longer provides the model.
    monkeypatch.undo()
    plugins.reset()
    data = json.loads((run / "config.json").read_text())
    data["model_name"] = "example-gone"
    data["model_source"]["version"] = "0.0.9"
    (run / "config.json").write_text(json.dumps(data))
    with pytest.raises(RunError, match=rf"installed {DIST} 0.1.0 provides no model of that name"):
        read_config(run)


def test_a_run_of_a_former_name_of_the_builtin_distribution_loads(tmp_path: pathlib.Path):
    """Runs recorded under `zoo` (the distribution's name before `compgen-zoo`) still load,
    and so would `compgen-zoo` runs in an environment where it is still installed as `zoo`."""
    from conftest import make_tiny_config

    from runs.run import read_config, save_config

    own = plugins.own_distribution()
    other = "zoo" if own == plugins.DISTRIBUTION else plugins.DISTRIBUTION
    from runs.run import prepare

    config = prepare(make_tiny_config(), tmp_path / "run", resume=False)
    save_config(config, tmp_path / "run")
    data = json.loads((tmp_path / "run" / "config.json").read_text())
    assert data["model_source"]["dist"] == own
    data["model_source"]["dist"] = data["task_source"]["dist"] = other
    (tmp_path / "run" / "config.json").write_text(json.dumps(data))
    loaded = read_config(tmp_path / "run")
    assert loaded.model_source is not None and loaded.model_source.dist == own
    assert plugins.model_spec(f"{other}:linear-hypernet") is plugins.model_spec("linear-hypernet")


def test_a_run_resumes_after_its_plugin_is_upgraded_and_from_an_old_config(
    tmp_path: pathlib.Path,
):
    from runs.run import prepare

    run = _saved_run(tmp_path / "run")
    data = json.loads((run / "config.json").read_text())
    data["model_source"]["version"] = "0.0.9"  # made with an older release of the plugin
    (run / "config.json").write_text(json.dumps(data))
    assert prepare(_example_config(), run, resume=True).model_source.version == "0.1.0"  # pyright: ignore[reportOptionalMemberAccess]
    del data["model_source"], data["task_source"]  # as saved before they were recorded
    (run / "config.json").write_text(json.dumps(data))
    prepare(_example_config(), run, resume=True)
    data["model_source"] = {"dist": "other-dist", "version": None}
    plugins.register(_dummy_model(), dist="other-dist")
    (run / "config.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"model_source.dist: saved 'other-dist', given"):
        prepare(_example_config(model_name=f"{DIST}:example-anil"), run, resume=True)
