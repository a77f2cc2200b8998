"""The actor-critic agents of Meta-RIMs (Madan et al. 2021): BabyAI's agent (the `mila-iqia/babyai`
code base Meta-RIMs builds on) with either an LSTM memory ("vanilla") or Recurrent Independent
Mechanisms ("modular", and the agent of Meta-RIMs' two-timescale training). Build notes:
`docs/specs/meta-rims.md`, B3 and B4.

For one environment, one step:

- image: BabyAI-1.0's `cnn1` encoder of the egocentric symbolic view (`7 x 7 x 3` integers,
  cast to float without normalization): Conv(3 -> 16, 2x2) -> ReLU -> MaxPool(2x2, stride 2)
  -> Conv(16 -> 32, 2x2) -> ReLU -> Conv(32 -> image_dim, 2x2) -> ReLU, flattened;
- instruction (only where the environment has a mission): Embedding(vocab, instr_dim) ->
  GRU(instr_dim), the final hidden state of the padded token array (no packing: the padding
  tokens are read too, as BabyAI's unpacked GRU does);
- core: `x = [image; instruction]` into an `LSTMCell(x -> memory)` or a `RIMCell` (N = 5,
  k = 3, h = 32: memory `[N, h]`, read out flattened);
- heads: actor `Linear(-> 64) -> tanh -> Linear(-> actions)` (policy logits), critic
  `Linear(-> 64) -> tanh -> Linear(-> 1)`.

Every linear layer outside the RIM's grouped projections starts as BabyAI initializes its
`nn.Linear`s (unit-norm rows of `N(0, 1)`, biases 0); the convolutions, the embedding and the
recurrent cells keep PyTorch's defaults (`U(+-1/sqrt(fan_in))`, `N(0, 1)`, `U(+-1/sqrt(hidden))`),
PyTorch's two recurrent biases drawn as one, the sum of two uniform draws.

Readings chosen: the agent reads no `"direction"` (BabyAI's `cnn1` agent does not); the
mission is padded to the environment's fixed `mission_len` (BabyAI pads to the longest
instruction of the batch); with a view larger than 7x7 the convolution's output is flattened
height, width, channels (PyTorch: channels first), a fixed permutation of the features.

Fast and slow leaves (`labels()`, B4): the actor head is fast and the critic head slow; with
the RIM core, split `"meta"` makes the module cells fast and both attentions slow, split
`"flip"` the reverse (Meta-RIMs' "metaFlip" ablation); with the LSTM core ("meta-LSTM") the
whole LSTM is fast. The encoders are slow, fast with `encoders="fast"`, or trained by both loops
with `encoders="both"` (`shared_leaves`).
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
from jaxtyping import Array, Bool, Float, Int, Key, PRNGKeyArray, PyTree

from ._base import FAST, SLOW, AbstractActorCritic, AbstractModuleActivity
from .config import LSTMAgentConfig, RIMsAgentConfig
from .io import IOSpec
from .rims import RIMCell, babyai_linear

_MIN_VIEW = 7  # cnn1: 7 -> 6 -> 3 (pool) -> 2 -> 1


def _sum_of_uniforms(key: PRNGKeyArray, shape: tuple[int, ...], lim: float) -> Array:
    """A bias drawn as PyTorch's two recurrent biases summed, each `U(-lim, lim)`."""
    k1, k2 = jr.split(key)
    return jr.uniform(k1, shape, minval=-lim, maxval=lim) + jr.uniform(
        k2, shape, minval=-lim, maxval=lim
    )


def _conv(conv: eqx.nn.Conv2d, x: Float[Array, "height width in"]) -> Array:
    """`conv` (stride 1, no padding) on a channels-last image, as one matrix product over the
    image's patches: on a 7x7 view this is faster than a convolution, in both directions."""
    kh, kw = conv.kernel_size
    height, width = x.shape[0] - kh + 1, x.shape[1] - kw + 1
    patches = jnp.concatenate(
        [x[i : i + height, j : j + width] for i in range(kh) for j in range(kw)], axis=-1
    )
    weight = jnp.transpose(conv.weight, (2, 3, 1, 0)).reshape(-1, conv.out_channels)
    out = patches @ weight
    if conv.bias is not None:
        out = out + conv.bias.reshape(-1)
    return out


