"""The meta seq2seq learner (Lake 2019): its size at the paper's settings, padding that changes
nothing, a causal decoder, the lesions, and a toy episode memorised after a few steps."""

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import optax
import pytest

from zoo import AbstractInContextLearner, count_params
from zoo.seq2seq import BiLSTMEncoder, MetaSeq2Seq


def test_paper_size_has_the_references_parameter_count():
    # add-jump vocabularies: 13 words + PAD, EOS; 6 actions + PAD, SOS, EOS
    model = eqx.filter_eval_shape(lambda: MetaSeq2Seq(15, 9, key=jr.key(0)))
    assert 4_000_000 < count_params(model) < 4_040_000  # the reference: about 4.02 M


def test_padding_changes_no_encoding():
    encoder = BiLSTMEncoder(7, 8, 2, 0.5, key=jr.key(0))
    tokens = jnp.array([[3, 5, 4, 1]])
    encode = eqx.filter_jit(lambda e, t: e(t, key=None, inference=True))
    out, final = encode(encoder, tokens)
    out_padded, final_padded = encode(encoder, jnp.pad(tokens, ((0, 0), (0, 3))))
    assert jnp.allclose(final, final_padded, atol=1e-6)
    assert jnp.allclose(out, out_padded[:, :4], atol=1e-6) and jnp.all(out_padded[:, 4:] == 0)
    # the backward direction reads the whole sequence: the first step sees the last token
    out_other, _ = encode(encoder, jnp.array([[3, 5, 6, 1]]))
    assert not jnp.allclose(out[0, 0], out_other[0, 0])
    # a sequence's encoding does not depend on the others of its batch
    batch = jnp.array([[3, 5, 4, 1, 0, 0, 0], [6, 1, 0, 0, 0, 0, 0], [3, 3, 3, 5, 5, 4, 1]])
    out_batch, final_batch = encode(encoder, batch)
    assert jnp.allclose(out_batch[0], out_padded[0], atol=1e-6)
    assert jnp.allclose(final_batch[0], final_padded[0], atol=1e-6)


def _stepped(cell, xs, mask, start):
    """The reference: Equinox's `LSTMCell` stepped under `lax.scan`, differentiated by JAX."""

    def step(state, inputs):
        x, valid = inputs
        new = cell(x, state)
        state = jax.tree.map(lambda a, b: jnp.where(valid, a, b), new, state)
        return state, jnp.where(valid, new[0], 0.0)

    final, outputs = jax.lax.scan(step, start, (xs, mask))
    return outputs, final


@pytest.mark.parametrize("reverse", [False, True])
def test_lstm_layer_is_equinox_cell_stepped_and_so_are_its_gradients(reverse):
    # `lstm_layer` hoists the input projection, skips the steps where every sequence is
    # masked, and has a hand-written reverse pass: values and gradients must be the LSTM's.
    from zoo.seq2seq import lstm_layer

    cell = eqx.nn.LSTMCell(5, 7, key=jr.key(1))
    xs = jr.normal(jr.key(2), (3, 8, 5))
    lengths = jnp.array([5, 2, 0])  # the longest stops before the end; one is all padding
    mask = jnp.arange(8)[None, :] < lengths[:, None]
    if reverse:  # padding first, as the encoders' backward direction reads it
        xs, mask = xs[:, ::-1], mask[:, ::-1]
    start = (jr.normal(jr.key(3), (3, 7)), jr.normal(jr.key(4), (3, 7)))
    weights = jr.normal(jr.key(5), (3, 8, 7))

    def loss(inputs, layer):
        cell, xs, start = inputs
        outputs, (h, c) = layer(cell, xs, mask, start)
        return jnp.sum(outputs * weights) + jnp.sum(jnp.sin(h)) + jnp.sum(c**2)

    def reference(cell, xs, mask, start):
        return jax.vmap(_stepped, in_axes=(None, 0, 0, 0))(cell, xs, mask, start)

    outputs, final = jax.jit(lstm_layer)(cell, xs, mask, start)
    expected, expected_final = reference(cell, xs, mask, start)
    assert jnp.allclose(outputs, expected, atol=1e-5)
    assert all(jnp.allclose(a, b, atol=1e-5) for a, b in zip(final, expected_final, strict=True))
    assert jnp.allclose(final[0][2], start[0][2]) and jnp.all(outputs[2] == 0)

    grad = eqx.filter_jit(eqx.filter_grad(loss))
    got = grad((cell, xs, start), lstm_layer)
    want = grad((cell, xs, start), reference)
    # every gradient: the cell's weights and bias, the inputs, and the initial state
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        assert jnp.allclose(a, b, atol=1e-4), float(jnp.max(jnp.abs(a - b)))


