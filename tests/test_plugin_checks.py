"""Plugin authors' mistakes answered before anything compiles (`runs.checks`, the registry's
unknown groups), and a quiet `zoo eval` / `runs.load` (no Orbax warnings, a progress bar, a
released lock). The old-API plugin is `tests/plugin_pkg_v010`, frozen at the v0.1.0 API."""

import dataclasses
import pathlib
import re
import sys
import textwrap

import pytest
from conftest import make_tiny_config, pip_install_offline

import plugins
from runs import checks
from runs.run import RunError

REPO = pathlib.Path(__file__).resolve().parents[1]
V010_PKG = REPO / "tests" / "plugin_pkg_v010"
V010_DIST = "zoo-example-plugin-v010"


@pytest.fixture(scope="module")
def v010_path(tmp_path_factory: pytest.TempPathFactory):
    """`tests/plugin_pkg_v010` pip-installed into a temporary directory put on `sys.path`."""
    target = tmp_path_factory.mktemp("site-v010")
    pip_install_offline(V010_PKG, target)
    sys.path.insert(0, str(target))
    yield target
    sys.path.remove(str(target))
    for module in [m for m in sys.modules if m.partition(".")[0] == "zoo_example_plugin_v010"]:
        del sys.modules[module]


@pytest.fixture(autouse=True)
def fresh_registry():
    plugins.reset()
    yield
    plugins.reset()


def _assert_short(message: str, *words: str) -> None:
    assert len(message.splitlines()) <= 10, message
    assert "Traceback" not in message and 'File "' not in message, message
    for word in words:
        assert word in message, (word, message)


# --------------------------------------------------------------------------- (5) the old API


def test_an_old_api_task_is_refused_with_one_short_message(v010_path: pathlib.Path):
    from zoo_example_plugin_v010.config import (  # pyright: ignore[reportMissingImports]
        ExampleRegressionConfig,
    )

    from runs.run import build_task, prepare

    entry = plugins.entry("tasks", "v010-example-regression")
    assert entry.dist == V010_DIST
    config = dataclasses.replace(
        make_tiny_config(), task=ExampleRegressionConfig(), task_name="v010-example-regression"
    )
    version = checks.zoo_version()
    for attempt in (lambda: build_task(config), lambda: prepare(config, v010_path / "r", False)):
        with pytest.raises(RunError) as info:
            attempt()
        _assert_short(
            str(info.value),
            "ExampleRegression",
            "`io`",
            "tasks.AbstractTask",
            f"compgen-zoo {version}",
            "zoo.IOSpec",
            f"CHANGELOG, {checks.API_CHANGES}",
            V010_DIST,
        )
    assert not (v010_path / "r").exists()


def test_an_old_api_model_is_refused_with_one_short_message(v010_path: pathlib.Path):
    from zoo_example_plugin_v010.config import (  # pyright: ignore[reportMissingImports]
        ExampleANILConfig,
    )

    from runs.run import build

    config = dataclasses.replace(
        make_tiny_config(), model=ExampleANILConfig(), model_name="v010-example-anil"
    )
    with pytest.raises(RunError) as info:
        build(config)
    message = str(info.value)
    _assert_short(message, "ExampleANIL", "`labels`", "zoo.AbstractLearner", "CHANGELOG")
    assert "io: zoo.IOSpec" in message  # and its factory's old signature, in the same message


# --------------------------------------------------------------------------- (7) before compile


def _write_module(directory: pathlib.Path, name: str, source: str, monkeypatch) -> None:
    (directory / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(directory))
    monkeypatch.delitem(sys.modules, name, raising=False)


