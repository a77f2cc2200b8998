"""Identification metrics on cases with a known answer."""

import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

from runs.metrics import linear_decodability, module_alignment, r2_score, ridge

M, M2, N_IN, H, H2, TASKS = 4, 6, 5, 7, 9, 64


def test_ridge_recovers_a_linear_map():
    kx, kw = jr.split(jr.key(0))
    x = jr.normal(kx, (50, 3))
    w = jr.normal(kw, (3, 2))
    got_w, got_b = ridge(x, x @ w + 1.5, l2=0.0)
    np.testing.assert_allclose(got_w, w, atol=1e-4)
    np.testing.assert_allclose(got_b, [1.5, 1.5], atol=1e-4)


def test_r2_is_one_for_a_perfect_and_zero_for_the_mean_prediction():
    y = jr.normal(jr.key(1), (20, 3))
    assert float(r2_score(y, y)) == pytest.approx(1.0)
    assert float(r2_score(y, jnp.broadcast_to(y.mean(0), y.shape))) == pytest.approx(0.0, abs=1e-6)
    # A constant column is left out of the average instead of dividing by zero.
    y_const = y.at[:, 0].set(2.0)
    assert np.isfinite(float(r2_score(y_const, y_const)))


def test_embeddings_that_are_a_linear_transform_of_the_latent_decode_with_r2_one():
    k1, k2, k3 = jr.split(jr.key(2), 3)
    a = jr.normal(k1, (M, 12))  # embedding = latent @ a + offset
    fit_latents, latents = jr.uniform(k2, (40, M)), jr.uniform(k3, (30, M))
    r2 = linear_decodability(fit_latents @ a + 0.3, fit_latents, latents @ a + 0.3, latents, l2=0)
    assert float(r2) == pytest.approx(1.0, abs=1e-4)


def test_embeddings_unrelated_to_the_latent_do_not_decode():
    k1, k2, k3, k4 = jr.split(jr.key(3), 4)
    r2 = linear_decodability(
        jr.normal(k1, (40, 12)),
        jr.uniform(k2, (40, M)),
        jr.normal(k3, (200, 12)),
        jr.uniform(k4, (200, M)),
    )
    assert float(r2) < 0.1


def _teacher_and_codes():
    kt, kz = jr.split(jr.key(4))
    teacher = jr.normal(kt, (M, N_IN, H))
    codes = jr.uniform(kz, (TASKS, M))
    return teacher, codes


def test_a_student_that_is_a_linear_transform_of_the_teacher_has_alignment_one():
    teacher, codes = _teacher_and_codes()
    kc, ks, kp = jr.split(jr.key(5), 3)
    # Student codes z' = z C (C of full row rank); student modules V with C V = teacher, so the
    # student generates the teacher's layer for every task. Its hidden units are the teacher's,
    # permuted, positively rescaled and joined by extra ones.
    c = jr.normal(kc, (M, M2))
    v = jnp.einsum("jm,mih->jih", jnp.linalg.pinv(c), teacher)
    extra = jr.normal(ks, (M2, N_IN, H2 - H))
    scale = jnp.linspace(0.5, 3.0, H)
    student = jnp.concatenate([v * scale, extra], axis=-1)[..., jr.permutation(kp, H2)]
    alignment = module_alignment(teacher, student, codes, codes @ c)
    assert float(alignment) == pytest.approx(1.0, abs=1e-3)


def test_a_random_student_is_not_aligned():
    teacher, codes = _teacher_and_codes()
    ks, kz = jr.split(jr.key(6))
    student = jr.normal(ks, (M2, N_IN, H2))
    alignment = module_alignment(teacher, student, codes, jr.normal(kz, (TASKS, M2)))
    assert float(alignment) < 0.6
