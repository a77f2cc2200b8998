"""The RIM cell (`zoo.rims.RIMCell`) against B2 of `docs/specs/meta-rims.md`, at tiny sizes."""

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


@pytest.mark.parametrize(
    "options",
    [{}, {"score_noise": 0.5, "query_bias": True}, {"communication": False}, {"dropout": 0.0}],
    ids=["reference", "noise", "no-communication", "no-dropout"],
)
def test_a_step_is_update_of_project_and_noise(options):
    """`update(project(x), state, noise(key))` is `cell(x, state, key=key)` bit for bit (what
    an unroll draws before the recurrence is what a step draws), and the noise holds only
    what the cell uses: nothing without a key, no bits without dropout, no Gumbel noise
    without `score_noise`."""
    cell = _cell(**options)
    x, (h, c) = _inputs(1, seed=7)
    x, state = x[0], (h[0], c[0])
    for key in (None, jr.key(8)):
        whole = cell(x, state, key=key)
        parts = cell.update(cell.project(x), state, cell.noise(key))
        for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(parts), strict=True):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert cell.noise(None) is None
    noise = cell.noise(jr.key(8))
    assert noise is not None
    assert (noise.read is None) == (cell.dropout == 0)
    assert (noise.comm is None) == (cell.dropout == 0 or not cell.communication)
    assert (noise.gumbel is None) == (cell.score_noise == 0)


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


# ---------------------------------------------------------------- modules that can win back


def test_the_symmetry_breaking_options_leave_the_reference_cell_as_it_was():
    """Off, the options add no leaf and draw no randomness the cell had before them."""
    plain = _cell()
    assert plain.query_bias is None and plain.initial_h is None and plain.initial_c is None
    for options in (
        dict(query_bias=True),
        dict(initial_state="learned"),
        dict(score_noise=0.5),
        dict(input_attention="modules"),
    ):
        cell = _cell(**options)
        for name in ("input_query", "input_key_value", "cell_weight", "cell_bias", "comm_qkv"):
            pairs = zip(
                jax.tree.leaves(getattr(plain, name)),
                jax.tree.leaves(getattr(cell, name)),
                strict=True,
            )
            for a, b in pairs:
                assert np.array_equal(np.asarray(a), np.asarray(b)), (options, name)


def test_a_zero_state_scores_zero_and_a_query_bias_makes_it_score_by_the_input():
    x, _ = _inputs(8, seed=3)
    zeros = (jnp.zeros((N, H)), jnp.zeros((N, H)))
    plain, biased = _cell(), _cell(query_bias=True)
    _, mask = jax.vmap(lambda x: plain(x, zeros))(x)
    # Every module ties at 0: the lowest indices win on every input.
    assert np.all(np.asarray(mask)[:, :K]) and not np.any(np.asarray(mask)[:, K:])
    _, mask = jax.vmap(lambda x: biased(x, zeros))(x)
    assert len({tuple(row) for row in np.asarray(mask)}) > 1  # the winners depend on x
    assert np.all(np.asarray(mask).sum(axis=1) == K)


def test_a_learned_initial_state_is_the_start_and_gets_a_gradient():
    cell = _cell(initial_state="learned")
    h0, c0 = cell.initial_state()
    assert h0.shape == c0.shape == (N, H) and float(jnp.max(jnp.abs(h0))) > 0
    assert bool(jnp.all(jnp.abs(h0) <= 1 / math.sqrt(H)))
    x, _ = _inputs(1, seed=4)

    def loss(cell):
        (h, c), _ = cell(x[0], cell.initial_state())
        return jnp.sum(h**2) + jnp.sum(c**2)

    grads = eqx.filter_grad(loss)(cell)
    assert float(jnp.max(jnp.abs(grads.initial_h))) > 0
    assert float(jnp.max(jnp.abs(grads.initial_c))) > 0
    labels = cell.labels(modules="fast", attention="slow")
    assert labels.initial_h == labels.initial_c == labels.cell_weight == "fast"


def test_score_noise_acts_only_with_a_key():
    x, state = _inputs(32, seed=5)
    plain, noisy = _cell(), _cell(score_noise=10.0)
    run = lambda cell, key: jax.vmap(lambda x, s: cell(x, s, key=key))(x, state)  # noqa: E731
    _, reference = run(plain, None)
    _, greedy = run(noisy, None)
    assert np.array_equal(np.asarray(reference), np.asarray(greedy))
    _, sampled = run(noisy, jr.key(7))
    sampled = np.asarray(sampled)
    assert np.all(sampled.sum(axis=1) == K)
    assert not np.array_equal(sampled, np.asarray(reference))


def test_the_rl_codes_input_attention_is_a_sparse_softmax_across_modules():
    x, (h, c) = _inputs(4, seed=6)
    cell = _cell(input_attention="modules", dropout=0.0)
    for b in range(4):
        score = _scores(cell, x[b], h[b])
        weight = np.asarray(cell._sparse_across_modules(score))
        softmax = np.asarray(jax.nn.softmax(score))
        delta = np.sort(softmax)[::-1][K] + 1e-7
        expected = np.maximum(softmax - delta, 0)
        np.testing.assert_allclose(weight, expected / (expected.sum() + 1e-7), rtol=1e-5)
        assert np.count_nonzero(weight) == K and abs(weight.sum() - 1) < 1e-3
        # The winners of the top-k are those with weight, as with the null slot.
        _, mask = cell(x[b], (h[b], c[b]))
        assert set(np.flatnonzero(np.asarray(mask))) == set(np.flatnonzero(weight))
    everyone = _cell(input_attention="modules", top_k=N)
    score = _scores(everyone, x[0], h[0])
    np.testing.assert_allclose(
        np.asarray(everyone._sparse_across_modules(score)), np.asarray(jax.nn.softmax(score))
    )


@pytest.mark.parametrize(
    "options",
    [dict(score_noise=-1.0), dict(initial_state="random"), dict(input_attention="softmax")],
    ids=str,
)
def test_bad_symmetry_breaking_settings_raise(options):
    with pytest.raises(ValueError, match="RIMCell"):
        _cell(**options)