class ImageEncoder(eqx.Module):
    """BabyAI-1.0's `cnn1` image encoder: Conv(2x2) -> ReLU -> MaxPool(2x2, stride 2) ->
    Conv(2x2) -> ReLU -> Conv(2x2) -> ReLU, flattened (`[7, 7, 3] -> [image_dim]`)."""

    conv1: eqx.nn.Conv2d
    conv2: eqx.nn.Conv2d
    conv3: eqx.nn.Conv2d

    def __init__(
        self,
        in_channels: int = 3,
        channels: tuple[int, int, int] = (16, 32, 128),
        *,
        key: PRNGKeyArray,
    ):
        """**Arguments:**

        - `in_channels`: channels of the view (3: object type, colour, state).
        - `channels`: output channels of the three convolutions; the last is the embedding
            size on a 7x7 view.
        - `key`: a PRNG key for the initialization.
        """
        k1, k2, k3 = jr.split(key, 3)
        self.conv1 = eqx.nn.Conv2d(in_channels, channels[0], 2, key=k1)
        self.conv2 = eqx.nn.Conv2d(channels[0], channels[1], 2, key=k2)
        self.conv3 = eqx.nn.Conv2d(channels[1], channels[2], 2, key=k3)

    def __call__(self, image: Float[Array, "height width channels"]) -> Float[Array, " features"]:
        """**Arguments:**

        - `image`: the view, channels last (as MiniGrid gives it), as floats.

        **Returns:**

        The image embedding, `[image_dim]` on a 7x7 view.
        """
        x = jax.nn.relu(_conv(self.conv1, image))
        h, w = x.shape[0] // 2, x.shape[1] // 2
        x = x[: 2 * h, : 2 * w].reshape(h, 2, w, 2, -1).max(axis=(1, 3))
        x = jax.nn.relu(_conv(self.conv2, x))
        x = jax.nn.relu(_conv(self.conv3, x))
        return x.reshape(-1)


