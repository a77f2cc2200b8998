"""Every learner through the engine on tiny shapes: an adapt and an outer step per model, inner
minibatches, ANIL's features computed once, and identification metrics in a run."""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
import numpy as np
import optax
import pytest
from conftest import TINY_TASK, bilevel_for, make_tiny_config

from runs.algorithms.inner import InnerLoop
from runs.config import InnerConfig, OuterConfig, TrainConfig
from runs.run import build, build_algorithm, read_metrics, train
from tasks.config import TeacherStudentConfig
from zoo.config import (
    ANILConfig,
    LinearHypernetConfig,
    MAMLConfig,
    NonlinearHypernetConfig,
    ShallowHypernetConfig,
)

TINY_MODELS = {
    "linear-hypernet": (LinearHypernetConfig(hidden=8, num_hidden=2, num_templates=4), {}),
    "nonlinear-hypernet": (
        NonlinearHypernetConfig(
            hidden=8, num_hidden=2, num_templates=4, generator_width=4, generator_depth=2
        ),
        {},
    ),
    "anil": (
        ANILConfig(hidden=8, num_hidden=2),
        {"steps": 3, "batch": 4, "lr": 0.03},
    ),
    "maml": (MAMLConfig(hidden=8, num_hidden=2), {"steps": 2, "lr": 0.01}),
}
TINY_TEACHER_STUDENT = TeacherStudentConfig(
    num_modules=4, in_features=3, hidden=4, out_features=2, shots_support=8, shots_query=8
)


def _config(model_name: str) -> TrainConfig:
    model, inner = TINY_MODELS[model_name]
    base = make_tiny_config()
    return dataclasses.replace(
        base,
        model=model,
        model_name=model_name,
        algorithm=dataclasses.replace(
            base.algorithm, inner=dataclasses.replace(base.algorithm.inner, **inner)
        ),
    )


def _teacher_student_config() -> TrainConfig:
    base = make_tiny_config()
    return dataclasses.replace(
        base,
        task=TINY_TEACHER_STUDENT,
        task_name="teacher-student",
        model=ShallowHypernetConfig(hidden=6, num_modules=5),
        model_name="shallow-hypernet",
        algorithm=dataclasses.replace(
            base.algorithm,
            inner=InnerConfig(steps=5, lr=0.05, weight_decay=0.0, mode="equilibrium"),
        ),
    )


def adapt(model, support, task, inner: InnerConfig, steps: int, key=None):
    return InnerLoop.from_config(inner, steps).adapt(model, support, task.loss, key)


def episode_loss(model, key, task, inner: InnerConfig, steps: int):
    return bilevel_for(inner, steps).episode_loss(task, model, key)


def _fast_leaves(model):
    return jtu.tree_leaves(model.partition()[0])


@pytest.mark.parametrize("model_name", list(TINY_MODELS))
def test_adapt_changes_only_the_fast_leaves_and_lowers_the_support_loss(model_name: str):
    config = _config(model_name)
    task, model = build(config)
    episode = task.sample(jr.key(1))
    key = jr.key(2)
    inner = config.algorithm.inner
    adapted = adapt(model, episode.support, task, inner, inner.steps, key)
    meta_before, meta_after = model.partition()[1], adapted.partition()[1]
    assert eqx.tree_equal(meta_before, meta_after)
    changed = [
        not np.array_equal(a, b)
        for a, b in zip(_fast_leaves(model), _fast_leaves(adapted), strict=True)
    ]
    assert any(changed)
    before = task.loss(model(episode.support.x), episode.support.y)
    after = task.loss(adapted(episode.support.x), episode.support.y)
    assert float(after) < float(before)


@pytest.mark.parametrize("model_name", list(TINY_MODELS))
def test_one_outer_step_updates_the_meta_leaves(model_name: str):
    config = _config(model_name)
    task, model = build(config)
    config = dataclasses.replace(
        config,
        algorithm=dataclasses.replace(config.algorithm, outer=OuterConfig(lr=1e-2, meta_batch=4)),
    )
    algorithm = build_algorithm(config, task, model, devices=1)
    state, metrics = eqx.filter_jit(algorithm.step)(task, algorithm.init(task, model, jr.key(0)))
    new = state.model
    assert int(state.step) == 1 and float(metrics["grad_finite"]) == 1.0
    assert np.isfinite(float(metrics["loss"])) and float(metrics["grad_norm"]) > 0
    # The meta leaves moved; for ANIL and MAML the fast leaves' initialization is meta-learned
    # and moved too.
    moved = [
        not np.array_equal(a, b)
        for a, b in zip(
            jtu.tree_leaves(model.partition()[1]), jtu.tree_leaves(new.partition()[1]), strict=True
        )
    ]
    assert all(moved) or model_name == "maml"
    if model_name in ("anil", "maml"):
        assert all(
            not np.array_equal(a, b)
            for a, b in zip(_fast_leaves(model), _fast_leaves(new), strict=True)
        )


