"""The actor-critic agents (`zoo.agents`): shapes, batching, the image encoder, the fast/slow
labels of Meta-RIMs (B4 of `docs/specs/meta-rims.md`) and the registered plugins, at tiny
sizes."""

import pathlib
import tomllib

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
import numpy as np
import pytest

from plugins import builtin
from zoo import AbstractActorCritic, IOSpec
from zoo.agents import (
    ActorCritic,
    ImageEncoder,
    InstructionEncoder,
    _conv,
    make_lstm,
    make_rims,
)
from zoo.config import LSTMAgentConfig, RIMsAgentConfig
from zoo.rims import RIMCell

LSTM = LSTMAgentConfig(memory=8, image_dim=8, instr_dim=6, head_hidden=5)
RIMS = RIMsAgentConfig(
    num_modules=4,
    top_k=2,
    hidden=4,
    key_size=8,
    comm_heads=2,
    comm_key_size=3,
    image_dim=8,
    instr_dim=6,
    head_hidden=5,
)
ACTIONS, MISSION_LEN, VOCAB = 7, 5, 11
WITH_MISSION = IOSpec.environment(
    view=(7, 7, 3), actions=ACTIONS, mission_len=MISSION_LEN, mission_vocab=VOCAB
)
WITHOUT_MISSION = IOSpec.environment(view=(7, 7, 3), actions=ACTIONS)


def _agent(kind: str, io: IOSpec = WITH_MISSION, **options) -> ActorCritic:
    if kind == "lstm":
        return make_lstm(LSTMAgentConfig(**{**vars(LSTM), **options}), io=io, key=jr.key(0))
    return make_rims(RIMsAgentConfig(**{**vars(RIMS), **options}), io=io, key=jr.key(0))


def _observations(batch: int, mission: bool, seed: int = 0) -> dict:
    k_image, k_mission = jr.split(jr.key(seed))
    obs = {
        "image": jr.randint(k_image, (batch, 7, 7, 3), 0, 11).astype(jnp.uint8),
        "direction": jnp.zeros((batch,), jnp.int32),
    }
    if mission:
        obs["mission"] = jr.randint(k_mission, (batch, MISSION_LEN), 0, VOCAB)
    return obs


@pytest.mark.parametrize(
    ("kind", "mission"),
    [
        pytest.param("lstm", True, id="lstm-mission", marks=pytest.mark.slow),
        pytest.param("lstm", False, id="lstm-no-mission"),
        pytest.param("rims", True, id="rims-mission"),
        pytest.param("rims", False, id="rims-no-mission", marks=pytest.mark.slow),
    ],
)
def test_acts_on_a_batch(kind: str, mission: bool):
    agent = _agent(kind, WITH_MISSION if mission else WITHOUT_MISSION)
    assert isinstance(agent, AbstractActorCritic)
    assert (agent.instruction is None) != mission
    batch = 3
    obs = _observations(batch, mission)
    memory = jtu.tree_map(lambda m: jnp.stack([m] * batch), agent.initial_memory())

    @eqx.filter_jit
    def act(agent, obs, memory, keys):
        return jax.vmap(lambda o, m, k: agent(o, m, key=k))(obs, memory, keys)

    logits, value, memory2 = act(agent, obs, memory, jr.split(jr.key(1), batch))
    assert logits.shape == (batch, ACTIONS) and value.shape == (batch,)
    assert jtu.tree_structure(memory2) == jtu.tree_structure(memory)
    shape = (batch, 8) if kind == "lstm" else (batch, 4, 4)
    assert all(m.shape == shape for m in jtu.tree_leaves(memory2))
    assert all(np.all(np.isfinite(np.asarray(x))) for x in (logits, value, *memory2))
    # The memory carries information: a second step from it differs from a fresh one.
    logits3, _, _ = act(agent, obs, memory2, jr.split(jr.key(1), batch))
    assert not np.allclose(logits3, logits)
    if mission:  # the instruction is read
        other = {**obs, "mission": (obs["mission"] + 1) % VOCAB}
        logits4, _, _ = act(agent, other, memory, jr.split(jr.key(1), batch))
        assert not np.allclose(logits4, logits)
    else:  # nothing asks for a mission
        assert "mission" not in obs


