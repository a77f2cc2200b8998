"""The algorithms' engine: sharded steps, scanned chunks, meshes, evaluation, gradient modes,
the outer optimizer over labels."""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
import numpy as np
import pytest
from conftest import bilevel_for, make_tiny_config

from runs.algorithms.base import train_chunk
from runs.algorithms.episodic import evaluate_pool
from runs.optim import outer_optimizer
from runs.run import build, build_algorithm
from runs.sharding import make_mesh, replicate
from zoo import array_labels, linear_hypernet

META_BATCH = 4


@pytest.fixture(scope="module")
def setup():
    """Config, task and model of the tiny run."""
    config = make_tiny_config()
    task, model = build(config)
    return config, task, model


def _algorithm(setup, devices: int):
    config, task, model = setup
    return build_algorithm(config, task, model, devices=devices)


def _arrays(tree) -> list[np.ndarray]:
    """The array leaves of `tree` (PRNG keys as their data)."""
    leaves = jtu.tree_leaves(eqx.filter(tree, eqx.is_array))
    return [
        np.asarray(jr.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x)
        for x in leaves
    ]


def _copy(tree):
    """A copy with fresh buffers (`train_chunk` donates its inputs)."""
    return jtu.tree_map(lambda x: jnp.array(x, copy=True) if eqx.is_array(x) else x, tree)


@eqx.filter_jit
def _step(algorithm, task, state):
    return algorithm.step(task, state)


