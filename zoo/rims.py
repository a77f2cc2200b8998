"""Recurrent Independent Mechanisms (Goyal et al. 2019), the cell of Meta-RIMs (Madan et al.
2021, Section 2.1), as the RIMs authors' code defines it (`anirudh9119/RIMs`,
`event_based/blocks_core.py`, "v1"; the build notes are `docs/specs/meta-rims.md`, B2).

One step of `RIMCell`, for `N` modules of `h` units each, input `x` and states `h, c: [N, h]`:

1. **Input attention** (1 head, keys and queries of `key_size` = 64, values of `value_size` =
   4h): every module queries `q_j = W^Q_j h_j` (one weight per module) the two input slots
   `[0; x]`, a null slot and the input. The null slot's key and value are exactly 0 (the
   reference's projections have no bias), so the weights are
   `a_j = softmax([0, q_j . k / sqrt(64)])` with `k = W^K x`, and the read vector is
   `r_j = a_{j,1} v`, `v = W^V x`, followed by dropout.
2. **Top-k**: the `k` modules paying the least attention to the null slot (equivalently the
   most to the input) are active; the mask carries no gradient.
3. **Module dynamics**: every module's own LSTM cell (`value_size -> h`) steps on its read
   vector; the `N` cells are one batched computation over per-module weights.
4. **Communication** (4 heads of 16): from the new states, with the gradient of the inactive
   modules' states blocked (`m h + (1 - m) stop_gradient(h)`), every module attends over all
   modules; its read `o_j` ([4 * 16]) gives the gated residual
   `h_j += sigmoid(W^g o_j + b^g) * tanh(dropout(W^fc o_j + b^fc))`, `W^fc` and `W^g` shared
   by the modules.
5. **Masked update**: active modules take the new `h, c`; inactive ones keep theirs exactly.

Readings chosen where the reference leaves room (or where its code holds dead weights):

- The null slot's key and value weights, which only ever multiply the zero slot, are left
  out, and so is the input attention's gate layer, which the reference builds but never uses
  (`residual=False`): the function is the reference's, with fewer (dead) parameters.
- Top-k is taken on the input-slot score `q_j . k` rather than on `a_{j,0} = 1 -
  sigmoid(q_j . k / 8)`: the same order, without the ties a saturated sigmoid makes in float32;
  remaining ties go to the lower module index.
- The module LSTMs' input and recurrent weights are one array `[N, value_size + h, 4h]` (gate
  order i, f, g, o as in PyTorch) and their two PyTorch biases one array, initialized as the
  sum of two uniform draws (the distribution of `b_ih + b_hh`). Weights and biases start
  `U(+-1/sqrt(N h))`, the default of the reference's one big block-diagonal `LSTMCell(N * 4h,
  N * h)`.
- Projections of both attentions (`W^Q`, `W^K`, `W^V` and the communication's per-module
  query, key and value) start `0.01 N(0, 1)` (the reference's `GroupLinearLayer`);
  `W^fc, W^g` (one `Linear(64, 2h)` here, `W^fc` its first `h` outputs) start as BabyAI
  initializes every `nn.Linear` of its agents: rows of `N(0, 1)` normalized to unit norm,
  biases 0.

**Modules that can win back.** With the defaults above a module whose state is zero (every
module at an episode's start, and every module that has not yet been active in it) scores
exactly `q_j . k = 0`, and an inactive module's query weights get no gradient (its new state
is discarded): a module that loses at the start of training can stay silent for good. Four
options, all off by default (the reference's cell), break that symmetry:

- `initial_state="learned"`: a learned initial `(h, c)` per module (`[N, h]` each, starting
  `U(+-1/sqrt(h))`), so that modules differ from the first step; agents reset their memory
  to it at every episode start (`zoo.AbstractActorCritic.reset_memory`).
- `query_bias=True`: a learned bias per module on the input query (`q_j = W^Q_j h_j + b_j`,
  `b` starting `0.01 N(0, 1)` like the weights), so that a zero state still scores
  `b_j . k`, a function of the input.
- `score_noise > 0`: Gumbel noise of that scale on the scores the top-k is taken on, while
  training (only when the cell is called with a key, so greedy evaluation has none); the read
  vector keeps the noise-free weights.
- `input_attention="modules"`: the input attention of the RIMs authors' RL code
  (`blocks_atari/a2c_ppo_acktr/blocks_core.py`, "version 2", `attention.py` with
  `flag=True`, `sparse_attn.py`): one input slot and no null slot; the softmax is taken
  *across modules* (`w = softmax_j(q_j . k / sqrt(64))`), then made sparse: the `(k+1)`-th
  largest weight plus `1e-7` is subtracted, negatives clipped to 0 and the rest renormalized
  (to a sum `+ 1e-7`), so the `k` winners share the input, `r_j = w'_j v`. Top-k is on the
  same scores, so the active set is the same function of the scores; what differs is the
  read's scale and that every module's score now moves the others' reads (a gradient that a
  zero-state module's query still does not get, as `h_j = 0`). With `k = N` the sparse step
  is the identity, as in the reference.
"""

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
from jaxtyping import Array, Bool, Float, PRNGKeyArray, PyTree, UInt16