BAD_TASKS = """\
    import dataclasses

    import equinox as eqx
    import jax.numpy as jnp

    from tasks import AbstractTask, Episode, Split
    from zoo import IOSpec


    @dataclasses.dataclass(frozen=True)
    class BadConfig:
        width: int = 4
        y_axis: bool = True


    class Bad(AbstractTask):
        config: BadConfig = eqx.field(static=True)

        @property
        def io(self):
            return IOSpec.vectors(4, 1)

        def pools(self):
            return ("train", "test")

        def sample(self, key, pool="train"):
            x = jnp.zeros((8, self.config.width))
            y = jnp.zeros((8, 1) if self.config.y_axis else (8,))
            return Episode(support=Split(x, y), query=Split(x, y), latent=jnp.zeros(()))

        def loss(self, pred, y):
            return jnp.mean((pred - y) ** 2)

        def metrics(self, pred, y):
            return {"mse": self.loss(pred, y)}


    class NoMetrics(AbstractTask):
        @property
        def io(self):
            return IOSpec.vectors(4, 1)

        def pools(self):
            return ("train",)

        def sample(self, key, pool="train"):
            raise NotImplementedError

        def loss(self, pred, y):
            return jnp.mean((pred - y) ** 2)


    def make(config, *, key) -> Bad:  # only Bad is checked, not NoMetrics beside it
        return Bad(config)


    def make_no_metrics(config, *, key):
        return NoMetrics()
    """


@pytest.fixture
def bad_tasks(tmp_path: pathlib.Path, monkeypatch):
    _write_module(tmp_path, "zoo_bad_tasks", BAD_TASKS, monkeypatch)
    import zoo_bad_tasks  # pyright: ignore[reportMissingImports]

    for name, factory in (("bad-task", "make"), ("no-metrics", "make_no_metrics")):
        spec = plugins.TaskSpec(
            name=name, config=zoo_bad_tasks.BadConfig, factory=f"zoo_bad_tasks:{factory}"
        )
        plugins.register(spec)
    return zoo_bad_tasks


def _bad_config(module, **task):
    return dataclasses.replace(
        make_tiny_config(), task=module.BadConfig(**task), task_name="bad-task"
    )


def test_a_class_missing_an_abstract_member_is_refused(bad_tasks, tmp_path: pathlib.Path):
    from runs.run import prepare

    config = dataclasses.replace(_bad_config(bad_tasks), task_name="no-metrics")
    with pytest.raises(RunError) as info:
        prepare(config, tmp_path / "run", resume=False)
    _assert_short(str(info.value), "NoMetrics (zoo_bad_tasks)", "`metrics`", "tasks.AbstractTask")
    assert "Named scalar metrics" in str(info.value)  # the fix, from the member's docstring
    assert "Bad " not in str(info.value)  # the complete class of the module is not named


def test_an_abstract_class_found_at_instantiation_is_refused_shortly():
    entry = plugins.Entry("x", "__main__", plugins.TaskSpec("x", dict, "nowhere:make"))

    class Incomplete(__import__("tasks").AbstractTask):
        pass

    try:
        Incomplete()  # pyright: ignore[reportAbstractUsage]
    except TypeError as error:
        with pytest.raises(RunError) as info:
            checks.check_instantiation(entry, "task", error)
    _assert_short(str(info.value), "Incomplete", "`io`", "`sample`", "zoo.IOSpec")
    checks.check_instantiation(entry, "task", TypeError("something else"))  # not ours: returns


def test_the_builtin_plugins_pass_the_class_checks():
    for kind, key in (("task", "tasks"), ("model", "models")):
        for entry in plugins.entries(key):
            if entry.dist != plugins.own_distribution():
                continue
            entry.spec.load()
            checks.check_classes(entry, kind)


@pytest.mark.parametrize(
    ("task", "words"),
    [
        ({"width": 5}, ["support.x of shape (8, 5)", "x_shape=(4,)", "should be (8, 4)"]),
        ({"y_axis": False}, ["support.y of shape (8,)", "y_shape=(1,)", "feature axis", "(8, 1)"]),
    ],
)
def test_episodes_that_do_not_match_io_are_refused(
    bad_tasks, tmp_path: pathlib.Path, task: dict, words: list[str]
):
    from runs.run import prepare

    with pytest.raises(RunError) as info:
        prepare(_bad_config(bad_tasks, **task), tmp_path / "run", resume=False)
    _assert_short(str(info.value), "The task plugin 'bad-task' (__main__)", *words)
    assert not (tmp_path / "run").exists()