@pytest.mark.parametrize("dropout", [False, True])
def test_teacher_forcing_is_the_decoder_stepped(dropout):
    # The teacher-forced path runs each decoder layer as one scan and batches the attention
    # over time; it must give the logits of stepping `_decode_step` (what `generate` runs),
    # with the same dropout masks (on the embedding and between the layers).
    sx, sy, qx, qy = _toy()
    model = MetaSeq2Seq(6, 5, hidden=8, key=jr.key(0))
    key = jr.key(5) if dropout else None
    inference = key is None
    fast = model(sx, sy, qx, qy, key=key, inference=inference)
    k_encode, k_decode = jr.split(key if key is not None else jr.key(0))
    contexts, masks, messages = model.encode(sx, sy, qx, key=k_encode, inference=inference)
    inputs = jnp.concatenate([jnp.full((2, 1), model.sos), qy[:, :-1]], axis=1)
    for n, k in enumerate(jr.split(k_decode, 2)):
        state = model._initial_state(messages[n])
        for t, step_key in enumerate(jr.split(k, inputs.shape[1])):
            state, logits = model._decode_step(
                state, inputs[n, t], contexts[n], masks[n], step_key, inference
            )
            if qy[n, t]:  # up to the target's EOS; no loss reads the logits after it
                assert jnp.allclose(fast[n, t], logits, atol=1e-5)


def test_the_decoder_drops_out_between_its_layers():
    # The reference's decoder is `nn.LSTM(num_layers=2, dropout=0.5)`: dropout on the first
    # layer's output before the second. With the embedding at zero (its dropout then does
    # nothing), a training step's logits still depend on the dropout key; with one layer
    # they do not.
    @eqx.filter_jit
    def logits(model, keys):
        model = eqx.tree_at(
            lambda m: m.decoder_embedding.weight,
            model,
            jnp.zeros_like(model.decoder_embedding.weight),
        )
        context, message = jr.normal(jr.key(1), (3, 16)), jr.normal(jr.key(2), (16,))
        state, mask = model._initial_state(message), jnp.ones(3, bool)
        return jax.vmap(lambda k: model._decode_step(state, 3, context, mask, k, False)[1])(keys)

    keys = jr.split(jr.key(3))
    two = logits(MetaSeq2Seq(6, 5, hidden=16, key=jr.key(0)), keys)
    one = logits(MetaSeq2Seq(6, 5, hidden=16, layers=1, key=jr.key(0)), keys)
    assert not jnp.allclose(two[0], two[1]) and jnp.allclose(one[0], one[1])


def test_the_standard_seq2seq_decoder_starts_from_the_encoders_final_state():
    # The reference's `WrapperEncoderRNN` hands the decoder the encoder's final state (the top
    # layer's h, both directions summed), not its output at the last step; the meta seq2seq
    # learner's decoder starts from the context at the query's EOS.
    @eqx.filter_jit
    def probe(model, sx, sy, qx, qy):
        outputs, final = model.input_encoder(qx, key=None, inference=True)
        contexts, masks, messages = model.encode(sx, sy, qx, inference=True)
        logits = model(sx, sy, qx, qy, inference=True)

        def first(start, context, mask):  # the first step's logits from `start`
            state = model._initial_state(start)
            return model._decode_step(state, model.sos, context, mask, None, True)[1]

        stepped = jax.vmap(first)(final, outputs, masks)
        return outputs, final, contexts, messages, logits[:, 0], stepped

    sx, sy, qx, qy = _toy()
    sx, qx = (jnp.pad(a, ((0, 0), (0, 2))) for a in (sx, qx))  # padding changes nothing
    last = jnp.sum(qx != 0, axis=1) - 1
    baseline = MetaSeq2Seq(6, 5, hidden=8, memory=False, key=jr.key(0))
    outputs, final, contexts, messages, first, stepped = probe(baseline, sx, sy, qx, qy)
    assert not jnp.allclose(final, outputs[jnp.arange(2), last])  # the backward direction's
    assert jnp.allclose(messages, final) and jnp.allclose(contexts, outputs)
    assert jnp.allclose(first, stepped, atol=1e-5)  # the decoder's first step, from `final`
    model = MetaSeq2Seq(6, 5, hidden=8, key=jr.key(0))
    contexts, _, messages = eqx.filter_jit(lambda m: m.encode(sx, sy, qx, inference=True))(model)
    assert jnp.allclose(messages, contexts[jnp.arange(2), last])


def _toy():
    support_x = jnp.array([[3, 1, 0], [4, 1, 0]])
    support_y = jnp.array([[3, 2, 0, 0], [4, 2, 0, 0]])
    query_x = jnp.array([[3, 4, 1], [4, 3, 1]])
    query_y = jnp.array([[3, 4, 2, 0], [4, 3, 2, 0]])
    return support_x, support_y, query_x, query_y


@eqx.filter_jit
def _logits(model, sx, sy, qx, qy, key=None):
    return model(sx, sy, qx, qy, key=key, inference=key is None)