def babyai_linear(in_features: int, out_features: int, *, key: PRNGKeyArray) -> eqx.nn.Linear:
    """An `eqx.nn.Linear` initialized as BabyAI initializes every `nn.Linear` of its agents
    (`babyai/model.py`, `initialize_parameters`): each output's weight row drawn from
    `N(0, 1)` and normalized to unit norm, biases 0."""
    linear = eqx.nn.Linear(in_features, out_features, key=key)
    weight = jr.normal(key, (out_features, in_features))
    weight = weight / jnp.sqrt(jnp.sum(weight**2, axis=1, keepdims=True))
    bias = jnp.zeros((out_features,))
    return eqx.tree_at(lambda m: (m.weight, m.bias), linear, (weight, bias))


def dropout_bits(key: PRNGKeyArray, shape: tuple[int, ...]) -> UInt16[Array, "..."]:
    """The random bits `apply_dropout` draws from `key` for an array of `shape`: 16 per element
    (half those of `jax.random.bernoulli`, which dominate dropout's cost on CPU)."""
    return jr.bits(key, shape, jnp.uint16)


def dropout_with(x: Array, rate: float, bits: UInt16[Array, "..."] | None) -> Array:
    """Inverted dropout of `x` at `rate` from bits drawn in advance (`dropout_bits`, of `x`'s
    shape); the identity without bits (or at rate 0).

    Each element is dropped when its 16 bits fall below `round(rate * 2**16)`: the rate is
    realized to within `2**-17` (0.1 as 0.100006), and the kept elements are scaled by the
    inverse of the realized keep probability, so the expectation is exact.
    """
    if bits is None or rate == 0:
        return x
    threshold = round(rate * 2**16)
    return jnp.where(bits >= threshold, x * (2**16 / (2**16 - threshold)), 0.0)


def apply_dropout(x: Array, rate: float, key: PRNGKeyArray | None) -> Array:
    """Inverted dropout of `x` at `rate`; the identity without a key (or at rate 0):
    `dropout_with(x, rate, dropout_bits(key, x.shape))`."""
    if key is None or rate == 0:
        return x
    return dropout_with(x, rate, dropout_bits(key, x.shape))


class RIMNoise(eqx.Module):
    """The randomness of one `RIMCell` step, drawn from its key in advance (`RIMCell.noise`):
    it reads no state, so an unroll over a sequence draws every step's at once, outside the
    recurrence."""

    read: UInt16[Array, "modules value_size"] | None
    comm: UInt16[Array, "modules hidden"] | None
    gumbel: Float[Array, " modules"] | None