def test_a_matching_task_passes_the_episode_check(bad_tasks):
    checks.check_episode(plugins.entry("tasks", "bad-task"), bad_tasks.Bad(bad_tasks.BadConfig()))


WRONG_OUT = """\
    import dataclasses

    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import jax.random as jr

    import zoo


    @dataclasses.dataclass(frozen=True)
    class WrongOutConfig:
        flat: bool = False


    class WrongOut(zoo.AbstractMetaLearner):
        weight: jnp.ndarray
        flat: bool = eqx.field(static=True)

        def __call__(self, x):
            out = x @ self.weight  # [n, out_features + 1]: one output too many
            return out[:, 0] if self.flat else out

        def labels(self):
            return jax.tree_util.tree_map(lambda _: "fast", self)


    def make(config, *, io, key):
        return WrongOut(jr.normal(key, (io.in_features, io.out_features + 1)), config.flat)
    """


@pytest.mark.parametrize("flat", [False, True])
def test_predictions_that_do_not_fit_the_targets_are_refused(
    tmp_path: pathlib.Path, monkeypatch, flat: bool
):
    from runs.run import prepare

    _write_module(tmp_path, "zoo_wrong_out", WRONG_OUT, monkeypatch)
    import zoo_wrong_out  # pyright: ignore[reportMissingImports]

    plugins.register(
        plugins.ModelSpec("wrong-out", zoo_wrong_out.WrongOutConfig, "zoo_wrong_out:make")
    )
    config = dataclasses.replace(
        make_tiny_config(), model=zoo_wrong_out.WrongOutConfig(flat), model_name="wrong-out"
    )
    with pytest.raises(RunError) as info:
        prepare(config, tmp_path / "run", resume=False)
    message = str(info.value)
    _assert_short(message, "The model plugin 'wrong-out' (__main__)", "out_features=3")
    shape = re.search(r"predicts shape (\(.*?\)) for the (\d+) queries", message)
    assert shape is not None, message
    n = int(shape.group(2))
    assert shape.group(1) == (f"({n},)" if flat else f"({n}, 4)")
    assert not (tmp_path / "run").exists()


def test_a_module_level_array_of_a_plugin_is_no_leaked_tracer(tmp_path: pathlib.Path, monkeypatch):
    """The plugin's module is imported by `prepare` outside the abstract build, so that an array
    it makes at import is a concrete array, not a tracer of that build."""
    from runs.run import build, prepare

    _write_module(
        tmp_path,
        "zoo_module_array",
        """\
        import jax.numpy as jnp

        from tasks.hyperteacher import make as make_hyperteacher

        OFFSET = jnp.zeros(())  # at import


        def make(config, *, key):
            assert float(OFFSET) == 0.0  # fails on a leaked tracer (ConcretizationTypeError)
            return make_hyperteacher(config, key=key)
        """,
        monkeypatch,
    )
    base = make_tiny_config()
    spec = plugins.TaskSpec(
        name="array-task", config=type(base.task), factory="zoo_module_array:make"
    )
    plugins.register(spec)
    config = prepare(
        dataclasses.replace(base, task_name="array-task"), tmp_path / "run", resume=False
    )
    build(config)  # concretely, after the abstract build


def test_entry_points_of_an_unknown_zoo_group_are_listed(
    tmp_path: pathlib.Path, monkeypatch, capsys
):
    """A distribution that declares its model in `zoo.model` (not `zoo.models`) is told so by
    `zoo list`, rather than ignored without a word."""
    from runs.cli import main

    info = tmp_path / "typo_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: typo-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[zoo.model]\nmy-net = typo_plugin:spec\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    (unknown,) = plugins.unknown_groups()
    assert (unknown.group, unknown.names, unknown.dists) == (
        "zoo.model",
        ("my-net",),
        ("typo-plugin",),
    )
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "entry points in unknown groups (ignored)" in out
    assert "zoo.model" in out and "typo-plugin" in out and "did you mean 'zoo.models'?" in out