def test_anil_features_are_computed_once_and_the_result_matches_a_plain_inner_loop():
    config = _config("anil")
    inner = dataclasses.replace(config.algorithm.inner, batch=0)
    config = dataclasses.replace(
        config, algorithm=dataclasses.replace(config.algorithm, inner=inner)
    )
    task, model = build(config)
    support = task.sample(jr.key(3)).support
    calls = []
    original = type(model).features

    def counting(self, x):
        calls.append(x.shape)
        return original(self, x)

    adapted = adapt(model, support, task, config.algorithm.inner, 3)
    # A plain loop that runs the whole model on every step gives the same readout.
    optimizer = optax.adamw(
        config.algorithm.inner.lr,
        weight_decay=config.algorithm.inner.weight_decay,
        eps_root=config.algorithm.inner.eps_root,
    )
    fast, meta = model.partition()
    state = optimizer.init(fast)
    for _ in range(3):
        grads = jax.grad(lambda f: task.loss(eqx.combine(f, meta)(support.x), support.y))(fast)
        updates, state = optimizer.update(grads, state, fast)
        fast = optax.apply_updates(fast, updates)
    for a, b in zip(jtu.tree_leaves(fast), _fast_leaves(adapted), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # Traced once: the features are outside the inner loop.
    try:
        type(model).features = counting  # pyright: ignore[reportAttributeAccessIssue]
        jax.eval_shape(lambda m: adapt(m, support, task, config.algorithm.inner, 5), model)
    finally:
        type(model).features = original  # pyright: ignore[reportAttributeAccessIssue]
    assert len(calls) == 1


def test_inner_minibatches_are_drawn_from_the_key():
    config = _config("anil")
    task, model = build(config)
    support = task.sample(jr.key(4)).support
    inner = config.algorithm.inner  # batch 4 of 8 support examples

    def run(key):
        return _fast_leaves(adapt(model, support, task, inner, 3, key))

    same_a, same_b, other = run(jr.key(0)), run(jr.key(0)), run(jr.key(1))
    assert all(np.array_equal(a, b) for a, b in zip(same_a, same_b, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(same_a, other, strict=True))
    full = _fast_leaves(adapt(model, support, task, dataclasses.replace(inner, batch=0), 3))
    assert not all(np.array_equal(a, b) for a, b in zip(same_a, full, strict=True))


def test_eps_root_keeps_second_order_gradients_through_adam_finite():
    # On 4 of 8 examples some ReLU units of the tiny MAML are dead: exactly zero inner
    # gradients, whose second-order terms through Adam's square root are NaN without eps_root.
    config = _config("maml")
    task, model = build(config)

    def grads(eps_root: float):
        inner = dataclasses.replace(config.algorithm.inner, batch=4, eps_root=eps_root)
        loss = lambda m: episode_loss(m, jr.key(0), task, inner, 3)[0]  # noqa: E731
        return jtu.tree_leaves(eqx.filter_grad(loss)(model))

    assert any(bool(jnp.isnan(g).any()) for g in grads(0.0))
    assert all(bool(jnp.isfinite(g).all()) for g in grads(1e-12))
    # The default, float32 epsilon (the authors' setting), keeps them finite.
    assert all(bool(jnp.isfinite(g).all()) for g in grads(InnerConfig().eps_root))


def test_an_inner_batch_larger_than_the_support_set_is_an_error():
    config = _config("anil")
    task, model = build(config)
    inner = dataclasses.replace(config.algorithm.inner, batch=TINY_TASK.shots_support + 1)
    with pytest.raises(ValueError, match=r"inner\.batch=9 exceeds the 8 support examples"):
        episode_loss(model, jr.key(0), task, inner, 2)


def test_a_teacher_student_run_records_alignment_and_decodability(tmp_path):
    out = train(_teacher_student_config(), tmp_path / "run", progress=False)
    rows = [r for r in read_metrics(out) if r["pool"] == "identification"]
    assert [r["step"] for r in rows] == [2, 4]
    for row in rows:
        assert set(row) >= {"r2_test", "r2_ood", "alignment"}
        assert -1.0 <= row["alignment"] <= 1.0 + 1e-6
        assert np.isfinite(row["r2_test"])
    pools = {r["pool"] for r in read_metrics(out)}
    assert {"train", "test", "ood", "h_1", "h_2"} <= pools


def test_a_hyperteacher_run_of_an_mlp_learner_has_no_identification_row(tmp_path):
    out = train(_config("maml"), tmp_path / "run", progress=False)
    assert not [r for r in read_metrics(out) if r["pool"] == "identification"]
    assert jnp.isfinite(jnp.array([r["loss"] for r in read_metrics(out)])).all()