def test_image_encoder_is_cnn1():
    """The patch-product convolutions equal Equinox's convolutions (channels first), and a
    7x7 view becomes one vector of `image_dim`."""
    encoder = ImageEncoder(3, (16, 32, 8), key=jr.key(0))
    image = jr.randint(jr.key(1), (7, 7, 3), 0, 11).astype(jnp.float32)
    x = jnp.moveaxis(image, -1, 0)
    x = jax.nn.relu(encoder.conv1(x))
    np.testing.assert_allclose(
        jnp.moveaxis(x, 0, -1), _conv(encoder.conv1, image).clip(0), rtol=1e-5, atol=1e-5
    )
    x = eqx.nn.MaxPool2d(2, stride=2)(x)
    x = jax.nn.relu(encoder.conv3(jax.nn.relu(encoder.conv2(x))))
    assert x.shape == (8, 1, 1)
    np.testing.assert_allclose(encoder(image), x.reshape(-1), rtol=1e-5, atol=1e-5)


def test_instruction_encoder_is_a_gru_over_the_mission_words():
    """The looked-up input projections and the skipped first recurrent product give what
    Equinox's GRU cell gives, stepped over the embedded words; the padding changes nothing."""
    encoder = InstructionEncoder(VOCAB, 6, key=jr.key(0))
    tokens = jnp.array([3, 1, 4, 0, 0])
    h = jnp.zeros(6)
    for token in tokens[:3]:
        h = encoder.gru(encoder.embedding(token), h)
    np.testing.assert_allclose(encoder(tokens), h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(encoder(tokens[:3]), h, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("distinct", [3, 9, 40, 300], ids=["8-rows", "32-rows", "fallback", "off"])
def test_a_batch_of_missions_encodes_each_distinct_one_once(distinct: int):
    """`batch` equals encoding every row, in value and gradient: with 3 or 9 distinct missions
    among 300 rows (the 8- and 32-row buffers), with 40 (more than the largest buffer allowed:
    every row), and with deduplication off."""
    encoder = InstructionEncoder(VOCAB, 6, distinct=32 if distinct != 300 else 0, key=jr.key(0))
    pool = jr.randint(jr.key(1), (min(distinct, 300), MISSION_LEN), 1, VOCAB)
    tokens = pool[jr.randint(jr.key(2), (300,), 0, pool.shape[0])]
    weights = jr.normal(jr.key(3), (300, 6))

    def loss(encoder, batched):
        out = encoder.batch(tokens) if batched else jax.vmap(encoder)(tokens)
        return jnp.sum(weights * out), out

    (_, every), grads = eqx.filter_value_and_grad(loss, has_aux=True)(encoder, False)
    (_, once), grads_once = eqx.filter_value_and_grad(loss, has_aux=True)(encoder, True)
    np.testing.assert_allclose(once, every, rtol=1e-5, atol=1e-6)
    for a, b in zip(jtu.tree_leaves(grads_once), jtu.tree_leaves(grads), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_step_of_encode_is_the_agent():
    """`step(encode(obs))` and `encode_batch` give what the agent gives frame by frame."""
    agent = _agent("lstm")
    obs = _observations(6, mission=True)
    memory = jax.vmap(lambda _: agent.initial_memory())(jnp.arange(6))
    whole = jax.vmap(agent)(obs, memory)
    features = agent.encode_batch(obs)
    np.testing.assert_allclose(features, jax.vmap(agent.encode)(obs), rtol=1e-6, atol=1e-6)
    parts = jax.vmap(agent.step)(features, memory)
    for a, b in zip(jtu.tree_leaves(parts), jtu.tree_leaves(whole), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def _step_by_step(agent, features, memory, mask, keys):
    """The recurrence frame by frame, as an algorithm stepped it before `unroll`."""

    def body(memory, inputs):
        f, m, k = inputs
        memory = jax.vmap(agent.reset_memory)(memory, m)
        logits, value, memory = jax.vmap(lambda f, m, k: agent.step(f, m, key=k))(f, memory, k)
        return memory, (logits, value)

    memory, (logits, value) = jax.lax.scan(body, memory, (features, mask, keys))
    return logits, value, memory


@pytest.mark.parametrize(
    ("kind", "options"),
    [
        ("lstm", {}),
        ("rims", {}),
        ("rims", {"initial_state": "learned", "score_noise": 0.5, "input_attention": "modules"}),
    ],
    ids=["lstm", "rims", "rims-options"],
)
def test_unroll_is_the_agent_stepped_frame_by_frame(kind: str, options: dict):
    """`unroll` (the RIMs agent's own, which projects the inputs and draws every step's
    dropout and noise before the recurrence, and the default one) gives the logits, values,
    last memory and gradient of stepping the agent frame by frame with the same keys and
    episode resets."""
    agent = _agent(kind, io=WITHOUT_MISSION, **options)
    frames, envs = 4, 3
    obs = _observations(frames * envs, mission=False)
    features = agent.encode_batch(obs).reshape(frames, envs, -1)
    memory = jax.vmap(lambda _: agent.initial_memory())(jnp.arange(envs))
    mask = jnp.ones((frames, envs)).at[2, 1].set(0.0)  # an episode starts mid-sequence
    keys = jr.split(jr.key(3), (frames, envs))

    def loss(agent, unroll):
        logits, value, last = unroll(agent, features, memory, mask, keys)
        return jnp.sum(jax.nn.log_softmax(logits)[..., 0]) + jnp.sum(value**2), (logits, last)

    def default(agent, *args):
        return AbstractActorCritic.unroll(agent, *args)

    grad = eqx.filter_value_and_grad(loss, has_aux=True)
    (ref, ref_aux), ref_grad = grad(agent, _step_by_step)
    for unroll in (type(agent).unroll, default):
        (value, aux), g = grad(agent, unroll)
        np.testing.assert_allclose(value, ref, rtol=1e-5)
        for a, b in zip(
            jtu.tree_leaves((aux, g)), jtu.tree_leaves((ref_aux, ref_grad)), strict=True
        ):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    # The keys matter (dropout, noise) where the agent has randomness: unroll reads them.
    if kind == "rims":
        other = agent.unroll(features, memory, mask, jr.split(jr.key(4), (frames, envs)))
        assert not np.allclose(other[0], ref_aux[0])
        no_keys = agent.unroll(features, memory, mask)
        np.testing.assert_allclose(
            no_keys[0], _step_by_step(agent, features, memory, mask, None)[0], rtol=1e-5, atol=1e-6
        )


def test_labels_of_meta_rims():
    agent = _agent("rims")
    agent.fast_filter()  # the labels are checked: the model's structure, known labels
    labels = agent.labels()
    assert jtu.tree_structure(labels) == jtu.tree_structure(agent)
    assert isinstance(agent.core, RIMCell) and agent.instruction is not None
    fast = [
        labels.core.cell_weight,
        labels.core.cell_bias,
        labels.actor.hidden.weight,
        labels.actor.out.bias,
    ]
    slow = [
        labels.core.input_query.weight,
        labels.core.input_key_value,
        labels.core.comm_qkv.weight,
        labels.core.comm_output.weight,
        labels.core.comm_output.bias,
        labels.critic.hidden.weight,
        labels.critic.out.bias,
        labels.image.conv1.weight,
        labels.instruction.embedding.weight,
        labels.instruction.gru.weight_hh,
    ]
    assert fast == ["fast"] * len(fast) and slow == ["slow"] * len(slow)
    assert set(jtu.tree_leaves(labels)) == {"fast", "slow"}

    flip = _agent("rims", split="flip").labels()
    assert [flip.core.cell_weight, flip.core.cell_bias] == ["slow", "slow"]
    assert flip.core.input_query.weight == flip.core.comm_qkv.weight == "fast"
    assert flip.core.input_key_value == flip.core.comm_output.weight == "fast"
    assert flip.actor.out.weight == "fast" and flip.critic.out.weight == "slow"

    attention = _agent("rims", split="attention").labels()  # the slowLR ablation's split
    assert attention.core.input_query.weight == attention.core.comm_qkv.weight == "slow"
    assert attention.core.input_key_value == attention.core.comm_output.weight == "slow"
    assert [attention.core.cell_weight, attention.critic.out.weight] == ["fast", "fast"]
    assert attention.image.conv1.weight == attention.instruction.gru.weight_hh == "fast"

    encoders = _agent("rims", encoders="fast").labels()
    assert encoders.image.conv3.bias == encoders.instruction.gru.bias == "fast"
    assert encoders.core.input_query.weight == encoders.critic.hidden.weight == "slow"


def test_labels_of_meta_lstm():
    agent = _agent("lstm", WITHOUT_MISSION)
    labels = agent.labels()
    assert jtu.tree_structure(labels) == jtu.tree_structure(agent)
    assert labels.core.weight_ih == labels.core.weight_hh == labels.core.bias == "fast"
    assert labels.actor.hidden.weight == "fast"
    assert labels.critic.hidden.weight == labels.image.conv2.weight == "slow"
    fast, _ = agent.partition()
    assert eqx.is_array(fast.core.weight_ih) and fast.critic.hidden.weight is None


def test_bad_settings_raise():
    with pytest.raises(ValueError, match="top_k"):
        RIMsAgentConfig(top_k=6)
    with pytest.raises(ValueError, match="top_k"):
        RIMsAgentConfig(top_k=0)
    agent = _agent("lstm", WITHOUT_MISSION)
    with pytest.raises(ValueError, match="RIMs core"):
        ActorCritic(agent.image, None, agent.core, agent.actor, agent.critic, split="flip")
    with pytest.raises(ValueError, match="no actions"):
        make_rims(RIMS, io=IOSpec.vectors(4, 2), key=jr.key(0))
    with pytest.raises(ValueError, match="7x7"):
        make_lstm(LSTM, io=IOSpec.environment(view=(5, 5, 3), actions=3), key=jr.key(0))


def test_registered():
    entry_points = tomllib.loads(
        (pathlib.Path(__file__).parents[1] / "pyproject.toml").read_text()
    )["project"]["entry-points"]["zoo.models"]
    assert entry_points["lstm-agent"] == "plugins.builtin:lstm_agent"
    assert entry_points["rims-agent"] == "plugins.builtin:rims_agent"
    assert builtin.lstm_agent.load() is make_lstm and builtin.lstm_agent.config is LSTMAgentConfig
    assert builtin.rims_agent.load() is make_rims and builtin.rims_agent.config is RIMsAgentConfig


def test_the_rims_options_reach_the_cell_and_a_learned_start_resets_the_memory():
    agent = _agent(
        "rims",
        initial_state="learned",
        query_bias=True,
        score_noise=0.25,
        input_attention="modules",
    )
    core = agent.core
    assert isinstance(core, RIMCell)
    assert core.learned_initial_state and core.query_bias is not None
    assert core.score_noise == 0.25 and core.input_attention == "modules"
    h0, c0 = agent.initial_memory()
    memory = (jnp.ones_like(h0), jnp.ones_like(c0))
    kept = agent.reset_memory(memory, jnp.array(1.0))
    started = agent.reset_memory(memory, jnp.array(0.0))
    assert np.array_equal(np.asarray(kept[0]), np.ones(h0.shape))
    assert np.array_equal(np.asarray(started[0]), np.asarray(h0))
    assert np.array_equal(np.asarray(started[1]), np.asarray(c0))
    # Without a learned start, the reset is `memory * mask`, as before.
    plain = _agent("rims")
    zeroed = plain.reset_memory(memory, jnp.array(0.0))
    assert not np.any(np.asarray(zeroed[0]))
    with pytest.raises(ValueError, match="score_noise"):
        RIMsAgentConfig(score_noise=-0.1)


def test_encoders_both_are_shared_by_the_fast_and_the_slow_loop():
    from runs.rl import trainable_leaves

    agent = _agent("rims", encoders="both")
    shared = agent.shared_leaves()
    assert shared.image.conv1.weight and shared.instruction.gru.weight_hh
    assert not shared.core.cell_weight and not shared.critic.hidden.weight
    fast, slow = trainable_leaves(agent, ("fast",)), trainable_leaves(agent, ("slow",))
    assert fast.image.conv1.weight and slow.image.conv1.weight
    assert fast.core.cell_weight and not slow.core.cell_weight
    assert slow.critic.hidden.weight and not fast.critic.hidden.weight
    assert not any(jax.tree.leaves(_agent("rims").shared_leaves()))
