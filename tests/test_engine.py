"""The meta-training engine: sharded outer steps, gradient modes, scanned chunks, meshes."""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
import numpy as np
import pytest
from conftest import make_tiny_config

from runs.engine import (
    Trainer,
    episode_loss,
    evaluate_pool,
    make_mesh,
    outer_optimizer,
    train_chunk,
)
from runs.run import build
from zoo import linear_hypernet

META_BATCH = 4


@pytest.fixture(scope="module")
def setup():
    """Config, task, model, optimizer and optimizer state of the tiny run."""
    config = make_tiny_config()
    task, model = build(config)
    optimizer = outer_optimizer(config.outer, config.run.steps)
    opt_state = optimizer.init(eqx.filter(model, eqx.is_array))
    return config, task, model, optimizer, opt_state


def _trainer(setup, devices: int) -> Trainer:
    config, task, _, optimizer, _ = setup
    return Trainer(
        task=task,
        inner=config.inner,
        optimizer=optimizer,
        meta_batch=META_BATCH,
        mesh=make_mesh(devices, META_BATCH),
    )


def _arrays(tree) -> list[np.ndarray]:
    return [np.asarray(x) for x in jtu.tree_leaves(eqx.filter(tree, eqx.is_array))]


def _copy(tree):
    """A copy with fresh buffers (`train_chunk` donates its inputs)."""
    return jtu.tree_map(lambda x: jnp.array(x, copy=True) if eqx.is_array(x) else x, tree)


@eqx.filter_jit
def _step(trainer: Trainer, model, opt_state, key):
    return trainer.step(model, opt_state, key)


def test_two_devices_take_the_same_step_as_one(setup):
    assert len(jax.devices()) >= 2, "conftest asks XLA for 2 simulated CPU devices"
    _, _, model, _, opt_state = setup
    key = jr.key(11)
    one = _trainer(setup, 1)
    two = _trainer(setup, 2)
    assert one.mesh.devices.size == 1 and two.mesh.devices.size == 2
    model1, opt1, metrics1 = _step(one, model, opt_state, key)
    model2, opt2, metrics2 = _step(two, model, opt_state, key)

    # The step did something: every meta leaf moved, and the fixed-start output bias did not.
    for before, after in zip(
        _arrays(model.weight_generators), _arrays(model1.weight_generators), strict=True
    ):
        assert not np.allclose(before, after)
    np.testing.assert_array_equal(model1.out_bias, model.out_bias)

    for a, b in zip(_arrays((model1, opt1)), _arrays((model2, opt2)), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert set(metrics1) == set(metrics2) == {"loss", "accuracy", "grad_norm"}
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
    assert make_mesh(1, 3).axis_names == ("tasks",)


def test_a_chunk_of_four_equals_two_chunks_of_two(setup):
    _, _, model, _, opt_state = setup
    trainer = _trainer(setup, 2)
    key = jr.key(5)
    whole = train_chunk(
        trainer, *trainer.replicate(_copy((model, opt_state))), key, jnp.asarray(0), 4
    )
    half = train_chunk(
        trainer, *trainer.replicate(_copy((model, opt_state))), key, jnp.asarray(0), 2
    )
    halves = train_chunk(trainer, half[0], half[1], key, jnp.asarray(2), 2)

    for a, b in zip(_arrays(whole[:2]), _arrays(halves[:2]), strict=True):
        np.testing.assert_array_equal(a, b)
    assert set(whole[2]) == {"loss", "accuracy", "grad_norm"}
    for name, values in whole[2].items():
        assert values.shape == (4,)
        np.testing.assert_array_equal(values, np.concatenate([half[2][name], halves[2][name]]))
    # Steps draw different tasks: the losses of the 4 steps are not all the same.
    assert len(set(np.asarray(whole[2]["loss"]).tolist())) == 4
    # And the model moved away from its initialization.
    assert not np.allclose(whole[0].weight_generators[0], model.weight_generators[0])


def test_evaluation_does_not_depend_on_the_batch_size(setup):
    """Evaluating 3 tasks 2 at a time (the last batch padded, then dropped) gives the numbers
    of evaluating them all at once."""
    config, task, model, _, _ = setup
    key = jr.key(3)
    results = [
        evaluate_pool(model, task, key, "ood", config.inner, 2, 3, batch) for batch in (2, 3)
    ]
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
    config, task, model, _, _ = setup
    with jax.enable_x64(True):
        task, model = jtu.tree_map(
            lambda x: x.astype(jnp.float64) if eqx.is_inexact_array(x) else x, (task, model)
        )
        assert model.weight_generators[0].dtype == jnp.float64
        keys = jr.split(jr.key(3), META_BATCH)

        def mean_loss(model, mode: str):
            inner = dataclasses.replace(config.inner, mode=mode)
            losses, _ = jax.vmap(lambda key: episode_loss(model, key, task, inner, inner.steps))(
                keys
            )
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
