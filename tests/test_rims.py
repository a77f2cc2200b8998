"""The RIM cell (`zoo.rims.RIMCell`) against B2 of `reference/meta_rims.md`, at tiny sizes."""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

from zoo.rims import RIMCell

N, K, H, D = 4, 2, 4, 6
SIZES = dict(num_modules=N, top_k=K, hidden_size=H, key_size=8, comm_heads=2, comm_key_size=3)


def _cell(**options) -> RIMCell:
    return RIMCell(D, **{**SIZES, **options}, key=jr.key(0))


def _inputs(batch: int, seed: int = 1):
    kx, kh, kc = jr.split(jr.key(seed), 3)
    # Large projections so that the modules' scores differ clearly.
    x = 30.0 * jr.normal(kx, (batch, D))
    return x, (jr.normal(kh, (batch, N, H)), jr.normal(kc, (batch, N, H)))


def _scores(cell: RIMCell, x, h):
    """The input attention's score of the input slot, recomputed from the weights."""
    k = (x @ cell.input_key_value)[: cell.key_size]
    return jnp.einsum("nh,nhk->nk", h, cell.input_query.weight) @ k / math.sqrt(cell.key_size)


def test_exactly_k_modules_update():
    cell = _cell()
    x, (h, c) = _inputs(16)
    (h_new, c_new), mask = eqx.filter_jit(jax.vmap(lambda x, s: cell(x, s)))(x, (h, c))
    mask, h, c, h_new, c_new = map(np.asarray, (mask, h, c, h_new, c_new))
    assert mask.shape == (16, N) and mask.dtype == bool
    assert np.all(mask.sum(axis=1) == K)
    # Inactive modules keep their state bit for bit; active ones change.
    assert np.array_equal(h_new[~mask], h[~mask]) and np.array_equal(c_new[~mask], c[~mask])
    assert np.all(np.any(h_new[mask] != h[mask], axis=-1))
    assert np.all(np.any(c_new[mask] != c[mask], axis=-1))
    # The active modules are those attending most to the input (least to the null slot).
    for b in range(16):
        top = jax.lax.top_k(_scores(cell, x[b], h[b]), K)[1]
        assert set(np.flatnonzero(mask[b])) == set(np.asarray(top))


def test_inactive_module_cells_get_no_gradient():
    cell = _cell()
    x, (h, c) = _inputs(1, seed=2)
    x, state = x[0], (h[0], c[0])

    def loss(cell):
        (h_new, c_new), mask = cell(x, state)
        return jnp.sum(jnp.sin(h_new)) + jnp.sum(c_new**2), mask

    grads, mask = eqx.filter_jit(eqx.filter_grad(loss, has_aux=True))(cell)
    mask = np.asarray(mask)
    assert mask.sum() == K
    for g in (np.asarray(grads.cell_weight), np.asarray(grads.cell_bias)):
        assert np.all(g[~mask] == 0)  # exactly zero, communication included
        assert np.all(np.any(g[mask].reshape(K, -1) != 0, axis=-1))
    # The attentions learn: through the read vector of the active modules, and the
    # communication.
    assert np.any(np.asarray(grads.input_query.weight) != 0)
    assert np.any(np.asarray(grads.input_key_value) != 0)
    assert grads.comm_qkv is not None and np.any(np.asarray(grads.comm_qkv.weight) != 0)


def test_all_active_without_communication_is_n_independent_lstms():
    cell = _cell(top_k=N, communication=False)
    x, (h, c) = _inputs(1, seed=3)
    x, h, c = x[0], h[0], c[0]
    (h_new, c_new), mask = eqx.filter_jit(lambda cell, x, s: cell(x, s))(cell, x, (h, c))
    assert np.all(np.asarray(mask))

    v = cell.value_size
    kv = x @ cell.input_key_value
    slots_k = jnp.stack([jnp.zeros(cell.key_size), kv[: cell.key_size]])  # [null; x]
    slots_v = jnp.stack([jnp.zeros(v), kv[cell.key_size :]])
    for j in range(N):
        q = h[j] @ cell.input_query.weight[j]
        read = jax.nn.softmax(slots_k @ q / math.sqrt(cell.key_size)) @ slots_v
        lstm = eqx.nn.LSTMCell(v, H, key=jr.key(0))
        weight = cell.cell_weight[j]
        lstm = eqx.tree_at(
            lambda m: (m.weight_ih, m.weight_hh, m.bias),
            lstm,
            (weight[:v].T, weight[v:].T, cell.cell_bias[j]),
        )
        h_ref, c_ref = lstm(read, (h[j], c[j]))
        np.testing.assert_allclose(h_new[j], h_ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(c_new[j], c_ref, rtol=1e-5, atol=1e-6)


def test_dropout_only_with_a_key():
    cell = _cell(dropout=0.5)
    no_dropout = _cell(dropout=0.0)  # the same weights
    x, (h, c) = _inputs(1, seed=4)
    x, state = x[0], (h[0], c[0])
    step = eqx.filter_jit(lambda cell, key: cell(x, state, key=key)[0][0])
    plain = np.asarray(step(cell, None))
    np.testing.assert_array_equal(plain, np.asarray(step(no_dropout, None)))
    a, b = np.asarray(step(cell, jr.key(5))), np.asarray(step(cell, jr.key(5)))
    np.testing.assert_array_equal(a, b)  # same key, same numbers
    assert not np.array_equal(a, plain)
    assert not np.array_equal(a, np.asarray(step(cell, jr.key(6))))


def test_initialization():
    cell = _cell()
    assert cell.value_size == 4 * H
    assert cell.cell_weight.shape == (N, 4 * H + H, 4 * H)
    assert cell.comm_qkv is not None and cell.comm_output is not None
    assert cell.comm_qkv.weight.shape == (N, H, 3 * 2 * 3)
    lim = 1 / math.sqrt(N * H)
    assert float(jnp.max(jnp.abs(cell.cell_weight))) <= lim
    assert float(jnp.max(jnp.abs(cell.cell_bias))) <= 2 * lim
    assert float(jnp.std(cell.input_key_value)) < 0.02  # 0.01 N(0, 1)
    np.testing.assert_allclose(jnp.linalg.norm(cell.comm_output.weight, axis=1), 1.0, rtol=1e-5)
    assert float(jnp.max(jnp.abs(cell.comm_output.bias))) == 0.0  # pyright: ignore[reportArgumentType]
    h, c = cell.initial_state()
    assert h.shape == c.shape == (N, H) and not np.any(np.asarray(h))
    off = _cell(communication=False)
    assert off.comm_qkv is None and off.comm_output is None


@pytest.mark.parametrize(
    "options",
    [dict(top_k=N + 1), dict(top_k=0), dict(dropout=1.0), dict(hidden_size=0)],
    ids=str,
)
def test_bad_settings_raise(options):
    with pytest.raises(ValueError, match="RIMCell"):
        _cell(**options)