class InstructionEncoder(eqx.Module):
    """BabyAI's instruction encoder: word embedding, then a GRU; its hidden state after the
    mission's last word (padding is skipped)."""

    embedding: eqx.nn.Embedding
    gru: eqx.nn.GRUCell
    distinct: int = eqx.field(static=True, default=512)

    def __init__(self, vocab: int, dim: int = 128, *, distinct: int = 512, key: PRNGKeyArray):
        """**Arguments:**

        - `vocab`: number of token ids (0 the padding, embedded like any other).
        - `dim`: size of the word embeddings and of the GRU's state.
        - `distinct`: the largest buffer of distinct missions `batch` uses (a batch with
            more encodes every row: the same numbers, slower). 0 turns deduplication off.
        - `key`: a PRNG key for the initialization.
        """
        if distinct < 0:
            raise ValueError(f"InstructionEncoder: distinct must be >= 0, got {distinct}.")
        self.distinct = distinct
        k_emb, k_gru, k_bias = jr.split(key, 3)
        self.embedding = eqx.nn.Embedding(vocab, dim, key=k_emb)
        gru = eqx.nn.GRUCell(dim, dim, key=k_gru)
        # The reset and update gates' biases: PyTorch's b_ih + b_hh.
        bias = gru.bias
        assert bias is not None
        lim = 1 / math.sqrt(dim)
        bias = bias.at[: 2 * dim].set(_sum_of_uniforms(k_bias, (2 * dim,), lim))
        self.gru = eqx.tree_at(lambda g: g.bias, gru, bias)

    def __call__(self, tokens: Int[Array, " length"]) -> Float[Array, " dim"]:
        """**Arguments:**

        - `tokens`: the mission's token ids, padded with 0.

        **Returns:**

        The GRU's hidden state after the last word: padding (id 0) leaves the state as it
        is, as BabyAI's GRU reads a batch of missions of one length without padding (its
        batches pad to their longest mission; a fixed-length array padded to 16 would
        otherwise change every embedding).
        """
        gru = self.gru
        dim = gru.hidden_size
        assert gru.bias is not None and gru.bias_n is not None
        # The input side of the gates for every word of the vocabulary at once, then looked up:
        # the same products as projecting each token's embedding, and on BabyAI's small
        # vocabulary (< 100 words) fewer of them for a batch of missions.
        table = self.embedding.weight @ gru.weight_ih.T + gru.bias
        inputs = table[tokens]

        def step(h, x, hidden):
            r = jax.nn.sigmoid(x[:dim] + hidden[:dim])
            z = jax.nn.sigmoid(x[dim : 2 * dim] + hidden[dim : 2 * dim])
            n = jnp.tanh(x[2 * dim :] + r * (hidden[2 * dim :] + gru.bias_n))
            return n + z * (h - n)

        # From h = 0 the first step's recurrent product is 0 (a mission starts with a word).
        h = step(jnp.zeros((dim,)), inputs[0], jnp.zeros((3 * dim,)))

        def body(h, x_and_word):
            x, word = x_and_word
            return jnp.where(word, step(h, x, gru.weight_hh @ h), h), None

        h, _ = jax.lax.scan(body, h, (inputs[1:], tokens[1:] != 0))
        return h

    def batch(self, tokens: Int[Array, "batch length"]) -> Float[Array, "batch dim"]:
        """`jax.vmap(self)(tokens)`, computing each distinct mission once: a level has few
        missions (GoToObj 18, GoToLocal 36, PickupLoc about 200), and a PPO minibatch of 1,280
        frames a few dozen episodes, so the GRU, sequential over the words, would otherwise be
        most of an update's cost. The distinct missions go into the smallest buffer of
        8, 32, 128, ... rows (up to `distinct`) that holds them, or, when none does, every row
        is encoded. The gradient is the same sum over frames."""
        n = tokens.shape[0]
        sizes = []
        size = 8
        while size <= self.distinct and size < n:
            sizes.append(size)
            size *= 4
        if not sizes:
            return jax.vmap(self)(tokens)
        order = jnp.lexsort(tokens.T[::-1])
        ordered = tokens[order]
        first = jnp.concatenate(
            [jnp.ones((1,), bool), jnp.any(ordered[1:] != ordered[:-1], axis=1)]
        )
        group = jnp.cumsum(first) - 1
        inverse = jnp.zeros((n,), group.dtype).at[order].set(group)

        def deduplicated(size: int):
            def encode():
                unique = jnp.zeros((size, tokens.shape[1]), tokens.dtype)
                unique = unique.at[group].set(ordered, mode="drop")
                return jax.vmap(self)(unique)[inverse]

            return encode

        branches = [deduplicated(size) for size in sizes] + [lambda: jax.vmap(self)(tokens)]
        which = jnp.searchsorted(jnp.asarray(sizes), group[-1] + 1)
        return jax.lax.switch(which, branches)


class Head(eqx.Module):
    """`Linear -> tanh -> Linear`, BabyAI's actor and critic heads."""

    hidden: eqx.nn.Linear
    out: eqx.nn.Linear

    def __init__(self, in_features: int, hidden: int, out_features: int, *, key: PRNGKeyArray):
        """**Arguments:**

        - `in_features`: size of the memory read out.
        - `hidden`: width of the hidden layer (64 in BabyAI).
        - `out_features`: number of outputs (actions, or 1 for a value).
        - `key`: a PRNG key for the initialization (BabyAI's).
        """
        k1, k2 = jr.split(key)
        self.hidden = babyai_linear(in_features, hidden, key=k1)
        self.out = babyai_linear(hidden, out_features, key=k2)

    def __call__(self, x: Float[Array, " in_features"]) -> Float[Array, " out_features"]:
        return self.out(jnp.tanh(self.hidden(x)))


Core = eqx.nn.LSTMCell | RIMCell


