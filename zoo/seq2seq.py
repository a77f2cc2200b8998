"""The meta sequence-to-sequence learner of Lake 2019 (Section 3) and its standard seq2seq
baseline: a model that adapts in context, through a key-value memory of the support set.

Architecture (Section 4.1, with the reference code's details from REFERENCE_FACTS.md):

- Input encoder `f_ie`, shared by the queries and the support inputs: embedding -> dropout ->
  2-layer bidirectional LSTM (`hidden` units per direction, dropout between the layers); the
  two directions are *summed* to `hidden` dimensions, for the step outputs and for the final
  state (the top layer's h).
- Output encoder `f_oe` (its own weights), the same for the support outputs.
- Memory: `M = softmax(Q K^T / sqrt(hidden)) V` with the query's step outputs `Q`, the support
  inputs' final states `K` and the support outputs' final states `V`; no parameters. Context
  `C_t = tanh(W [q_t; M_t] + b)`.
- Decoder: the context at the query's last step (its EOS) initializes h and c of both layers
  of a 2-layer LSTM; embedding -> dropout -> LSTM; Luong attention (scaled dot product) of the
  top output over `C_1..T`; `logits = out(tanh(W_c [g_t; u_t]))`. Teacher forcing in
  training, greedy decoding at test.

Options (the lesions of Section 4.3): `memory=False` is the standard seq2seq baseline (the
context is the query encoding itself, no support set is read); `decoder_attention=False` drops
the decoder's attention (`logits = out(g_t)`). The support loss is the training loop's option.

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


def _run_cell(
    cell: eqx.nn.LSTMCell,
    xs: Float[Array, "time features"],
    mask: Bool[Array, " time"],
    state: tuple[Float[Array, " hidden"], Float[Array, " hidden"]],
) -> tuple[Float[Array, "time hidden"], tuple[Float[Array, " hidden"], Float[Array, " hidden"]]]:
    """An LSTM over `xs` (`lax.scan`); masked steps leave the state unchanged and output 0.

    The same arithmetic as stepping `cell`, arranged for speed: the input projection of every
    step is one matrix product before the loop, so the loop carries only `W_hh h`."""
    projected = xs @ cell.weight_ih.T
    if cell.bias is not None:
        projected = projected + cell.bias

    def step(carry, inputs):
        x, valid = inputs
        h, c = carry
        i, f, g, o = jnp.split(x + cell.weight_hh @ h, 4)
        c_new = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
        h_new = jax.nn.sigmoid(o) * jnp.tanh(c_new)
        carry = (jnp.where(valid, h_new, h), jnp.where(valid, c_new, c))
        return carry, jnp.where(valid, h_new, 0.0)

    state, outputs = jax.lax.scan(step, state, (projected, mask))
    return outputs, state


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
        self, tokens: Int[Array, " time"], *, key: PRNGKeyArray | None, inference: bool
    ) -> tuple[Float[Array, "time hidden"], Float[Array, " hidden"]]:
        """Step outputs `[time, hidden]` (0 at padding) and the final state `[hidden]`."""
        keys = jr.split(_key(key, inference), len(self.forward))
        mask = tokens != 0
        x = self.dropout(jax.vmap(self.embedding)(tokens), key=keys[0], inference=inference)
        # Zeros typed like the inputs (under `shard_map`, `lax.scan` needs its initial state
        # to vary over devices as the inputs do).
        zero = (jnp.zeros_like(x[0, : self.hidden]), jnp.zeros_like(x[0, : self.hidden]))
        h_fwd = h_bwd = zero[0]
        out_fwd = out_bwd = x
        for i, (f, b) in enumerate(zip(self.forward, self.backward, strict=True)):
            if i:
                x = self.dropout(x, key=keys[i], inference=inference)
            out_fwd, (h_fwd, _) = _run_cell(f, x, mask, zero)
            # Padding is at the end: reversed, it comes first and leaves the state at zero.
            out_bwd, (h_bwd, _) = _run_cell(b, x[::-1], mask[::-1], zero)
            out_bwd = out_bwd[::-1]
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
    ) -> tuple[Float[Array, "query in_len hidden"], Bool[Array, "query in_len"]]:
        """The stepwise context `C` of every query and its mask (the query's own tokens)."""
        k_query, k_sx, k_sy = jr.split(_key(key, inference), 3)

        def run(encoder, tokens, k):
            return jax.vmap(lambda t, k: encoder(t, key=k, inference=inference))(
                tokens, jr.split(k, tokens.shape[0])
            )

        q, _ = run(self.input_encoder, query_x, k_query)
        mask = query_x != 0
        if self.output_encoder is None or self.context is None:  # standard seq2seq
            return q, mask
        _, keys = run(self.input_encoder, support_x, k_sx)
        _, values = run(self.output_encoder, support_y, k_sy)
        memory = jax.vmap(lambda qs: attention(qs, keys, values))(q)
        context = jax.vmap(jax.vmap(self.context))(jnp.concatenate([q, memory], axis=-1))
        return jnp.tanh(context), mask

    def _decode_step(self, state, token, context, mask, key, inference):
        """One decoder step: new state and the logits of the next token."""
        x = self.dropout(self.decoder_embedding(token), key=key, inference=inference)
        new_state = []
        for cell, s in zip(self.decoder, state, strict=True):
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

    def _initial_state(self, context, mask):
        last = jnp.sum(mask) - 1  # the query's EOS
        c_last = context[last]
        return tuple((c_last, c_last) for _ in self.decoder)

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
        contexts, masks = self.encode(
            support_x, support_y, query_x, key=k_encode, inference=inference
        )
        inputs = jnp.concatenate(
            [jnp.full((query_y.shape[0], 1), self.sos, query_y.dtype), query_y[:, :-1]], axis=1
        )

        def one(context, mask, tokens, k):
            # Teacher forcing: every layer's inputs are known before its loop runs, and the
            # attention reads only the top layer's outputs, so each layer is one scan and the
            # attention and readout are batched over time (the arithmetic of `_decode_step`).
            x = jax.vmap(self.decoder_embedding)(tokens)
            x = jax.vmap(lambda e, k: self.dropout(e, key=k, inference=inference))(
                x, jr.split(k, tokens.shape[0])
            )
            always = jnp.ones(tokens.shape[0], bool)
            for cell, s in zip(self.decoder, self._initial_state(context, mask), strict=True):
                x, _ = _run_cell(cell, x, always, s)
            return jax.vmap(lambda g: self._readout(g, context, mask))(x)

        return jax.vmap(one)(contexts, masks, inputs, jr.split(k_decode, query_y.shape[0]))

    def generate(
        self,
        support_x: Int[Array, "support in_len"],
        support_y: Int[Array, "support out_len"],
        query_x: Int[Array, "query in_len"],
        length: int,
    ) -> Int[Array, "query length"]:
        """Greedy decoding of `length` tokens per query (cut at the first EOS by the reader);
        no dropout."""
        contexts, masks = self.encode(support_x, support_y, query_x, inference=True)

        def one(context, mask):
            def step(carry, _):
                state, token = carry
                state, logits = self._decode_step(state, token, context, mask, None, True)
                token = jnp.argmax(logits).astype(jnp.int32)
                return (state, token), token

            start = (self._initial_state(context, mask), jnp.array(self.sos, jnp.int32))
            return jax.lax.scan(step, start, None, length=length)[1]

        return jax.vmap(one)(contexts, masks)


def make(
    config: MetaSeq2SeqConfig, *, in_features: int, out_features: int, key: PRNGKeyArray
) -> MetaSeq2Seq:
    """Build a `MetaSeq2Seq` from its config (the factory of the `meta-seq2seq` plugin);
    `in_features` / `out_features` are the task's input and output vocabulary sizes."""
    return MetaSeq2Seq(
        in_features,
        out_features,
        hidden=config.hidden,
        layers=config.layers,
        dropout=config.dropout,
        memory=config.memory,
        decoder_attention=config.decoder_attention,
        support_loss=config.support_loss,
        key=key,
    )