def lstm_gates(
    gates: Float[Array, "*batch gates"], c: Float[Array, "*batch hidden"]
) -> tuple[Float[Array, "*batch hidden"], Float[Array, "*batch hidden"]]:
    """`(h, c)` after an LSTM step, from the pre-activations of the gates `[i, f, g, o]`
    (PyTorch's order) and the previous cell state."""
    i, f, g, o = jnp.split(gates, 4, axis=-1)
    c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
    return jax.nn.sigmoid(o) * jnp.tanh(c), c


class GroupLinear(eqx.Module):
    """One linear map per group, without bias (the RIMs authors' `GroupLinearLayer`): group `j`
    of the input maps through its own weight, `y_j = x_j @ W_j`. All groups are one batched
    matrix product.

    The weights start `0.01 N(0, 1)`, as in the reference.
    """

    weight: Float[Array, "groups in_features out_features"]

    def __init__(self, groups: int, in_features: int, out_features: int, *, key: PRNGKeyArray):
        """**Arguments:**

        - `groups`: the number of groups (e.g. modules), each with its own weight.
        - `in_features`, `out_features`: sizes of one group's input and output.
        - `key`: a PRNG key for the initialization.
        """
        self.weight = 0.01 * jr.normal(key, (groups, in_features, out_features))

    def __call__(
        self, x: Float[Array, "groups in_features"]
    ) -> Float[Array, "groups out_features"]:
        """**Arguments:**

        - `x`: one input vector per group.

        **Returns:**

        One output vector per group.
        """
        return jnp.einsum("gi,gio->go", x, self.weight)