class ActorCritic(AbstractActorCritic, AbstractModuleActivity):
    """BabyAI's actor-critic with an LSTM or a RIMs core; see the module docstring.

    Built by `make_lstm` (`lstm-agent`) and `make_rims` (`rims-agent`), or from its parts:

    ```python
    agent = ActorCritic(image, instruction, core, actor, critic, split="meta", encoders="slow")
    logits, value, memory = agent(obs, agent.initial_memory(), key=key)
    ```

    The memory is `(h, c)`: `[memory]` each with an LSTM core, `[num_modules, hidden]` each
    with a RIMs core. A key drives the RIM's dropout (none without a key); the LSTM agent has
    no dropout.
    """

    image: ImageEncoder
    instruction: InstructionEncoder | None
    core: Core
    actor: Head
    critic: Head
    split: str = eqx.field(static=True, default="meta")
    encoders: str = eqx.field(static=True, default="slow")

    def __check_init__(self):
        if self.split not in ("meta", "flip", "attention"):
            raise ValueError(
                f"ActorCritic: split must be 'meta', 'flip' or 'attention', got {self.split!r}."
            )
        if self.split != "meta" and not isinstance(self.core, RIMCell):
            raise ValueError(
                f"ActorCritic: split={self.split!r} divides the RIMs' attentions from their "
                "module cells; it needs a RIMs core, not an LSTM."
            )
        if self.encoders not in ("slow", "fast", "both"):
            raise ValueError(
                f"ActorCritic: encoders must be 'slow', 'fast' or 'both', got {self.encoders!r}."
            )

    def initial_memory(
        self,
    ) -> tuple[Float[Array, "*memory"], Float[Array, "*memory"]]:
        """`(h, c)`, zeros: `[memory]` each (LSTM) or `[num_modules, hidden]` each (RIMs)."""
        if isinstance(self.core, RIMCell):
            return self.core.initial_state()
        zeros = jnp.zeros((self.core.hidden_size,))
        return zeros, zeros

    def reset_memory(self, memory: PyTree[Array], mask: Float[Array, ""]) -> PyTree[Array]:
        """`memory` where `mask` is 1, `initial_memory()` where it is 0: the RIMs' learned
        initial state with `initial_state="learned"`, zeros otherwise (`memory * mask`)."""
        if isinstance(self.core, RIMCell) and self.core.learned_initial_state:
            return jtu.tree_map(
                lambda m, start: jnp.where(mask > 0, m, start), memory, self.initial_memory()
            )
        return jtu.tree_map(lambda m: m * mask, memory)

    def shared_leaves(self) -> PyTree[bool]:
        """`True` at the encoders with `encoders="both"` (trained by the fast and the slow
        loop), `False` everywhere else."""
        shared = jtu.tree_map(lambda _: False, self)
        if self.encoders != "both":
            return shared
        true = lambda tree: jtu.tree_map(lambda _: True, tree)  # noqa: E731
        shared = eqx.tree_at(lambda m: m.image, shared, true(self.image))
        if self.instruction is not None:
            shared = eqx.tree_at(lambda m: m.instruction, shared, true(self.instruction))
        return shared

    def __call__(
        self,
        obs: dict[str, Array],
        memory: PyTree[Array],
        *,
        key: PRNGKeyArray | None = None,
    ) -> tuple[Float[Array, " actions"], Float[Array, ""], PyTree[Array]]:
        """**Arguments:**

        - `obs`: one observation: `"image"` (`[7, 7, 3]` integers) and, where the agent
            was built with a mission, `"mission"` (token ids); others are ignored.
        - `memory`: `(h, c)`, as `initial_memory()` gives it.
        - `key`: a PRNG key for dropout (RIMs only); none without it. (Keyword only.)

        **Returns:**

        `(logits, value, next_memory)`.
        """
        return self.step(self.encode(obs), memory, key=key)

    def encode(self, obs: dict[str, Array]) -> Float[Array, " features"]:
        """The image's and the mission's encodings, concatenated (the core's input)."""
        x = self.image(obs["image"].astype(jnp.float32))
        if self.instruction is not None:
            x = jnp.concatenate([x, self.instruction(obs["mission"])])
        return x

    def encode_batch(self, obs: dict[str, Array]) -> Float[Array, "batch features"]:
        """`jax.vmap(self.encode)(obs)`, each distinct mission of the batch encoded once."""
        x = jax.vmap(self.image)(obs["image"].astype(jnp.float32))
        if self.instruction is not None:
            x = jnp.concatenate([x, self.instruction.batch(obs["mission"])], axis=-1)
        return x

    def step(
        self,
        features: Float[Array, " features"],
        memory: PyTree[Array],
        *,
        key: PRNGKeyArray | None = None,
    ) -> tuple[Float[Array, " actions"], Float[Array, ""], PyTree[Array]]:
        """The core and the heads, from `encode(obs)`."""
        logits, value, memory, _ = self._core_and_heads(features, memory, key)
        return logits, value, memory

    def activity(
        self,
        obs: dict[str, Array],
        memory: PyTree[Array],
        *,
        key: PRNGKeyArray | None = None,
    ) -> tuple[Float[Array, " actions"], Float[Array, ""], PyTree[Array], Bool[Array, " modules"]]:
        """As `__call__`, and which modules were active at this step: the RIMs core's top-k
        mask, `[num_modules]`; an LSTM core is one module, always active (`[1]`)."""
        return self._core_and_heads(self.encode(obs), memory, key)

    def unroll(
        self,
        features: Float[Array, "frames envs features"],
        memory: PyTree[Array],
        mask: Float[Array, "frames envs"],
        keys: Key[Array, "frames envs"] | None = None,
    ) -> tuple[Float[Array, "frames envs actions"], Float[Array, "frames envs"], PyTree[Array]]:
        """`zoo.AbstractActorCritic.unroll`. With a RIMs core, what reads no memory is done
        for every frame before the recurrence: the input attention's keys and values of all
        frames in one matrix product (`RIMCell.project`) and every step's dropout bits and
        noise from its key (`RIMCell.noise`); only `RIMCell.update` and the heads run inside
        it, each step rematerialized in the backward pass but for its matrix products
        (`jax.checkpoint_policies.dots_saveable`: its elementwise work is recomputed inside
        the backward's fusions instead of being stored for every frame). The same numbers as
        stepping frame by frame, in less time. An LSTM core takes the default."""
        core = self.core
        if not isinstance(core, RIMCell):
            return super().unroll(features, memory, mask, keys)
        projected = features @ core.input_key_value
        noise = None if keys is None else jax.vmap(jax.vmap(core.noise))(keys)

        def one(projected, memory, noise):
            memory, _ = core.update(projected, memory, noise)
            logits, value = self._heads(memory[0].reshape(-1))
            return logits, value, memory

        step = jax.checkpoint(jax.vmap(one), policy=jax.checkpoint_policies.dots_saveable)

        def body(memory, inputs):
            projected, mask, noise = inputs
            memory = jax.vmap(self.reset_memory)(memory, mask)
            logits, value, memory = step(projected, memory, noise)
            return memory, (logits, value)

        memory, (logits, value) = jax.lax.scan(body, memory, (projected, mask, noise))
        return logits, value, memory

    def _heads(
        self, features: Float[Array, " memory"]
    ) -> tuple[Float[Array, " actions"], Float[Array, ""]]:
        return self.actor(features), self.critic(features)[0]

    def _core_and_heads(
        self, x: Float[Array, " features"], memory: PyTree[Array], key: PRNGKeyArray | None
    ) -> tuple[Float[Array, " actions"], Float[Array, ""], PyTree[Array], Bool[Array, " modules"]]:
        if isinstance(self.core, RIMCell):
            memory, active = self.core(x, memory, key=key)
            features = memory[0].reshape(-1)
        else:
            memory = self.core(x, memory)
            features = memory[0]
            active = jnp.ones((1,), bool)
        logits, value = self._heads(features)
        return logits, value, memory, active.astype(bool)

    def labels(self) -> PyTree[str]:
        """`"fast"` at the actor head and the core's fast part (the module cells with split
        `"meta"`, the attentions with `"flip"`, the whole LSTM), and at the encoders with
        `encoders="fast"`; `"slow"` everywhere else (the critic head, the core's other part,
        the encoders by default and with `encoders="both"`, where `shared_leaves()` adds them
        to the fast loop). With split `"attention"` only the RIMs' attentions are slow."""
        spec = jtu.tree_map(lambda _: SLOW, self)
        fast = lambda tree: jtu.tree_map(lambda _: FAST, tree)  # noqa: E731
        if self.split == "attention":  # only the attentions slow (the slowLR ablation)
            assert isinstance(self.core, RIMCell)
            core = self.core.labels(modules=FAST, attention=SLOW)
            return eqx.tree_at(lambda m: m.core, fast(self), core)
        if isinstance(self.core, RIMCell):
            modules, attention = (FAST, SLOW) if self.split == "meta" else (SLOW, FAST)
            core = self.core.labels(modules=modules, attention=attention)
        else:
            core = fast(self.core)
        spec = eqx.tree_at(lambda m: (m.core, m.actor), spec, (core, fast(self.actor)))
        if self.encoders == "fast":
            spec = eqx.tree_at(lambda m: m.image, spec, fast(self.image))
            if self.instruction is not None:
                spec = eqx.tree_at(lambda m: m.instruction, spec, fast(self.instruction))
        return spec