def test_the_decoder_is_causal_and_the_lesions_act():
    sx, sy, qx, qy = _toy()
    model = MetaSeq2Seq(6, 5, hidden=8, key=jr.key(0))
    logits = _logits(model, sx, sy, qx, qy)
    changed = _logits(model, sx, sy, qx, qy.at[:, 1].set(2))
    assert jnp.allclose(logits[:, :2], changed[:, :2]) and not jnp.allclose(logits, changed)
    other_support = _logits(model, sx, sy.at[0, 0].set(4), qx, qy)
    assert not jnp.allclose(logits, other_support)  # it reads its memory
    baseline = MetaSeq2Seq(6, 5, hidden=8, memory=False, key=jr.key(0))
    assert baseline.output_encoder is None and baseline.context is None
    assert jnp.allclose(
        _logits(baseline, sx, sy, qx, qy), _logits(baseline, sx, sy.at[0, 0].set(4), qx, qy)
    )
    no_attention = MetaSeq2Seq(6, 5, hidden=8, decoder_attention=False, key=jr.key(0))
    assert no_attention.combine is None
    assert _logits(no_attention, sx, sy, qx, qy).shape == logits.shape
    with pytest.raises(ValueError, match="dropout needs a key"):
        eqx.filter_eval_shape(lambda: model(sx, sy, qx, qy))
    # dropout: different keys, different logits; the same key, the same logits
    a, b = _logits(model, sx, sy, qx, qy, jr.key(1)), _logits(model, sx, sy, qx, qy, jr.key(2))
    assert not jnp.allclose(a, b)
    assert jnp.array_equal(a, _logits(model, sx, sy, qx, qy, jr.key(1)))


def test_a_toy_episode_is_memorised_after_a_few_steps():
    sx, sy, qx, qy = _toy()
    model = MetaSeq2Seq(6, 5, hidden=32, layers=1, dropout=0.0, key=jr.key(0))
    optimizer = optax.adam(1e-2)
    state = optimizer.init(eqx.filter(model, eqx.is_array))

    def loss(model):
        logits = model(sx, sy, qx, qy, inference=True)
        logp = jax.nn.log_softmax(logits)
        nll = -jnp.take_along_axis(logp, qy[..., None], axis=-1)[..., 0]
        return jnp.sum(nll * (qy != 0)) / jnp.sum(qy != 0)

    @eqx.filter_jit
    def step(model, state):
        value, grads = eqx.filter_value_and_grad(loss)(model)
        updates, state = optimizer.update(grads, state)
        return eqx.apply_updates(model, updates), state, value

    model, state, first = step(model, state)
    for _ in range(60):
        model, state, value = step(model, state)
    assert value < 0.05 * first
    decoded = model.generate(sx, sy, qx, length=3)
    assert jnp.array_equal(decoded, qy[:, :3])


def test_meta_seq2seq_trains_in_context_through_the_engine(tmp_path):
    from runs import InContextConfig, load, train
    from runs.config import EvalConfig, OuterConfig, RunConfig, TrainConfig
    from runs.run import read_metrics
    from tasks.config import MutualExclusivityConfig
    from zoo.config import MetaSeq2SeqConfig

    config = TrainConfig(
        task=MutualExclusivityConfig(num_query=8),
        model=MetaSeq2SeqConfig(hidden=16, layers=1, dropout=0.1),
        task_name="mutual-exclusivity",
        model_name="meta-seq2seq",
        algorithm=InContextConfig(
            outer=OuterConfig(
                lr=1e-2, weight_decay=0.0, clip=50.0, meta_batch=4, schedule="piecewise"
            )
        ),
        eval=EvalConfig(every=0, tasks=8, batch=8),
        run=RunConfig(steps=40, steps_per_call=20, checkpoint_every=20),
    )
    train(config, tmp_path / "run", progress=False)
    rows = [r for r in read_metrics(tmp_path / "run") if r["pool"] == "train"]
    assert rows[-1]["loss"] < 0.95 * rows[0]["loss"]  # (1.67 -> 1.51 when written)
    assert {"test"} <= {r["pool"] for r in read_metrics(tmp_path / "run")}
    loaded = load(tmp_path / "run")
    assert isinstance(loaded.model, MetaSeq2Seq) and loaded.model.support_loss


class _Echo(AbstractInContextLearner):
    """Generates its query inputs back: exact match is known for any targets."""

    def __call__(self, support_x, support_y, query_x, query_y, *, key=None, inference=False):
        return jax.nn.one_hot(query_x, 8)

    def generate(self, support_x, support_y, query_x, length):
        return jnp.pad(query_x, ((0, 0), (0, length - query_x.shape[1])))

    def training_queries(self, support_x, support_y, query_x, query_y):
        return query_x, query_y


@pytest.mark.parametrize("batch", [2, 3, 16])
def test_exact_match_scores_whole_sequences_up_to_eos(batch):
    from runs.algorithms.in_context import exact_match

    qx = jnp.array([[3, 4, 2, 0], [5, 2, 0, 0], [3, 3, 2, 0], [6, 2, 0, 0], [7, 7, 7, 2]])
    qy = jnp.array(
        [
            [3, 4, 2, 0, 0],  # equal
            [5, 2, 0, 0, 0],  # equal
            [3, 2, 0, 0, 0],  # EOS expected earlier: wrong
            [6, 5, 2, 0, 0],  # longer target: wrong
            [7, 7, 7, 2, 0],  # equal
        ]
    )
    support = jnp.zeros((1, 4), jnp.int32)
    assert float(exact_match(_Echo(), support, support, qx, qy, batch)) == pytest.approx(3 / 5)