def test_two_devices_take_the_same_step_as_one(setup):
    assert len(jax.devices()) >= 2, "conftest asks XLA for 2 simulated CPU devices"
    _, task, model = setup
    one = _algorithm(setup, 1)
    two = _algorithm(setup, 2)
    assert one.mesh.devices.size == 1 and two.mesh.devices.size == 2
    state = one.init(task, model, jr.key(11))
    state1, metrics1 = _step(one, task, state)
    state2, metrics2 = _step(two, task, state)
    model1 = state1.model

    # The step did something: every meta leaf moved, and the fixed-start output bias did not.
    for before, after in zip(
        _arrays(model.weight_generators), _arrays(model1.weight_generators), strict=True
    ):
        assert not np.allclose(before, after)
    np.testing.assert_array_equal(model1.out_bias, model.out_bias)
    assert int(state1.step) == int(state2.step) == 1

    for a, b in zip(_arrays(state1), _arrays(state2), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert set(metrics1) == set(metrics2) == {"loss", "accuracy", "grad_norm", "grad_finite"}
    for name in metrics1:
        np.testing.assert_allclose(metrics1[name], metrics2[name], rtol=1e-5, atol=1e-6)
    assert np.isfinite(float(metrics1["loss"])) and float(metrics1["grad_norm"]) > 0


def test_make_mesh_errors():
    available = len(jax.local_devices())
    with pytest.raises(
        ValueError, match=rf"{available + 1} devices asked for but only {available}"
    ):
        make_mesh(available + 1, META_BATCH * (available + 1))
    with pytest.raises(ValueError, match=r"meta_batch \(3\) must be divisible .* \(2\)"):
        make_mesh(2, 3)
    # By default: the most devices that divide the meta-batch.
    assert make_mesh(None, 4).devices.size == 2
    assert make_mesh(None, 3).devices.size == 1
    assert make_mesh(1, 3).axis_names == ("batch",)


def test_a_chunk_of_four_equals_two_chunks_of_two(setup):
    _, task, model = setup
    algorithm = _algorithm(setup, 2)
    state = algorithm.init(task, model, jr.key(5))
    whole, whole_metrics = train_chunk(algorithm, task, replicate(_copy(state), algorithm.mesh), 4)
    half, half_metrics = train_chunk(algorithm, task, replicate(_copy(state), algorithm.mesh), 2)
    halves, halves_metrics = train_chunk(algorithm, task, half, 2)

    assert int(whole.step) == int(halves.step) == 4
    for a, b in zip(_arrays(whole), _arrays(halves), strict=True):
        np.testing.assert_array_equal(a, b)
    assert set(whole_metrics) == {"loss", "accuracy", "grad_norm", "grad_finite"}
    for name, values in whole_metrics.items():
        assert values.shape == (4,)
        np.testing.assert_array_equal(
            values, np.concatenate([half_metrics[name], halves_metrics[name]])
        )
    # Steps draw different tasks: the losses of the 4 steps are not all the same.
    assert len(set(np.asarray(whole_metrics["loss"]).tolist())) == 4
    # And the model moved away from its initialization.
    assert not np.allclose(whole.model.weight_generators[0], model.weight_generators[0])


def test_the_outer_optimizer_follows_the_labels(setup):
    """Fast and meta leaves are updated; a leaf labelled fixed never moves, even with weight
    decay and a non-zero value; unknown labels are an error."""
    config, _, model = setup
    model = eqx.tree_at(lambda m: m.out_bias, model, jnp.ones_like(model.out_bias))
    labels = array_labels(model)
    rules = {"fast": "update", "meta": "update", "fixed": "freeze"}
    outer = dataclasses.replace(config.algorithm.outer, weight_decay=0.5)
    optimizer = outer_optimizer(outer, 10, labels, rules)
    assert optimizer is outer_optimizer(outer, 10, labels, rules)  # cached: compiled once
    params = eqx.filter(model, eqx.is_array)
    grads = jtu.tree_map(jnp.ones_like, params)
    updates, _ = optimizer.update(grads, optimizer.init(params), params)
    np.testing.assert_array_equal(updates.out_bias, np.zeros_like(updates.out_bias))
    assert all(np.abs(u).min() > 0 for u in _arrays(updates.embeddings))
    assert all(np.abs(u).min() > 0 for u in _arrays(updates.weight_generators))
    with pytest.raises(ValueError, match=r"No optimizer rule for the labels \['fixed'\]"):
        outer_optimizer(outer, 10, labels, {"fast": "update", "meta": "update"})


def test_evaluation_does_not_depend_on_the_batch_size(setup):
    """Evaluating 3 tasks 2 at a time (the last batch padded, then dropped) gives the numbers
    of evaluating them all at once."""
    config, task, model = setup
    algorithm = bilevel_for(config.algorithm.inner, 2)
    key = jr.key(3)
    results = [evaluate_pool(algorithm, task, model, key, "ood", 3, batch) for batch in (2, 3)]
    assert set(results[0]) == {"loss", "accuracy"}
    for name in results[0]:
        np.testing.assert_allclose(results[0][name], results[1][name], rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- gradient modes


def _entry(model, where, index: tuple[int, ...]):
    return float(where(model)[index])


def _perturb(model, where, index: tuple[int, ...], eps: float):
    return eqx.tree_at(where, model, where(model).at[index].add(eps))


def _normalize_rows_with_gradient(e):
    """`normalize_rows` without the stop-gradient on the scale (the same values)."""
    return e * jnp.sqrt(e.shape[-1]) / jnp.linalg.norm(e, axis=-1, keepdims=True)


def test_gradient_modes(setup, monkeypatch: pytest.MonkeyPatch):
    """Second-order gradients match central finite differences of the mean query loss (in
    float64); first-order and equilibrium gradients differ from them; the fast initialization
    gets gradient in second- and first-order modes only; the fixed-start output bias never.

    The hypernet's embedding normalization has a stop-gradient on its scale (as in the
    reference code), so its gradients are not those of the loss; for the finite-difference
    check the scale is made differentiable (same forward values)."""
    monkeypatch.setattr(linear_hypernet, "normalize_rows", _normalize_rows_with_gradient)
    config, task, model = setup
    with jax.enable_x64(True):
        task, model = jtu.tree_map(
            lambda x: x.astype(jnp.float64) if eqx.is_inexact_array(x) else x, (task, model)
        )
        assert model.weight_generators[0].dtype == jnp.float64
        keys = jr.split(jr.key(3), META_BATCH)

        def mean_loss(model, mode: str):
            inner = dataclasses.replace(config.algorithm.inner, mode=mode)
            algorithm = bilevel_for(inner)
            losses, _ = jax.vmap(lambda key: algorithm.episode_loss(task, model, key))(keys)
            return losses.mean()

        value_and_grad = eqx.filter_jit(eqx.filter_value_and_grad(mean_loss))
        modes = ("second-order", "first-order", "equilibrium")
        grads = {mode: value_and_grad(model, mode)[1] for mode in modes}

        def loss(model):
            return float(value_and_grad(model, "second-order")[0])

        generator = (lambda m: m.weight_generators[1], (0, 0))
        embedding = (lambda m: m.embeddings[1], (0, 1))
        eps = 1e-6
        for where, index in (generator, embedding):
            plus = loss(_perturb(model, where, index, eps))
            minus = loss(_perturb(model, where, index, -eps))
            numeric = (plus - minus) / (2 * eps)
            second = _entry(grads["second-order"], where, index)
            assert abs(numeric) > 1e-4
            np.testing.assert_allclose(second, numeric, rtol=1e-5)
            if where is embedding[0]:
                # The fast initialization's gradient loses the inner loop's Jacobian. (For a
                # single meta entry the dropped terms can be tiny; the whole tensors are
                # compared below.)
                first = _entry(grads["first-order"], where, index)
                assert abs(first - numeric) > 1e-2 * abs(numeric), (first, numeric)

        # Meta leaves: first-order and equilibrium both drop the inner loop's derivative, so
        # they agree with each other and differ from second-order.
        for mode in ("first-order", "equilibrium"):
            assert not np.allclose(
                grads[mode].weight_generators[1], grads["second-order"].weight_generators[1]
            )
        for a, b in zip(
            _arrays(grads["first-order"].weight_generators + grads["first-order"].bias_generators),
            _arrays(grads["equilibrium"].weight_generators + grads["equilibrium"].bias_generators),
            strict=True,
        ):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)

        # The fast initialization (embeddings): gradient in second- and first-order modes only.
        for e in grads["equilibrium"].embeddings:
            np.testing.assert_array_equal(e, np.zeros_like(e))
        for mode in ("second-order", "first-order"):
            assert all(np.abs(np.asarray(e)).max() > 1e-6 for e in grads[mode].embeddings)
        # The output bias restarts at zero for every task: never any gradient.
        for mode, g in grads.items():
            np.testing.assert_array_equal(g.out_bias, np.zeros_like(g.out_bias), err_msg=mode)


# ------------------------------------------------------------------ sequential minibatches


def _shallow_setup(shots: int):
    """A tiny teacher-student task, its student, and one support set of `shots` inputs."""
    from tasks import teacher_student
    from tasks.config import TeacherStudentConfig
    from zoo.shallow_hypernet import ShallowHypernet

    config = TeacherStudentConfig(
        in_features=3, hidden=4, out_features=2, shots_support=shots, shots_query=2, eval_h=(1,)
    )

    @eqx.filter_jit  # one compilation: much faster than eager random draws on a busy CPU
    def setup(key):
        k_task, k_model, k_sample = jr.split(key, 3)
        task = teacher_student.make(config, key=k_task)
        model = ShallowHypernet(3, 2, hidden=5, num_modules=4, key=k_model)
        return task, model, task.sample(k_sample).support

    return setup(jr.key(0))


def test_sequential_minibatches_give_each_inner_step_the_next_slice():
    """Step i reads support examples [i * batch, (i + 1) * batch): the same code as a hand-made
    loop over consecutive slices, no key needed, examples past steps x batch unread, and a
    clear error when the support is too small."""
    import optax

    from runs.algorithms.inner import InnerLoop
    from runs.config import InnerConfig
    from runs.optim import inner_optimizer

    steps, batch = 3, 4
    task, model, support = _shallow_setup(16)
    # Examples past steps x batch are never read: garbage there changes nothing.
    support = type(support)(
        x=support.x.at[steps * batch :].set(jnp.nan), y=support.y.at[steps * batch :].set(jnp.nan)
    )
    inner = InnerConfig(steps=steps, lr=0.1, mode="equilibrium", batch=batch)
    inner = dataclasses.replace(inner, minibatches="sequential")
    loop = InnerLoop.from_config(inner)
    adapted = eqx.filter_jit(loop.adapt)(model, support, task.loss)

    optimizer = inner_optimizer(inner)
    code, opt_state = model.code, optimizer.init(model.code)

    @jax.jit
    def by_hand(code, opt_state, x, y):
        loss = lambda c: task.loss(eqx.tree_at(lambda m: m.code, model, c)(x), y)  # noqa: E731
        updates, opt_state = optimizer.update(jax.grad(loss)(code), opt_state, code)
        return optax.apply_updates(code, updates), opt_state

    for i in range(steps):
        rows = slice(i * batch, (i + 1) * batch)
        code, opt_state = by_hand(code, opt_state, support.x[rows], support.y[rows])
    assert np.isfinite(adapted.code).all()
    np.testing.assert_allclose(adapted.code, code, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"takes 5 steps x 4 = 20 support examples.* has 16"):
        loop.with_steps(5).adapt(model, support, task.loss)


def test_minibatches_with_replacement_repeat_examples():
    """A minibatch of the whole support set: drawn without replacement (`random`) it is a
    permutation, the full-batch step; drawn with replacement (the authors' ANIL) it repeats
    some examples and leaves others out, and equals a hand-made loop over those draws."""
    from runs.algorithms.inner import InnerLoop
    from runs.config import InnerConfig

    steps, shots = 2, 8
    task, model, support = _shallow_setup(shots)
    base = InnerConfig(steps=steps, lr=0.1, mode="equilibrium")

    def adapted(minibatches: str, batch: int, data=support):
        inner = dataclasses.replace(base, batch=batch, minibatches=minibatches)
        loop = InnerLoop.from_config(inner)
        return eqx.filter_jit(loop.adapt)(model, data, task.loss, key=jr.key(3)).code

    full = adapted("random", 0)
    np.testing.assert_allclose(adapted("random", shots), full, rtol=1e-5, atol=1e-6)
    replaced = adapted("with-replacement", shots)
    assert not np.allclose(replaced, full, rtol=1e-4, atol=1e-5)
    # The same draws by hand: step i reads rows jr.choice(fold_in(key, i), replace=True).
    rows = [
        jr.choice(jr.fold_in(jr.key(3), i), shots, (shots,), replace=True) for i in range(steps)
    ]
    assert any(len(set(np.asarray(r).tolist())) < shots for r in rows)
    x = jnp.concatenate([support.x[r] for r in rows])
    y = jnp.concatenate([support.y[r] for r in rows])
    stacked = type(support)(x=x, y=y)
    np.testing.assert_allclose(
        replaced, adapted("sequential", shots, stacked), rtol=1e-5, atol=1e-6
    )


def test_sequential_minibatches_need_a_batch_and_old_configs_load_as_random():
    from runs.config import InnerConfig, to_dict
    from runs.presets import get_preset
    from runs.run import config_from_dict

    with pytest.raises(ValueError, match=r"set --algorithm\.inner\.batch"):
        InnerConfig(minibatches="sequential")
    config = get_preset("schug2024/teacher-student-discrete-connected")
    saved = to_dict(config)
    del saved["algorithm"]["inner"]["minibatches"]  # as a run saved before the field existed
    loaded = config_from_dict(saved)
    assert loaded.algorithm.inner.minibatches == "random"
    inner = dataclasses.replace(config.algorithm.inner, minibatches="random")
    assert loaded == dataclasses.replace(  # named from its config's class, as runs are
        config,
        algorithm_name="bilevel",
        algorithm=dataclasses.replace(config.algorithm, inner=inner),
    )
    # And from the 0.1 shape, with the inner loop a section of the run's config.
    legacy = to_dict(config)
    legacy.update(legacy.pop("algorithm"))
    del legacy["inner"]["minibatches"]
    assert config_from_dict(legacy) == loaded