def _check_io(io: IOSpec, name: str) -> None:
    if io.actions is None:
        raise ValueError(
            f"{name} acts in an environment, but the task has no actions (io.actions is "
            "None): pair it with an environment task."
        )
    if len(io.x_shape) != 3 or min(io.x_shape[:2]) < _MIN_VIEW:
        raise ValueError(
            f"{name} reads an egocentric view [height, width, channels] of at least "
            f"{_MIN_VIEW}x{_MIN_VIEW} (BabyAI's cnn1 encoder), got x_shape={io.x_shape}."
        )


def _encoders(
    io: IOSpec, image_dim: int, instr_dim: int, *, key: PRNGKeyArray
) -> tuple[ImageEncoder, InstructionEncoder | None, int]:
    """The image and instruction encoders, and the size of their concatenated output."""
    k_image, k_instr = jr.split(key)
    image = ImageEncoder(io.x_shape[2], (16, 32, image_dim), key=k_image)
    height = (io.x_shape[0] - 1) // 2 - 2
    width = (io.x_shape[1] - 1) // 2 - 2
    size = image_dim * height * width
    if io.mission_vocab is None:
        return image, None, size
    return image, InstructionEncoder(io.mission_vocab, instr_dim, key=k_instr), size + instr_dim


def make_lstm(config: LSTMAgentConfig, *, io: IOSpec, key: PRNGKeyArray) -> ActorCritic:
    """Build the "vanilla" agent, an `ActorCritic` with an LSTM memory, from its config (the
    factory of the `lstm-agent` plugin), for an environment task's `io`.

    **Raises:**

    `ValueError` if the task is not an environment with a view of at least 7x7.
    """
    _check_io(io, "lstm-agent")
    assert io.actions is not None
    k_enc, k_core, k_bias, k_actor, k_critic = jr.split(key, 5)
    image, instruction, size = _encoders(io, config.image_dim, config.instr_dim, key=k_enc)
    core = eqx.nn.LSTMCell(size, config.memory, key=k_core)
    bias = _sum_of_uniforms(k_bias, (4 * config.memory,), 1 / math.sqrt(config.memory))
    core = eqx.tree_at(lambda c: c.bias, core, bias)
    return ActorCritic(
        image=image,
        instruction=instruction,
        core=core,
        actor=Head(config.memory, config.head_hidden, io.actions, key=k_actor),
        critic=Head(config.memory, config.head_hidden, 1, key=k_critic),
        split="meta",
        encoders=config.encoders,
    )


