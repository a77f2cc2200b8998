"""The contract every plugin meets, parametrized over the registry: every registered model, on
every registered task that an algorithm accepts, trains 2 steps, evaluates, checkpoints,
resumes and loads with the engine's default settings (shapes made tiny, inner steps 2).

A registered plugin without a tiny config here fails `test_every_plugin_has_a_tiny_config`:
a new built-in adds one line below. Environments (tasks acted in, `AbstractEnvironment`) are
not trained by this engine and are skipped here; `tests/test_minigrid.py` holds their
contract."""

import inspect
import itertools
import pathlib
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.tree_util as jtu
import numpy as np
import pytest
from conftest import TINY_MODEL, TINY_TASK

import plugins
import runs
from runs import algorithms
from runs.algorithms.config import BilevelConfig, InContextConfig
from runs.config import EvalConfig, InnerConfig, OuterConfig, RunConfig, TrainConfig
from runs.run import build, evaluate_all
from tasks import AbstractEnvironment
from tasks.config import (
    CompositionalGoalsConfig,
    CompositionalPreferencesConfig,
    MutualExclusivityConfig,
    ScanEpisodesConfig,
    TeacherStudentConfig,
)
from zoo import AbstractActorCritic, AbstractInContextLearner
from zoo.config import (
    ANILConfig,
    MAMLConfig,
    MetaSeq2SeqConfig,
    NonlinearHypernetConfig,
    ShallowHypernetConfig,
)

sys.path.insert(0, str(pathlib.Path(__file__).parent / "plugin_pkg"))
from zoo_example_plugin.specs import example_activation_mlp

# A model whose leaves include an activation function and a string: any Equinox model trains.
plugins.register(example_activation_mlp, dist="zoo-example-plugin")

TINY_TASKS = {
    "hyperteacher": TINY_TASK,
    "teacher-student": TeacherStudentConfig(
        num_modules=4, in_features=3, hidden=4, out_features=2, shots_support=8, shots_query=8
    ),
    "scan": ScanEpisodesConfig(num_query=4),
    "mutual-exclusivity": MutualExclusivityConfig(num_query=4),
    "compositional-preferences": CompositionalPreferencesConfig(
        shots_support=2, shots_query=2, horizon=3
    ),
    "compositional-goals": CompositionalGoalsConfig(max_len=64),
}
TINY_MODELS = {
    "linear-hypernet": TINY_MODEL,
    "nonlinear-hypernet": NonlinearHypernetConfig(
        hidden=8, num_hidden=2, num_templates=4, generator_width=4, generator_depth=2
    ),
    "anil": ANILConfig(hidden=8, num_hidden=2),
    "maml": MAMLConfig(hidden=8, num_hidden=2),
    "shallow-hypernet": ShallowHypernetConfig(hidden=6, num_modules=5),
    "meta-seq2seq": MetaSeq2SeqConfig(hidden=8, layers=1, dropout=0.1),
    "example-activation-mlp": example_activation_mlp.config(hidden=4),
}


@pytest.fixture(autouse=True)
def _release_compiled_programs_per_pair():
    """Each pair compiles its own programs (thousands of memory mappings); drop them after each
    pair, not only after the module, so the full matrix (`-m slow`) stays far below the
    kernel's limit of mappings (see `tests/conftest.py`)."""
    yield
    jax.clear_caches()


def _tiny(entries, table) -> list[str]:
    return [e.name for e in entries if e.name in table]


def _config(
    task_name: str, model_name: str, steps: int = 2, pools=(), inner: bool = True
) -> TrainConfig:
    """The tiny run of a pair; `inner=False` for models adapting in context (their algorithm,
    in-context, has no inner loop)."""
    outer = OuterConfig(meta_batch=2)
    algorithm = (
        BilevelConfig(inner=InnerConfig(steps=2), outer=outer)
        if inner
        else InContextConfig(outer=outer)
    )
    return TrainConfig(
        task=TINY_TASKS[task_name],
        model=TINY_MODELS[model_name],
        task_name=task_name,
        model_name=model_name,
        algorithm=algorithm,
        eval=EvalConfig(every=0, tasks=2, batch=2, test_episodes=False, pools=pools),
        run=RunConfig(steps=steps, steps_per_call=1, checkpoint_every=1),
    )


# Run in CI: every model and every task at least once. The other pairs are `slow`
# (`pytest -m slow`): each pair compiles its own programs, about half a minute on 2 cores.
COVERING = {
    ("hyperteacher", "linear-hypernet"),
    ("hyperteacher", "maml"),
    ("hyperteacher", "example-activation-mlp"),
    ("teacher-student", "shallow-hypernet"),
    ("mutual-exclusivity", "meta-seq2seq"),
    ("scan", "meta-seq2seq"),
    ("compositional-preferences", "nonlinear-hypernet"),
    ("compositional-goals", "anil"),
}


