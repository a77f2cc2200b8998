"""Identification metrics of modular meta-learners: linear decodability of the task latent from the
learned embeddings (Section 4.1, Fig. 3C-D) and module alignment (Section 3.3, Fig. 2C-D).

Both are plain functions of arrays, so they can be checked on cases with a known answer.

**Linear decodability.** A ridge regression (with intercept) from the adapted embeddings of one
set of tasks to their ground-truth latents, scored on another set by the coefficient of
determination `R^2 = 1 - SS_res / SS_tot` of each latent dimension, averaged over the
dimensions that vary in the scored set (scikit-learn's `uniform_average`).

**Module alignment** (the reference code's definition; the paper's formula was lost in
conversion). Teacher modules `W[m]` (`[M, n_in, h]`) and student modules `V[j]` (`[M', n_in,
h']`) both map a code to a first-layer weight, `sum_m z[m] W[m]`. With `B` the ridge
regression (no intercept) from the student's inferred codes `z'` to the true codes `z` of the
training tasks (`z ~ z' B`), `z' ~ z pinv(B)`, so the student in teacher coordinates is
`U = pinv(B) @ V` (`[M, n_in, h']`). Each hidden neuron is the vector of its incoming weights
over all modules (`W[:, :, k]` flattened, `[M * n_in]`); with `cos` the cosine similarity,

    alignment = mean over teacher neurons k of  max over student neurons j of  cos(W[:, :, k], U[:, :, j])

It is 1 exactly when every teacher neuron has a student neuron that is a positive multiple of
it, i.e. when the student's modules are a linear transform of the teacher's (Theorem 2).
"""

import jax.numpy as jnp
from jaxtyping import Array, Float


def ridge(
    x: Float[Array, "n d"],
    y: Float[Array, "n k"],
    l2: float = 1e-4,
    intercept: bool = True,
) -> tuple[Float[Array, "d k"], Float[Array, " k"]]:
    """Weights and intercept of the ridge regression `y ~ x @ w + b` (`b = 0` without
    intercept), penalty `l2 * n * |w|^2`."""
    x, y = x.astype(jnp.float32), y.astype(jnp.float32)
    if intercept:
        x_mean, y_mean = x.mean(0), y.mean(0)
    else:
        x_mean, y_mean = jnp.zeros(x.shape[1]), jnp.zeros(y.shape[1])
    xc, yc = x - x_mean, y - y_mean
    gram = xc.T @ xc + l2 * x.shape[0] * jnp.eye(x.shape[1])
    w = jnp.linalg.solve(gram, xc.T @ yc)
    return w, y_mean - x_mean @ w


def r2_score(y: Float[Array, "n k"], pred: Float[Array, "n k"]) -> Float[Array, ""]:
    """`R^2` per column, averaged over the columns of `y` that vary."""
    ss_res = ((y - pred) ** 2).sum(0)
    ss_tot = ((y - y.mean(0)) ** 2).sum(0)
    varies = ss_tot > 1e-12 * y.shape[0]
    r2 = 1.0 - ss_res / jnp.where(varies, ss_tot, 1.0)
    return jnp.where(varies, r2, 0.0).sum() / jnp.maximum(varies.sum(), 1)


def linear_decodability(
    fit_embeddings: Float[Array, "n d"],
    fit_latents: Float[Array, "n k"],
    embeddings: Float[Array, "m d"],
    latents: Float[Array, "m k"],
    l2: float = 1e-4,
) -> Float[Array, ""]:
    """`R^2` on (`embeddings`, `latents`) of a ridge decoder fitted on the `fit_*` pairs."""
    w, b = ridge(fit_embeddings, fit_latents, l2)
    return r2_score(latents, embeddings @ w + b)


def module_alignment(
    teacher: Float[Array, "M n_in h"],
    student: Float[Array, "M2 n_in h2"],
    codes: Float[Array, "n M"],
    inferred: Float[Array, "n M2"],
    l2: float = 1e-6,
) -> Float[Array, ""]:
    """Alignment of `student` modules with `teacher` modules, given the true `codes` and the
    student's `inferred` codes of the same (training) tasks; see the module docstring."""
    b, _ = ridge(inferred, codes, l2, intercept=False)  # [M2, M]
    in_teacher = jnp.einsum("mj,jih->mih", jnp.linalg.pinv(b), student)  # [M, n_in, h2]
    t = teacher.reshape(-1, teacher.shape[-1])  # [M * n_in, h]
    s = in_teacher.reshape(-1, in_teacher.shape[-1])  # [M * n_in, h2]
    t = t / jnp.linalg.norm(t, axis=0, keepdims=True)
    s = s / jnp.maximum(jnp.linalg.norm(s, axis=0, keepdims=True), 1e-12)
    return (t.T @ s).max(axis=1).mean()
