"""The meta sequence-to-sequence learner of Lake 2019 (Section 3) and its standard seq2seq
baseline: a model that adapts in context, through a key-value memory of the support set.

Architecture (Section 4.1, with the reference code's details from docs/authors-settings.md,
Lake 2019):

- Input encoder `f_ie`, shared by the queries and the support inputs: embedding -> dropout ->
  2-layer bidirectional LSTM (`hidden` units per direction, dropout between the layers); the
  two directions are *summed* to `hidden` dimensions, for the step outputs and for the final
  state (the top layer's h).
- Output encoder `f_oe` (its own weights), the same for the support outputs.
- Memory: `M = softmax(Q K^T / sqrt(hidden)) V` with the query's step outputs `Q`, the support
  inputs' final states `K` and the support outputs' final states `V`; no parameters. Context
  `C_t = tanh(W [q_t; M_t] + b)`.
- Decoder: the context at the query's last step (its EOS) initializes h and c of both layers
  of a 2-layer LSTM; embedding -> dropout -> LSTM, with dropout between its layers too (as
  PyTorch's `nn.LSTM(dropout=...)` of the reference: on every layer's output but the top
  one's); Luong attention (scaled dot product) of the top output over `C_1..T`;
  `logits = out(tanh(W_c [g_t; u_t]))`. Teacher forcing in training, greedy decoding at test.

Options (the lesions of Section 4.3): `memory=False` is the standard seq2seq baseline (the
context is the query encoding itself, no support set is read, and the decoder starts from the
encoder's final state, the top layer's h summed over both directions, as the reference's
`WrapperEncoderRNN`); `decoder_attention=False` drops the decoder's attention
(`logits = out(g_t)`). The support loss is the training loop's option.

Sequences are token arrays padded with 0 at the end; every sequence ends with an EOS; the
decoder's first input is `sos`.
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray

from ._base import AbstractInContextLearner
from .config import MetaSeq2SeqConfig
from .io import IOSpec


def _lstm_step(weight_hh, x, h, c):
    """One LSTM step on a batch: the gate activations `[i, f, g, o]` and the new `c` and `h`."""
    i, f, g, o = jnp.split(x + h @ weight_hh.T, 4, axis=-1)
    i, f, g, o = jax.nn.sigmoid(i), jax.nn.sigmoid(f), jnp.tanh(g), jax.nn.sigmoid(o)
    c_new = f * c + i * g
    return (i, f, g, o), c_new, o * jnp.tanh(c_new)


def _steps(mask: Bool[Array, "time batch"]) -> tuple[Int[Array, ""], Int[Array, ""]]:
    """The range `[lo, hi)` of the steps where any sequence is valid; outside it the loops
    have nothing to do (the state is carried unchanged and the outputs are 0)."""
    t = jnp.arange(mask.shape[0])
    running = jnp.any(mask, axis=1)
    lo = jnp.min(jnp.where(running, t, mask.shape[0]))
    hi = jnp.max(jnp.where(running, t + 1, 0))
    return lo, jnp.maximum(hi, lo)


def _row_sizes(batch: int) -> tuple[int, ...]:
    """The static row counts a step may run on: the quarters of the batch."""
    quarter = -(-batch // 4)
    return tuple(sorted({min(batch, k * quarter) for k in range(1, 5)}))


def _branch(mask_t: Bool[Array, " batch"], sizes: tuple[int, ...]) -> Int[Array, ""]:
    """Which of `sizes` a step runs on: the smallest that holds every valid row (0: none)."""
    rows = jnp.max(jnp.where(mask_t, jnp.arange(1, mask_t.shape[0] + 1), 0))
    return jnp.where(rows == 0, 0, 1 + jnp.searchsorted(jnp.asarray(sizes), rows))


def _lstm_forward(weight_hh, projected, mask, h, c):
    lo, hi = _steps(mask)
    sizes = _row_sizes(mask.shape[1])

    # Each branch computes one step on the first `s` rows and pads its results back to the
    # batch; the buffers are written outside the switch (a branch that took them would copy
    # them at every step).
    def rows(s):
        def step(x, valid, h, c):
            h_s, c_s, valid = h[:s], c[:s], valid[:s, None]
            (i, f, g, o), c_new, h_new = _lstm_step(weight_hh, x[:s], h_s, c_s)
            h = h.at[:s].set(jnp.where(valid, h_new, h_s))
            c = c.at[:s].set(jnp.where(valid, c_new, c_s))
            out = jnp.zeros_like(h).at[:s].set(jnp.where(valid, h_new, 0.0))
            return h, c, out, jnp.zeros_like(x).at[:s].set(jnp.concatenate([i, f, g, o], axis=-1))

        return step

    def skip(x, valid, h, c):
        return h, c, jnp.zeros_like(h), jnp.zeros_like(x)

    branches = [skip] + [rows(s) for s in sizes]

    def body(t, carry):
        h, c, outputs, h_prev, c_prev, gates = carry
        index = _branch(mask[t], sizes)
        h_new, c_new, out, gates_t = jax.lax.switch(index, branches, projected[t], mask[t], h, c)
        return (
            h_new,
            c_new,
            outputs.at[t].set(out),
            h_prev.at[t].set(h),
            c_prev.at[t].set(c),
            gates.at[t].set(gates_t),
        )

    zeros = jnp.zeros_like(projected[..., : h.shape[-1]])
    init = (h, c, zeros, zeros, zeros, jnp.zeros_like(projected))
    h, c, outputs, h_prev, c_prev, gates = jax.lax.fori_loop(lo, hi, body, init)
    return (outputs, h, c), (weight_hh, mask, lo, hi, h_prev, c_prev, gates)


@jax.custom_vjp
def _lstm(
    weight_hh: Float[Array, "gates hidden"],
    projected: Float[Array, "time batch gates"],
    mask: Bool[Array, "time batch"],
    h: Float[Array, "batch hidden"],
    c: Float[Array, "batch hidden"],
) -> tuple[
    Float[Array, "time batch hidden"], Float[Array, "batch hidden"], Float[Array, "batch hidden"]
]:
    """A masked LSTM loop over time, given every step's input projection (bias included).

    Masked steps leave the state unchanged and output 0. Nothing is computed for padding
    that can be skipped: the loop runs only over the steps where some sequence is valid, and
    each step only on the first quarter, half, three quarters or all of the batch, the
    fewest rows that hold every valid one (sort the batch longest first to make use of
    this). The reverse pass (`_lstm_backward`) is written by hand, with the same skipping:
    a loop that carries only `(dh, dc)` and records the gates' cotangents, and the weight's
    cotangent one matrix product after it (instead of one per step, as differentiating the
    loop would accumulate, with every branch's residuals kept)."""
    return _lstm_forward(weight_hh, projected, mask, h, c)[0]


def _lstm_backward(residuals, cotangents):
    weight_hh, mask, lo, hi, h_prev, c_prev, gates = residuals
    d_outputs, dh, dc = cotangents
    sizes = _row_sizes(mask.shape[1])

    def rows(s):
        def step(gates_t, c_prev_t, d_out, valid, dh, dc):
            dh_s, dc_s, valid = dh[:s], dc[:s], valid[:s, None]
            i, f, g, o = jnp.split(gates_t[:s], 4, axis=-1)
            c_prev_t = c_prev_t[:s]
            tanh_c = jnp.tanh(f * c_prev_t + i * g)
            dh_new = jnp.where(valid, dh_s + d_out[:s], 0.0)
            dc_new = jnp.where(valid, dc_s, 0.0) + dh_new * o * (1.0 - tanh_c**2)
            d = jnp.concatenate(
                [
                    dc_new * g * i * (1.0 - i),
                    dc_new * c_prev_t * f * (1.0 - f),
                    dc_new * i * (1.0 - g**2),
                    dh_new * tanh_c * o * (1.0 - o),
                ],
                axis=-1,
            )
            dh = dh.at[:s].set(d @ weight_hh + jnp.where(valid, 0.0, dh_s))
            dc = dc.at[:s].set(dc_new * f + jnp.where(valid, 0.0, dc_s))
            return dh, dc, jnp.zeros_like(gates_t).at[:s].set(d)

        return step

    def skip(gates_t, c_prev_t, d_out, valid, dh, dc):
        return dh, dc, jnp.zeros_like(gates_t)

    branches = [skip] + [rows(s) for s in sizes]

    def body(k, carry):
        dh, dc, d_gates = carry
        t = hi - 1 - k
        index = _branch(mask[t], sizes)
        dh, dc, d = jax.lax.switch(
            index, branches, gates[t], c_prev[t], d_outputs[t], mask[t], dh, dc
        )
        return dh, dc, d_gates.at[t].set(d)

    dh, dc, d_gates = jax.lax.fori_loop(0, hi - lo, body, (dh, dc, jnp.zeros_like(gates)))
    d_weight = jnp.einsum("tbg,tbh->gh", d_gates, h_prev)
    return d_weight, d_gates, None, dh, dc


_lstm.defvjp(_lstm_forward, _lstm_backward)


_CHUNK = 64


def _ragged_matmul_forward(x, weight, n):
    rows = x.shape[0] + (-x.shape[0]) % _CHUNK
    x_padded = jnp.pad(x, ((0, rows - x.shape[0]), (0, 0)))

    def body(k, y):
        chunk = jax.lax.dynamic_slice_in_dim(x_padded, k * _CHUNK, _CHUNK)
        return jax.lax.dynamic_update_slice_in_dim(y, chunk @ weight.T, k * _CHUNK, 0)

    # Zeros typed like the operands (under `shard_map` a loop's carry must vary over devices
    # as they do).
    y = jnp.zeros_like(x_padded[:, :1] * weight[:, 0])
    y = jax.lax.fori_loop(0, -(-n // _CHUNK), body, y)
    return y[: x.shape[0]], (x_padded, weight, n)


@jax.custom_vjp
def _ragged_matmul(
    x: Float[Array, "rows features"], weight: Float[Array, "out features"], n: Int[Array, ""]
) -> Float[Array, "rows out"]:
    """`x @ weight.T` for the first `n` rows of `x` (computed in chunks of 64 rows; the rows
    after the last chunk are 0), by hand in both directions: nothing is computed for the
    rows after `n`, whose results and cotangents the caller does not use."""
    return _ragged_matmul_forward(x, weight, n)[0]


def _ragged_matmul_backward(residuals, dy):
    x_padded, weight, n = residuals
    rows = dy.shape[0]
    dy = jnp.pad(dy, ((0, x_padded.shape[0] - rows), (0, 0)))

    def body(k, carry):
        dx, d_weight = carry
        chunk = jax.lax.dynamic_slice_in_dim(x_padded, k * _CHUNK, _CHUNK)
        d_chunk = jax.lax.dynamic_slice_in_dim(dy, k * _CHUNK, _CHUNK)
        dx = jax.lax.dynamic_update_slice_in_dim(dx, d_chunk @ weight, k * _CHUNK, 0)
        return dx, d_weight + d_chunk.T @ chunk

    init = (jnp.zeros_like(x_padded), jnp.zeros_like(weight))
    dx, d_weight = jax.lax.fori_loop(0, -(-n // _CHUNK), body, init)
    return dx[:rows], d_weight, None


_ragged_matmul.defvjp(_ragged_matmul_forward, _ragged_matmul_backward)


def lstm_layer(
    cell: eqx.nn.LSTMCell,
    xs: Float[Array, "batch time features"],
    mask: Bool[Array, "batch time"],
    state: tuple[Float[Array, "batch hidden"], Float[Array, "batch hidden"]],
) -> tuple[
    Float[Array, "batch time hidden"],
    tuple[Float[Array, "batch hidden"], Float[Array, "batch hidden"]],
]:
    """`cell` run over a batch of sequences; masked steps leave the state unchanged and
    output 0.

    The same arithmetic as stepping `cell`, arranged for speed: the input projection of the
    valid steps is computed before the loop, as matrix products over them alone (gathered
    first, `_ragged_matmul`); the batch is sorted longest first, so that the loop (`_lstm`)
    can leave out the rows and steps that are all padding; and its reverse pass is
    hand-written."""
    batch, time = mask.shape
    order = jnp.argsort(-jnp.sum(mask, axis=1), stable=True)
    inverse = jnp.argsort(order)
    mask = jnp.swapaxes(mask[order], 0, 1)  # time-major
    # The valid steps first, in a time-major flattening of the sorted batch.
    flat = jnp.swapaxes(xs[order], 0, 1).reshape(time * batch, -1)
    tokens = jnp.argsort(~mask.reshape(-1), stable=True)
    projected = _ragged_matmul(flat[tokens], cell.weight_ih, jnp.sum(mask))
    projected = projected[jnp.argsort(tokens)].reshape(time, batch, -1)
    if cell.bias is not None:
        projected = projected + cell.bias
    outputs, h, c = _lstm(cell.weight_hh, projected, mask, state[0][order], state[1][order])
    return jnp.swapaxes(outputs, 0, 1)[inverse], (h[inverse], c[inverse])


class BiLSTMEncoder(eqx.Module):
    """Embedding, then a stack of bidirectional LSTM layers; directions summed at the end."""

    embedding: eqx.nn.Embedding
    forward: tuple[eqx.nn.LSTMCell, ...]
    backward: tuple[eqx.nn.LSTMCell, ...]
    dropout: eqx.nn.Dropout
    hidden: int = eqx.field(static=True)

    def __init__(self, vocab: int, hidden: int, layers: int, dropout: float, *, key: PRNGKeyArray):
        keys = jr.split(key, 2 * layers + 1)
        self.embedding = eqx.nn.Embedding(vocab, hidden, key=keys[0])
        sizes = [hidden] + [2 * hidden] * (layers - 1)
        self.forward = tuple(
            eqx.nn.LSTMCell(n, hidden, key=k) for n, k in zip(sizes, keys[1::2], strict=True)
        )
        self.backward = tuple(
            eqx.nn.LSTMCell(n, hidden, key=k) for n, k in zip(sizes, keys[2::2], strict=True)
        )
        self.dropout = eqx.nn.Dropout(dropout)
        self.hidden = hidden

    def __call__(
        self, tokens: Int[Array, "batch time"], *, key: PRNGKeyArray | None, inference: bool
    ) -> tuple[Float[Array, "batch time hidden"], Float[Array, "batch hidden"]]:
        """Step outputs `[batch, time, hidden]` (0 at padding) and final states
        `[batch, hidden]` of a batch of sequences. Each sequence draws its own dropout masks
        from its own key, `jr.split(key, batch)`."""
        keys = jax.vmap(lambda k: jr.split(k, len(self.forward)))(
            jr.split(_key(key, inference), tokens.shape[0])
        )

        def dropout(x, layer):
            return jax.vmap(lambda x, k: self.dropout(x, key=k, inference=inference))(
                x, keys[:, layer]
            )

        mask = tokens != 0
        x = dropout(jax.vmap(jax.vmap(self.embedding))(tokens), 0)
        # Zeros typed like the inputs (under `shard_map`, a loop's initial state must vary
        # over devices as the inputs do).
        zero = jnp.zeros_like(x[:, 0, : self.hidden])
        h_fwd = h_bwd = zero
        out_fwd = out_bwd = x
        for i, (f, b) in enumerate(zip(self.forward, self.backward, strict=True)):
            if i:
                x = dropout(x, i)
            out_fwd, (h_fwd, _) = lstm_layer(f, x, mask, (zero, zero))
            # Padding is at the end: reversed, it comes first and leaves the state at zero.
            out_bwd, (h_bwd, _) = lstm_layer(b, x[:, ::-1], mask[:, ::-1], (zero, zero))
            out_bwd = out_bwd[:, ::-1]
            x = jnp.concatenate([out_fwd, out_bwd], axis=-1)
        return out_fwd + out_bwd, h_fwd + h_bwd


def _key(key: PRNGKeyArray | None, inference: bool) -> PRNGKeyArray:
    """The dropout key; none is needed (nor used) at inference."""
    if key is None:
        if not inference:
            raise ValueError("dropout needs a key: pass key=..., or inference=True")
        return jr.key(0)
    return key


def attention(
    queries: Float[Array, "q dim"],
    keys: Float[Array, "k dim"],
    values: Float[Array, "k dv"],
    mask: Bool[Array, " k"] | None = None,
) -> Float[Array, "q dv"]:
    """`softmax(Q K^T / sqrt(dim)) V`, with masked keys left out."""
    scores = queries @ keys.T / math.sqrt(queries.shape[-1])
    if mask is not None:
        scores = jnp.where(mask[None, :], scores, -jnp.inf)
    return jax.nn.softmax(scores, axis=-1) @ values


class MetaSeq2Seq(AbstractInContextLearner):
    """The meta seq2seq learner (Lake 2019, Section 3); see the module docstring.

    `__call__(support_x, support_y, query_x, query_y)` gives teacher-forced logits
    `[queries, out_len, out_vocab]` for the query targets `query_y`; `generate` decodes
    greedily. Every parameter is meta-learned: the model adapts in context (no fast leaves).
    With `support_loss`, training also scores the support items as queries.
    """

    input_encoder: BiLSTMEncoder
    output_encoder: BiLSTMEncoder | None
    context: eqx.nn.Linear | None
    decoder_embedding: eqx.nn.Embedding
    decoder: tuple[eqx.nn.LSTMCell, ...]
    combine: eqx.nn.Linear | None
    readout: eqx.nn.Linear
    dropout: eqx.nn.Dropout
    hidden: int = eqx.field(static=True)
    sos: int = eqx.field(static=True)
    support_loss: bool = eqx.field(static=True)

    def __init__(
        self,
        in_vocab: int,
        out_vocab: int,
        *,
        hidden: int = 200,
        layers: int = 2,
        dropout: float = 0.5,
        memory: bool = True,
        decoder_attention: bool = True,
        sos: int = 1,
        support_loss: bool = True,
        key: PRNGKeyArray,
    ):
        keys = jr.split(key, 6 + layers)
        self.input_encoder = BiLSTMEncoder(in_vocab, hidden, layers, dropout, key=keys[0])
        self.output_encoder = (
            BiLSTMEncoder(out_vocab, hidden, layers, dropout, key=keys[1]) if memory else None
        )
        self.context = eqx.nn.Linear(2 * hidden, hidden, key=keys[2]) if memory else None
        self.decoder_embedding = eqx.nn.Embedding(out_vocab, hidden, key=keys[3])
        self.decoder = tuple(eqx.nn.LSTMCell(hidden, hidden, key=k) for k in keys[6:])
        self.combine = eqx.nn.Linear(2 * hidden, hidden, key=keys[4]) if decoder_attention else None
        self.readout = eqx.nn.Linear(hidden, out_vocab, key=keys[5])
        self.dropout = eqx.nn.Dropout(dropout)
        self.hidden = hidden
        self.sos = sos
        self.support_loss = support_loss

    def training_queries(
        self,
        support_x: Int[Array, "support in_len"],
        support_y: Int[Array, "support out_len"],
        query_x: Int[Array, "query in_len"],
        query_y: Int[Array, "query out_len"],
    ) -> tuple[Int[Array, "n in_len"], Int[Array, "n out_len"]]:
        """The queries, plus the support items with `support_loss` (Lake 2019, Section 3)."""
        if not self.support_loss:
            return query_x, query_y
        return jnp.concatenate([query_x, support_x]), jnp.concatenate([query_y, support_y])

    def encode(
        self,
        support_x: Int[Array, "support in_len"],
        support_y: Int[Array, "support out_len"],
        query_x: Int[Array, "query in_len"],
        *,
        key: PRNGKeyArray | None = None,
        inference: bool = False,
    ) -> tuple[
        Float[Array, "query in_len hidden"],
        Bool[Array, "query in_len"],
        Float[Array, "query hidden"],
    ]:
        """The stepwise context `C` of every query, its mask (the query's own tokens), and the
        message that starts the decoder: the context at the query's last step (its EOS), or,
        for the standard seq2seq (no memory), the encoder's final state."""
        k_query, k_sx, k_sy = jr.split(_key(key, inference), 3)

        q, final = self.input_encoder(query_x, key=k_query, inference=inference)
        mask = query_x != 0
        if self.output_encoder is None or self.context is None:  # standard seq2seq
            return q, mask, final
        _, keys = self.input_encoder(support_x, key=k_sx, inference=inference)
        _, values = self.output_encoder(support_y, key=k_sy, inference=inference)
        memory = jax.vmap(lambda qs: attention(qs, keys, values))(q)
        context = jnp.tanh(jax.vmap(jax.vmap(self.context))(jnp.concatenate([q, memory], axis=-1)))
        last = jnp.sum(mask, axis=1) - 1  # each query's EOS
        return context, mask, context[jnp.arange(context.shape[0]), last]

    def _decode_step(self, state, token, context, mask, key, inference):
        """One decoder step: new state and the logits of the next token. Dropout on the
        embedding and between the layers, each with its own key of `jr.split(key, layers)`."""
        keys = jr.split(_key(key, inference), len(self.decoder))
        x = self.decoder_embedding(token)
        new_state = []
        for cell, s, k in zip(self.decoder, state, keys, strict=True):
            x = self.dropout(x, key=k, inference=inference)
            s = cell(x, s)
            new_state.append(s)
            x = s[0]
        return tuple(new_state), self._readout(x, context, mask)

    def _readout(
        self,
        g: Float[Array, " hidden"],
        context: Float[Array, "in_len hidden"],
        mask: Bool[Array, " in_len"],
    ) -> Float[Array, " out_vocab"]:
        """The logits from the top decoder output `g`: Luong attention over the context."""
        if self.combine is not None:
            u = attention(g[None], context, context, mask)[0]
            g = jnp.tanh(self.combine(jnp.concatenate([g, u])))
        return self.readout(g)

    def _initial_state(self, message: Float[Array, " hidden"]):
        """The decoder's first state: `message` as h and c of every layer."""
        return tuple((message, message) for _ in self.decoder)

    def __call__(
        self,
        support_x: Int[Array, "support in_len"],
        support_y: Int[Array, "support out_len"],
        query_x: Int[Array, "query in_len"],
        query_y: Int[Array, "query out_len"],
        *,
        key: PRNGKeyArray | None = None,
        inference: bool = False,
    ) -> Float[Array, "query out_len out_vocab"]:
        """Teacher-forced logits of the query targets (the decoder reads `sos`, then `y`)."""
        k_encode, k_decode = jr.split(_key(key, inference))
        contexts, masks, messages = self.encode(
            support_x, support_y, query_x, key=k_encode, inference=inference
        )
        inputs = jnp.concatenate(
            [jnp.full((query_y.shape[0], 1), self.sos, query_y.dtype), query_y[:, :-1]], axis=1
        )

        # Teacher forcing: every layer's inputs are known before its loop runs, and the
        # attention reads only the top layer's outputs, so each layer is one loop over the
        # batch of queries and the attention and readout are batched over time (the
        # arithmetic of `_decode_step`). Steps after a target's EOS are masked: their logits
        # are read out of zeros, and no loss or metric reads them. Dropout: the keys of
        # `_decode_step`, one per query, step and layer.
        n, steps, layers = query_y.shape[0], query_y.shape[1], len(self.decoder)
        keys = jax.vmap(lambda k: jax.vmap(lambda k: jr.split(k, layers))(jr.split(k, steps)))(
            jr.split(k_decode, n)
        )

        def drop(e, k):
            return self.dropout(e, key=k, inference=inference)

        def dropout(x, layer):
            return jax.vmap(jax.vmap(drop))(x, keys[:, :, layer])

        x = jax.vmap(jax.vmap(self.decoder_embedding))(inputs)
        states = jax.vmap(self._initial_state)(messages)
        for layer, (cell, state) in enumerate(zip(self.decoder, states, strict=True)):
            x, _ = lstm_layer(cell, dropout(x, layer), query_y != 0, state)
        return jax.vmap(
            lambda gs, context, mask: jax.vmap(lambda g: self._readout(g, context, mask))(gs)
        )(x, contexts, masks)

    def generate(
        self,
        support_x: Int[Array, "support in_len"],
        support_y: Int[Array, "support out_len"],
        query_x: Int[Array, "query in_len"],
        length: int,
    ) -> Int[Array, "query length"]:
        """Greedy decoding of `length` tokens per query (cut at the first EOS by the reader);
        no dropout."""
        contexts, masks, messages = self.encode(support_x, support_y, query_x, inference=True)

        def one(context, mask, message):
            def step(carry, _):
                state, token = carry
                state, logits = self._decode_step(state, token, context, mask, None, True)
                token = jnp.argmax(logits).astype(jnp.int32)
                return (state, token), token

            start = (self._initial_state(message), jnp.array(self.sos, jnp.int32))
            return jax.lax.scan(step, start, None, length=length)[1]

        return jax.vmap(one)(contexts, masks, messages)


def make(config: MetaSeq2SeqConfig, *, io: IOSpec, key: PRNGKeyArray) -> MetaSeq2Seq:
    """Build a `MetaSeq2Seq` from its config (the factory of the `meta-seq2seq` plugin), for a
    task of token sequences in and out: `io.x_vocab` input and `io.y_vocab` output tokens.

    **Raises:**

    `ValueError` if the task's inputs or targets are not tokens (`io.x_vocab` or `io.y_vocab`
    is `None`).
    """
    if io.x_vocab is None or io.y_vocab is None:
        raise ValueError(
            "meta-seq2seq reads and writes token sequences, but the task's inputs or targets "
            f"are not tokens (x_vocab={io.x_vocab}, y_vocab={io.y_vocab}): pair it with a "
            "sequence task such as 'scan'."
        )
    return MetaSeq2Seq(
        io.x_vocab,
        io.y_vocab,
        hidden=config.hidden,
        layers=config.layers,
        dropout=config.dropout,
        memory=config.memory,
        decoder_attention=config.decoder_attention,
        support_loss=config.support_loss,
        key=key,
    )