def _pairs() -> list:
    tasks = _tiny(plugins.list_tasks(), TINY_TASKS)
    models = _tiny(plugins.list_models(), TINY_MODELS)
    return [
        pair if pair in COVERING else pytest.param(*pair, marks=pytest.mark.slow)
        for pair in itertools.product(tasks, models)
    ]


def test_the_ci_pairs_cover_every_plugin():
    covered_tasks = {task for task, _ in COVERING}
    covered_models = {model for _, model in COVERING}
    assert covered_tasks == set(_tiny(plugins.list_tasks(), TINY_TASKS))
    assert covered_models == set(_tiny(plugins.list_models(), TINY_MODELS))


def _accepted(task, model) -> bool:
    """Whether an algorithm trains `model` on `task`, and their data agree: token sequences
    for in-context learners, vectors for the others."""
    try:
        algorithms.choose(task, model)
    except algorithms.AlgorithmError:
        return False
    return (task.io.x_vocab is not None) == isinstance(model, AbstractInContextLearner)


def _is_actor_critic(entry) -> bool:
    """Whether a model's factory builds a reinforcement-learning agent: this contract is the
    meta-learners' (the agents' is `tests/test_agents.py`)."""
    returns = inspect.signature(entry.spec.load()).return_annotation
    return isinstance(returns, type) and issubclass(returns, AbstractActorCritic)


def _is_environment(entry) -> bool:
    """Whether a registered task is an environment (`AbstractEnvironment`): trained by
    reinforcement learning, not by this contract (`tests/test_minigrid.py` has theirs)."""
    task = entry.spec.load()(entry.spec.config(), key=jax.random.key(0))
    return isinstance(task, AbstractEnvironment)


def test_every_plugin_has_a_tiny_config():
    missing = [
        e.name
        for e in plugins.list_models()
        if e.name not in TINY_MODELS and not _is_actor_critic(e)
    ]
    missing += [
        e.name for e in plugins.list_tasks() if e.name not in TINY_TASKS and not _is_environment(e)
    ]
    assert not missing, f"add tiny configs for {missing} to tests/test_conformance.py"


def _finite(tree) -> bool:
    leaves = jtu.tree_leaves(eqx.filter(tree, eqx.is_inexact_array))
    return all(bool(jnp.all(jnp.isfinite(x))) for x in leaves)


@pytest.mark.parametrize(("task_name", "model_name"), _pairs(), ids=lambda n: n)
def test_contract(task_name: str, model_name: str, tmp_path):
    config = _config(task_name, model_name)
    try:
        task, model = eqx.filter_eval_shape(build, config)
    except ValueError as error:  # e.g. a sequence model on a task of vectors
        assert (task_name, model_name) not in COVERING, error
        pytest.skip(f"{model_name} does not build on {task_name}: {error}")
    if not _accepted(task, model):
        assert (task_name, model_name) not in COVERING
        pytest.skip(f"no algorithm trains {model_name} on {task_name}")
    # One evaluation pool: each pool is compiled on its own, and one shows the contract.
    pools = (next(p for p in task.pools() if p != "train"),)
    inner = not isinstance(model, AbstractInContextLearner)
    config = _config(task_name, model_name, pools=pools, inner=inner)
    out = tmp_path / "run"
    runs.train(config, out, progress=False)
    rows = runs.read_metrics(out)
    train_rows = [r for r in rows if r["pool"] == "train"]
    assert [r["step"] for r in train_rows] == [1, 2]
    assert all(np.isfinite(r["loss"]) for r in train_rows)
    assert {r["pool"] for r in rows} - {"train", "identification"}, "no evaluation pool"

    # Resume for one more step: the same compiled chunk, the run goes on from its checkpoint.
    runs.train(_config(task_name, model_name, 3, pools, inner), out, resume=True, progress=False)
    loaded = runs.load(out)
    assert loaded.step == 3
    assert type(loaded.model) is type(model)
    assert _finite(loaded.model)
    at_two = runs.load(out, step=2).model
    params = [np.asarray(x) for x in jtu.tree_leaves(eqx.filter(loaded.model, eqx.is_array))]
    before = [np.asarray(x) for x in jtu.tree_leaves(eqx.filter(at_two, eqx.is_array))]
    assert any(not np.array_equal(a, b) for a, b in zip(params, before, strict=True))
    # Static, non-array leaves come back as they were built.
    assert eqx.tree_equal(
        eqx.filter(loaded.model, eqx.is_array, inverse=True),
        eqx.filter(build(loaded.config)[1], eqx.is_array, inverse=True),
    )

    # The loaded model evaluates, with no training code.
    task = runs.run.build_task(loaded.config)
    results = evaluate_all(loaded.model, task, loaded.config)
    assert set(results) - {"identification"} == set(pools)
    assert all(np.isfinite(v) for values in results.values() for v in values.values())