def make_rims(config: RIMsAgentConfig, *, io: IOSpec, key: PRNGKeyArray) -> ActorCritic:
    """Build the "modular" agent, an `ActorCritic` with a `RIMCell` core, from its config (the
    factory of the `rims-agent` plugin), for an environment task's `io`.

    **Raises:**

    `ValueError` if the task is not an environment with a view of at least 7x7.
    """
    _check_io(io, "rims-agent")
    assert io.actions is not None
    k_enc, k_core, k_actor, k_critic = jr.split(key, 4)
    image, instruction, size = _encoders(io, config.image_dim, config.instr_dim, key=k_enc)
    core = RIMCell(
        size,
        num_modules=config.num_modules,
        top_k=config.top_k,
        hidden_size=config.hidden,
        key_size=config.key_size,
        value_size=config.value_size,
        comm_heads=config.comm_heads,
        comm_key_size=config.comm_key_size,
        dropout=config.dropout,
        communication=config.communication,
        initial_state=config.initial_state,
        query_bias=config.query_bias,
        score_noise=config.score_noise,
        input_attention=config.input_attention,
        key=k_core,
    )
    memory = config.num_modules * config.hidden
    return ActorCritic(
        image=image,
        instruction=instruction,
        core=core,
        actor=Head(memory, config.head_hidden, io.actions, key=k_actor),
        critic=Head(memory, config.head_hidden, 1, key=k_critic),
        split=config.split,
        encoders=config.encoders,
    )