class RIMCell(eqx.Module):
    """One step of Recurrent Independent Mechanisms: `N` LSTM modules, of which the `k` that
    attend most to the input update, then read from each other. See the module docstring
    for the computation and for the readings chosen.

    ```python
    cell = RIMCell(input_size=256, key=jr.key(0))  # N = 5, k = 3, h = 32
    state = cell.initial_state()                    # (h, c), each [5, 32]
    (h, c), mask = cell(x, state)                   # mask: [5] bool, 3 True
    ```

    Dropout (on the input attention's read and on the communication's output) is active only
    when a key is given.
    """

    input_query: GroupLinear
    input_key_value: Float[Array, "input_size key_plus_value"]
    cell_weight: Float[Array, "modules in_plus_hidden gates"]
    cell_bias: Float[Array, "modules gates"]
    comm_qkv: GroupLinear | None
    comm_output: eqx.nn.Linear | None
    query_bias: Float[Array, "modules key_size"] | None
    initial_h: Float[Array, "modules hidden"] | None
    initial_c: Float[Array, "modules hidden"] | None
    input_size: int = eqx.field(static=True)
    num_modules: int = eqx.field(static=True)
    top_k: int = eqx.field(static=True)
    hidden_size: int = eqx.field(static=True)
    key_size: int = eqx.field(static=True)
    value_size: int = eqx.field(static=True)
    comm_heads: int = eqx.field(static=True)
    comm_key_size: int = eqx.field(static=True)
    dropout: float = eqx.field(static=True)
    communication: bool = eqx.field(static=True)
    score_noise: float = eqx.field(static=True)
    input_attention: str = eqx.field(static=True)

    def __init__(
        self,
        input_size: int,
        num_modules: int = 5,
        top_k: int = 3,
        hidden_size: int = 32,
        key_size: int = 64,
        value_size: int | None = None,
        comm_heads: int = 4,
        comm_key_size: int = 16,
        dropout: float = 0.1,
        communication: bool = True,
        initial_state: str = "zeros",
        query_bias: bool = False,
        score_noise: float = 0.0,
        input_attention: str = "null-slot",
        *,
        key: PRNGKeyArray,
    ):
        """**Arguments:**

        - `input_size`: size of the input vector `x`.
        - `num_modules`: `N`, the number of modules.
        - `top_k`: `k`, the number of modules active at every step (`1 <= k <= N`).
        - `hidden_size`: `h`, the size of one module's state.
        - `key_size`: size of the input attention's keys and queries.
        - `value_size`: size of the input attention's values, the modules' input; default
            `4 * hidden_size`.
        - `comm_heads`: heads of the communication attention.
        - `comm_key_size`: size of the communication's keys, queries and values per head.
        - `dropout`: dropout rate of both attentions' outputs (applied only with a key).
        - `communication`: whether the modules communicate; off, step 4 is skipped.
        - `initial_state`: `"zeros"` (the reference's) or `"learned"`, a learned `(h, c)` per
            module (see the module docstring, "Modules that can win back", for this and the
            next three).
        - `query_bias`: whether the input query has a learned bias per module.
        - `score_noise`: the scale of Gumbel noise on the top-k scores when called with a key
            (0: none).
        - `input_attention`: `"null-slot"` (the reference's v1, a softmax over a null slot and
            the input per module) or `"modules"` (its RL code's, a sparse softmax across
            modules).
        - `key`: a PRNG key for the initialization.

        **Raises:**

        `ValueError` if a size is not positive, `top_k` is not in `[1, num_modules]`,
        `dropout` is not in `[0, 1)`, `score_noise` is negative, or `initial_state` or
        `input_attention` is not one of its choices.
        """
        value_size = 4 * hidden_size if value_size is None else value_size
        sizes = {
            "input_size": input_size,
            "num_modules": num_modules,
            "hidden_size": hidden_size,
            "key_size": key_size,
            "value_size": value_size,
            "comm_heads": comm_heads,
            "comm_key_size": comm_key_size,
        }
        for name, size in sizes.items():
            if not isinstance(size, int) or size < 1:
                raise ValueError(f"RIMCell: {name} must be a positive int, got {size!r}.")
        if not 1 <= top_k <= num_modules:
            raise ValueError(
                f"RIMCell: top_k must be in [1, num_modules] = [1, {num_modules}], got {top_k}."
            )
        if not 0 <= dropout < 1:
            raise ValueError(f"RIMCell: dropout must be in [0, 1), got {dropout}.")
        if not score_noise >= 0:
            raise ValueError(f"RIMCell: score_noise must be >= 0, got {score_noise}.")
        if initial_state not in ("zeros", "learned"):
            raise ValueError(
                f"RIMCell: initial_state must be 'zeros' or 'learned', got {initial_state!r}."
            )
        if input_attention not in ("null-slot", "modules"):
            raise ValueError(
                "RIMCell: input_attention must be 'null-slot' or 'modules', got "
                f"{input_attention!r}."
            )
        k_query, k_kv, k_weight, k_bias1, k_bias2, k_qkv, k_out = jr.split(key, 7)
        self.input_query = GroupLinear(num_modules, hidden_size, key_size, key=k_query)
        self.input_key_value = 0.01 * jr.normal(k_kv, (input_size, key_size + value_size))
        lim = 1 / math.sqrt(num_modules * hidden_size)
        gates = 4 * hidden_size
        self.cell_weight = jr.uniform(
            k_weight, (num_modules, value_size + hidden_size, gates), minval=-lim, maxval=lim
        )
        self.cell_bias = jr.uniform(
            k_bias1, (num_modules, gates), minval=-lim, maxval=lim
        ) + jr.uniform(k_bias2, (num_modules, gates), minval=-lim, maxval=lim)
        if communication:
            width = comm_heads * comm_key_size
            self.comm_qkv = GroupLinear(num_modules, hidden_size, 3 * width, key=k_qkv)
            self.comm_output = babyai_linear(width, 2 * hidden_size, key=k_out)
        else:
            self.comm_qkv = None
            self.comm_output = None
        # The options draw from keys of their own (folded from `key`), so that a cell without
        # them is initialized exactly as before they existed.
        k_query_bias, k_initial = jr.split(jr.fold_in(key, 1))
        self.query_bias = (
            0.01 * jr.normal(k_query_bias, (num_modules, key_size)) if query_bias else None
        )
        if initial_state == "learned":
            bound = 1 / math.sqrt(hidden_size)
            shape = (2, num_modules, hidden_size)
            initial = jr.uniform(k_initial, shape, minval=-bound, maxval=bound)
            self.initial_h, self.initial_c = initial[0], initial[1]
        else:
            self.initial_h = self.initial_c = None
        self.input_size = input_size
        self.num_modules = num_modules
        self.top_k = top_k
        self.hidden_size = hidden_size
        self.key_size = key_size
        self.value_size = value_size
        self.comm_heads = comm_heads
        self.comm_key_size = comm_key_size
        self.dropout = dropout
        self.communication = communication
        self.score_noise = score_noise
        self.input_attention = input_attention

    def initial_state(
        self,
    ) -> tuple[Float[Array, "modules hidden"], Float[Array, "modules hidden"]]:
        """`(h, c)` at the start of a sequence, `[num_modules, hidden_size]` each: zeros, or the
        learned initial state."""
        if self.initial_h is not None and self.initial_c is not None:
            return self.initial_h, self.initial_c
        zeros = jnp.zeros((self.num_modules, self.hidden_size))
        return zeros, zeros

    @property
    def learned_initial_state(self) -> bool:
        """Whether `initial_state()` is learned (not zeros)."""
        return self.initial_h is not None

    def __call__(
        self,
        x: Float[Array, " input_size"],
        state: tuple[Float[Array, "modules hidden"], Float[Array, "modules hidden"]],
        *,
        key: PRNGKeyArray | None = None,
    ) -> tuple[
        tuple[Float[Array, "modules hidden"], Float[Array, "modules hidden"]],
        Bool[Array, " modules"],
    ]:
        """**Arguments:**

        - `x`: the input at this step.
        - `state`: `(h, c)`, the modules' states, `[num_modules, hidden_size]` each.
        - `key`: a PRNG key for dropout; none (no dropout) without it. (Keyword only.)

        **Returns:**

        `((h, c), mask)`: the new states, and which modules were active (`top_k` of them).
        The inactive modules' rows of `h` and `c` are those of `state`, bit for bit.
        """
        return self.update(self.project(x), state, self.noise(key))

    def project(self, x: Float[Array, " input_size"]) -> Float[Array, " key_plus_value"]:
        """The part of a step that reads no state: the input attention's key and value of `x`,
        concatenated (`[key_size + value_size]`), for `update`."""
        return x @ self.input_key_value

    def noise(self, key: PRNGKeyArray | None) -> RIMNoise | None:
        """The randomness of one step from its key, for `update`: the dropout bits of both
        attentions' outputs and, with `score_noise`, the Gumbel noise of the top-k scores. None
        without a key (no dropout, no noise)."""
        if key is None:
            return None
        k_read, k_comm = jr.split(key)
        drop = self.dropout > 0
        read = dropout_bits(k_read, (self.num_modules, self.value_size)) if drop else None
        comm = (
            dropout_bits(k_comm, (self.num_modules, self.hidden_size))
            if drop and self.communication
            else None
        )
        gumbel = (
            jr.gumbel(jr.fold_in(key, 2), (self.num_modules,)) if self.score_noise > 0 else None
        )
        return RIMNoise(read, comm, gumbel)

    def update(
        self,
        projected: Float[Array, " key_plus_value"],
        state: tuple[Float[Array, "modules hidden"], Float[Array, "modules hidden"]],
        noise: RIMNoise | None = None,
    ) -> tuple[
        tuple[Float[Array, "modules hidden"], Float[Array, "modules hidden"]],
        Bool[Array, " modules"],
    ]:
        """The step from `project(x)` and `noise(key)`: `update(project(x), state, noise(key))`
        is `self(x, state, key=key)`. A caller stepping a whole sequence projects its inputs
        and draws its noise for every step at once, outside the recurrence
        (`zoo.ActorCritic.unroll`)."""
        h, c = state
        read_bits = comm_bits = gumbel = None
        if noise is not None:
            read_bits, comm_bits, gumbel = noise.read, noise.comm, noise.gumbel

        # 1. Input attention over [null slot, x]; the null slot's key and value are 0.
        query = self.input_query(h)
        if self.query_bias is not None:
            query = query + self.query_bias
        k, v = projected[: self.key_size], projected[self.key_size :]
        score = query @ k / math.sqrt(self.key_size)
        if self.input_attention == "modules":  # the RL code's sparse softmax across modules
            read = self._sparse_across_modules(score)[:, None] * v
        else:
            read = jax.nn.sigmoid(score)[:, None] * v  # softmax([0, score])[1] * v
        read = dropout_with(read, self.dropout, read_bits)

        # 2. Top-k: the modules attending least to the null slot, without gradient (with
        # `score_noise`, and a key, on the scores plus Gumbel noise).
        ranked = jax.lax.stop_gradient(score)
        if gumbel is not None:
            ranked = ranked + self.score_noise * gumbel
        mask = self._top_k(ranked)

        # 3. Every module's LSTM step, as one batched product.
        gates = jnp.einsum("ni,nig->ng", jnp.concatenate([read, h], axis=-1), self.cell_weight)
        h_new, c_new = lstm_gates(gates + self.cell_bias, c)

        # 4. Communication: inactive modules pass no gradient back through it.
        if self.comm_qkv is not None and self.comm_output is not None:
            active = mask[:, None]
            blocked = jnp.where(active, h_new, jax.lax.stop_gradient(h_new))
            qkv = self.comm_qkv(blocked).reshape(
                self.num_modules, 3, self.comm_heads, self.comm_key_size
            )
            q, kk, vv = qkv[:, 0], qkv[:, 1], qkv[:, 2]
            weights = jax.nn.softmax(
                jnp.einsum("qhd,khd->hqk", q, kk) / math.sqrt(self.comm_key_size), axis=-1
            )
            o = jnp.einsum("hqk,khd->qhd", weights, vv).reshape(self.num_modules, -1)
            out = jax.vmap(self.comm_output)(o)
            fc, gate = out[:, : self.hidden_size], out[:, self.hidden_size :]
            h_new = h_new + jax.nn.sigmoid(gate) * jnp.tanh(
                dropout_with(fc, self.dropout, comm_bits)
            )

        # 5. Masked update: inactive modules keep their state exactly.
        active = mask[:, None]
        return (jnp.where(active, h_new, h), jnp.where(active, c_new, c)), mask

    def _sparse_across_modules(self, score: Float[Array, " modules"]) -> Float[Array, " modules"]:
        """The RIMs RL code's input weights: a softmax across modules, of which only the
        `top_k` largest are kept, shifted down by the next one (plus `1e-7`) and renormalized."""
        weight = jax.nn.softmax(score)
        if self.top_k == self.num_modules:
            return weight
        eps = 1e-7
        delta = jnp.sort(weight)[::-1][self.top_k] + eps
        shifted = jnp.maximum(weight - delta, 0.0)
        return shifted / (jnp.sum(shifted) + eps)

    def _top_k(self, score: Float[Array, " modules"]) -> Bool[Array, " modules"]:
        """`True` at the `top_k` highest scores (ties to the lower index)."""
        if self.top_k == self.num_modules:
            return jnp.ones(score.shape, bool)
        index = jnp.arange(self.num_modules)
        # beats[j, l]: module l ranks before module j.
        beats = (score[None, :] > score[:, None]) | (
            (score[None, :] == score[:, None]) & (index[None, :] < index[:, None])
        )
        return jnp.sum(beats, axis=1) < self.top_k

    def labels(self, *, modules: str, attention: str) -> PyTree[str]:
        """A pytree with the structure of `self`: `modules` at the module cells' weights and
        biases, `attention` at both attentions' parameters (the split of Meta-RIMs)."""
        spec = jtu.tree_map(lambda _: attention, self)
        spec = eqx.tree_at(lambda m: (m.cell_weight, m.cell_bias), spec, (modules, modules))
        if self.initial_h is not None:  # the modules' own starting state
            spec = eqx.tree_at(lambda m: (m.initial_h, m.initial_c), spec, (modules, modules))
        return spec
