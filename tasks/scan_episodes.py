"""Episodes of Lake 2019 (Sections 4.2-4.6): SCAN meta-training by permutation and by
augmentation, around-right, length, and mutual exclusivity.

Every SCAN episode is a set of SCAN commands whose *slot* words are relabelled for the
episode: the four primitives (`walk`, `look`, `run`, `jump`) for add-jump and length, the two
directions (`left`, `right`) for around-right. An episode's *assignment* gives each slot an
input word and the action it means, e.g. `walk -> Primitive7 meaning Action3`; the commands
and their action sequences are then rewritten token by token through two lookup tables, so
that sampling an episode is a gather, jittable and vmappable. Which assignments may be drawn
is the whole experiment:

| experiment | words of the slots | their meanings | never drawn in training |
|---|---|---|---|
| `permutation` (4.3) | the 4 primitives | a permutation of their 4 actions | the true assignment |
| `augmentation` (4.4) | 4 of 24 primitives | 4 of 24 actions | `jump` meaning `I_JUMP` |
| `around_right` (4.5) | 2 of 4 directions | 2 of 4 turns | `right` meaning `I_TURN_RIGHT` |
| `length` (4.6) | 4 of 24 primitives | 4 of 24 actions | the true assignment |

The standard seq2seq baselines (no support set; an "episode" is a training batch of
`num_query` commands with fixed meanings; the test episodes have no support):

| experiment | training commands | test commands |
|---|---|---|
| `standard` (4.3) | `addprim_jump` training split, `jump` alone in every batch | `addprim_jump` test |
| `standard_augmentation` (4.4) | SCAN templates without `jump`, each command's primitives drawn from 23 of the 24 (`PrimitiveI` always meaning `I_ActionI`), `jump` alone in every batch | `addprim_jump` test |
| `standard_around_right` (4.5) | `template_around_right` training split | its test split |
| `standard_length` (4.6) | `length` training split | its test split |

(`jump` alone in every batch: the paper's words for 4.4, "included in every batch to ensure
the network learns it properly"; the reference code has no generator for these batches.)

`around_right` relabels `left` and `right` among `2 + extra_directions` directions: 2 extra
(`forward`, `backward`) in the paper's Table 3, 20 in its informal experiment (36.33%).

An episode's support and query items are distinct commands (the reference shuffles the
commands and deals the first `num_query` to the queries, the next `num_support` to the
support); length draws them from disjoint pools anyway.

Validation episodes (pool "val"), as in the reference code (docs/authors-settings.md, Lake
2019): the slots' true meanings, with random items (length: 100 support items from the whole
length training split, 20 queries from its test split), and training never draws an assignment
of the true one's kind (the table's last column; for permutation, 23 of the 24 permutations
train). The option `validation="held-out"` gives this code's earlier validation instead: five
random assignments, drawn first from the key, kept out of training, with items from the
training pools. The test episodes are fixed and not sampled (`test_episodes`): the slots' true
meanings as support (the 4 primitives; `turn left` and `turn right`; 100 items of the length
split's training set, five such sets) and every test command of the split as queries (7,706;
4,476; 3,920).

On "jump"'s frequency: SCAN's public `tasks_train_addprim_jump.txt` repeats "jump" (about
one line in ten) so that it is learned. Only `standard` reads that split here, and adds
"jump" once per batch instead (1 of 40 queries with the preset's batches). The meta-training
experiments, `augmentation` included, draw from all of SCAN, as the reference's episodes do
(from its file of every command, with the primitives made placeholders), so the file's
repetition never enters them: "jump" is a slot word of an augmentation episode with
probability 4/24 (never meaning `I_JUMP`), as in the reference.

Sequences are token arrays padded with `PAD = 0` to a fixed length, every sequence ends with
`EOS`; output sequences have their own vocabulary, with `SOS` for the decoder's first input.
"""

import functools
import itertools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int, PRNGKeyArray

from tasks import scan
from tasks._base import AbstractTask, Episode, Split
from tasks.config import (
    MutualExclusivityConfig,
    ScanEpisodesConfig,
    ScanExperiment,
    ScanValidation,
)
from zoo.io import IOSpec

PAD, EOS, SOS = "<pad>", "<eos>", "<sos>"
IN_SPECIALS = (PAD, EOS)
OUT_SPECIALS = (PAD, SOS, EOS)

Experiment = ScanExperiment
STANDARD = ("standard", "standard_augmentation", "standard_around_right", "standard_length")
"""The standard seq2seq baselines: batches of commands with fixed meanings, no support."""
_AUGMENTED = ("augmentation", "length", "standard_augmentation")
"""The experiments whose primitives include the 20 extra ones."""
_STANDARD_SPLIT = {
    "standard": "addprim_jump",
    "standard_augmentation": "addprim_jump",
    "standard_around_right": "template_around_right",
    "standard_length": "length",
}

NUM_EXTRA_PRIMITIVES = 20
EXTRA_PRIMITIVES = tuple(f"Primitive{i}" for i in range(1, NUM_EXTRA_PRIMITIVES + 1))
EXTRA_ACTIONS = tuple(f"I_Action{i}" for i in range(1, NUM_EXTRA_PRIMITIVES + 1))
EXTRA_DIRECTIONS = ("forward", "backward")
EXTRA_TURNS = ("I_FORWARD", "I_BACKWARD")
_PRIMITIVE_ACTIONS = ("I_WALK", "I_LOOK", "I_RUN", "I_JUMP")
_TURNS = ("I_TURN_LEFT", "I_TURN_RIGHT")

MAX_IN = 10
"""Longest SCAN command (9 words) plus EOS."""
MAX_OUT = 49
"""Longest SCAN action sequence (48) plus EOS."""
NUM_VALIDATION = 5


class Vocabulary(eqx.Module):
    """Input and output symbols of an experiment (index = token id)."""

    inputs: tuple[str, ...] = eqx.field(static=True)
    outputs: tuple[str, ...] = eqx.field(static=True)

    def encode(self, words: tuple[str, ...] | list[str], length: int, *, out: bool) -> np.ndarray:
        """Token ids of `words` plus EOS, padded to `length`."""
        table = self.outputs if out else self.inputs
        ids = [table.index(w) for w in words] + [table.index(EOS)]
        if len(ids) > length:
            raise ValueError(f"{' '.join(words)!r} is longer than {length - 1} symbols")
        return np.array(ids + [0] * (length - len(ids)), np.int32)

    def decode(self, tokens: Int[np.ndarray, " n"], *, out: bool) -> tuple[str, ...]:
        """The symbols of `tokens` up to the first EOS (padding and SOS dropped)."""
        table = self.outputs if out else self.inputs
        words = []
        for t in np.asarray(tokens).tolist():
            if table[t] == EOS:
                break
            if table[t] not in (PAD, SOS):
                words.append(table[t])
        return tuple(words)


def extra_directions(n: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The `n` extra directions of `around_right` and their turns: `forward` and `backward`
    (the paper's two), then `Direction3` ... `DirectionN`."""
    words = EXTRA_DIRECTIONS + tuple(f"Direction{i}" for i in range(3, n + 1))
    turns = EXTRA_TURNS + tuple(f"I_DIRECTION{i}" for i in range(3, n + 1))
    return words[:n], turns[:n]


def vocabulary(experiment: str, num_extra_directions: int = 2) -> Vocabulary:
    """The input and output symbols of an experiment."""
    words: list[str] = list(scan.INPUT_WORDS)
    actions: list[str] = list(scan.ACTIONS)
    if experiment in _AUGMENTED:
        words += EXTRA_PRIMITIVES
        actions += EXTRA_ACTIONS
    elif experiment == "around_right":
        extra_words, extra_turns = extra_directions(num_extra_directions)
        words += extra_words
        actions += extra_turns
    elif experiment not in ("permutation", *STANDARD):
        raise ValueError(
            f"unknown experiment {experiment!r}; choose permutation, augmentation, "
            f"around_right, length, or a standard seq2seq baseline: {', '.join(STANDARD)}."
        )
    return Vocabulary(IN_SPECIALS + tuple(words), OUT_SPECIALS + tuple(actions))


def _slots(experiment: Experiment) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The template words relabelled per episode and their true meanings."""
    if experiment in ("around_right", "standard_around_right"):
        return scan.DIRECTIONS, _TURNS
    return scan.PRIMITIVES, _PRIMITIVE_ACTIONS


def _candidates(
    experiment: Experiment, num_extra_directions: int = 2
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The words the slots may be written as, and the meanings they may take (for
    `standard_augmentation`, in pairs: the i-th word always means the i-th action)."""
    if experiment in _AUGMENTED:
        return scan.PRIMITIVES + EXTRA_PRIMITIVES, _PRIMITIVE_ACTIONS + EXTRA_ACTIONS
    if experiment == "around_right":
        extra_words, extra_turns = extra_directions(num_extra_directions)
        return scan.DIRECTIONS + extra_words, _TURNS + extra_turns
    return _slots(experiment)


@functools.cache
def encoded_pairs(
    experiment: Experiment, num_extra_directions: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """Every SCAN command and action sequence as tokens of the experiment's vocabulary:
    `[20910, MAX_IN]` and `[20910, MAX_OUT]`, in the order of `scan.pairs()`."""
    vocab = vocabulary(experiment, num_extra_directions)
    pairs = scan.pairs()
    x = np.stack([vocab.encode(c.split(), MAX_IN, out=False) for c, _ in pairs])
    y = np.stack([vocab.encode(a, MAX_OUT, out=True) for _, a in pairs])
    return x, y


def _index(pairs: tuple[scan.Pair, ...]) -> np.ndarray:
    where = {c: i for i, (c, _) in enumerate(scan.pairs())}
    return np.array([where[c] for c, _ in pairs], np.int32)


def _top_k_sample(key: PRNGKeyArray, pool: Int[Array, " n"], k: int) -> Int[Array, " k"]:
    """`k` distinct elements of `pool`, uniformly (top-k of uniform noise: O(n), no sort)."""
    _, where = jax.lax.top_k(jax.random.uniform(key, pool.shape), k)
    return pool[where]


class ScanEpisodes(AbstractTask):
    """Meta-training episodes on SCAN (Lake 2019, Sections 4.3-4.6); see the module docstring.

    `sample(key)` draws an assignment allowed in training (pool "train") or a validation
    assignment (pool "val"), then `num_support` and `num_query` commands from the pool's
    support and query pools, all distinct, relabelled. `x` holds input tokens `[n, MAX_IN]`,
    `y` output tokens `[n, MAX_OUT]`; the episode's `latent` is its assignment `[slots, 2]`
    (word id, action id).
    """

    experiment: Experiment = eqx.field(static=True)
    vocab: Vocabulary
    num_support: int = eqx.field(static=True)
    num_query: int = eqx.field(static=True)
    commands_x: Int[Array, "n in_len"]
    commands_y: Int[Array, "n out_len"]
    support_pool: Int[Array, " n_support_pool"]
    query_pool: Int[Array, " n_query_pool"]
    val_support_pool: Int[Array, " n_val_support_pool"]
    val_query_pool: Int[Array, " n_val_query_pool"]
    shared_pool: bool = eqx.field(static=True)
    """Whether support and query items come from one pool (then they are drawn together)."""
    slot_words: Int[Array, " slots"]
    slot_actions: Int[Array, " slots"]
    candidate_words: Int[Array, " words"]
    candidate_actions: Int[Array, " actions"]
    forbid_true_assignment: bool = eqx.field(static=True)
    forbidden_pair: tuple[int, int] | None = eqx.field(static=True)
    validation: Int[Array, "n_validation slots 2"]
    """The validation assignments: the true one, or five held out (`validation_kind`)."""
    validation_kind: ScanValidation = eqx.field(static=True)
    jump: int = eqx.field(static=True)
    """Index of the command "jump" (`standard` and `standard_augmentation` add it to every
    batch)."""
    jump_word: int = eqx.field(static=True)
    """Token of the word "jump"."""

    @property
    def io(self) -> IOSpec:
        """Commands `[MAX_IN]` and action sequences `[MAX_OUT]`, int32 token ids of the
        experiment's vocabulary; predictions are logits over the output tokens."""
        return IOSpec.sequences(
            x_len=self.commands_x.shape[-1],
            y_len=self.commands_y.shape[-1],
            x_vocab=len(self.vocab.inputs),
            y_vocab=len(self.vocab.outputs),
        )

    def pools(self) -> tuple[str, ...]:
        return ("train",) if self.experiment in STANDARD else ("train", "val")

    def _draw(self, key: PRNGKeyArray) -> Int[Array, "slots 2"]:
        """One assignment, uniformly among those of the candidates (no constraints)."""
        k_words, k_actions = jax.random.split(key)
        n = self.slot_words.shape[0]
        words = _top_k_sample(k_words, self.candidate_words, n)
        actions = _top_k_sample(k_actions, self.candidate_actions, n)
        if self.experiment == "permutation":  # the words stay; only their meanings move
            words = self.slot_words
        return jnp.stack([words, actions], axis=-1)

    def allowed(self, assignment: Int[Array, "slots 2"]) -> Bool[Array, ""]:
        """Whether training may draw `assignment` (see the module docstring)."""
        ok = jnp.array(True)
        if self.forbid_true_assignment:
            true = jnp.stack([self.slot_words, self.slot_actions], axis=-1)
            ok &= ~same_assignment(assignment, true)
        if self.forbidden_pair is not None:
            word, action = self.forbidden_pair
            ok &= ~jnp.any((assignment[:, 0] == word) & (assignment[:, 1] == action))
        for v in range(self.validation.shape[0]):
            ok &= ~same_assignment(assignment, self.validation[v])
        return ok

    def assignment(self, key: PRNGKeyArray, pool: str = "train") -> Int[Array, "slots 2"]:
        """An assignment of `pool`: a random allowed one ("train"), or a validation one."""
        if pool == "val":
            return self.validation[jax.random.randint(key, (), 0, self.validation.shape[0])]
        if pool != "train":
            raise ValueError(f"unknown pool {pool!r}; the pools are {self.pools()}")

        def body(state):
            key, _ = state
            key, sub = jax.random.split(key)
            return key, self._draw(sub)

        def rejected(state):
            return ~self.allowed(state[1])

        key, sub = jax.random.split(key)
        return jax.lax.while_loop(rejected, body, (key, self._draw(sub)))[1]

    def relabel(
        self,
        assignment: Int[Array, "slots 2"],
        x: Int[Array, "*n in_len"],
        y: Int[Array, "*n out_len"],
    ) -> tuple[Int[Array, "*n in_len"], Int[Array, "*n out_len"]]:
        """Commands and action sequences rewritten under `assignment`."""
        in_map = jnp.arange(len(self.vocab.inputs)).at[self.slot_words].set(assignment[:, 0])
        out_map = jnp.arange(len(self.vocab.outputs)).at[self.slot_actions].set(assignment[:, 1])
        return in_map[x], out_map[y]

    def items(
        self, key: PRNGKeyArray, pool: str = "train"
    ) -> tuple[Int[Array, " support"], Int[Array, " query"]]:
        """The commands (indices of `commands_x`) of an episode's support and query sets:
        distinct, from the support and query pools of `pool`."""
        support_pool, query_pool = self.support_pool, self.query_pool
        if pool == "val":
            support_pool, query_pool = self.val_support_pool, self.val_query_pool
        k_support, k_query = jax.random.split(key)
        if self.shared_pool:  # one draw, dealt: queries first, then the support
            drawn = _top_k_sample(k_query, query_pool, self.num_query + self.num_support)
            return drawn[self.num_query :], drawn[: self.num_query]
        support = _top_k_sample(k_support, support_pool, self.num_support)
        return support, _top_k_sample(k_query, query_pool, self.num_query)

    def _standard(self, key: PRNGKeyArray) -> Episode:
        """A training batch of a standard seq2seq baseline (see the module docstring)."""
        true = jnp.stack([self.slot_words, self.slot_actions], axis=-1)
        with_jump = self.experiment in ("standard", "standard_augmentation")
        query = _top_k_sample(key, self.query_pool, self.num_query - with_jump)
        qx, qy = self.commands_x[query], self.commands_y[query]
        if self.experiment == "standard_augmentation":  # each command its own primitives

            def relabel(k, x, y):
                # 4 distinct primitives of the 23 but jump (only ever seen alone); the i-th
                # candidate word always means the i-th candidate action
                noise = jax.random.uniform(k, self.candidate_words.shape)
                _, pick = jax.lax.top_k(
                    jnp.where(self.candidate_words == self.jump_word, -1.0, noise), 4
                )
                words, actions = self.candidate_words[pick], self.candidate_actions[pick]
                return self.relabel(jnp.stack([words, actions], axis=-1), x, y)

            keys = jax.random.split(jax.random.fold_in(key, 1), query.shape[0])
            qx, qy = jax.vmap(relabel)(keys, qx, qy)
        if with_jump:
            jx, jy = self.commands_x[self.jump], self.commands_y[self.jump]
            qx = jnp.concatenate([qx, jx[None]])
            qy = jnp.concatenate([qy, jy[None]])
        support = self.support_pool[: self.num_support]
        sx, sy = self.commands_x[support], self.commands_y[support]
        return Episode(Split(sx, sy), Split(qx, qy), true.astype(jnp.float32))

    def sample(self, key: PRNGKeyArray, pool: str = "train") -> Episode:
        k_assign, k_items = jax.random.split(key)
        if self.experiment in STANDARD:  # fixed meanings, no support
            if pool != "train":
                raise ValueError(f"unknown pool {pool!r}; the pools are {self.pools()}")
            return self._standard(k_items)
        assignment = self.assignment(k_assign, pool)
        support, query = self.items(k_items, pool)
        sx, sy = self.relabel(assignment, self.commands_x[support], self.commands_y[support])
        qx, qy = self.relabel(assignment, self.commands_x[query], self.commands_y[query])
        return Episode(Split(sx, sy), Split(qx, qy), assignment.astype(jnp.float32))

    def test_episodes(self) -> list[Episode]:
        """The fixed test episodes of the experiment (true meanings; every test command of
        its SCAN split as a query). Large: evaluate their queries in batches."""
        x, y = (np.asarray(a) for a in (self.commands_x, self.commands_y))
        if self.experiment == "length":
            train, test = scan.split("length")
            rng = np.random.default_rng(0)
            supports = [rng.choice(_index(train), 100, replace=False) for _ in range(5)]
        elif self.experiment in STANDARD:
            _, test = scan.split(_STANDARD_SPLIT[self.experiment])
            supports = [np.zeros(0, np.int32)]
        else:
            name = "template_around_right" if self.experiment == "around_right" else "addprim_jump"
            _, test = scan.split(name)
            isolated = ["turn left", "turn right"] if name != "addprim_jump" else scan.PRIMITIVES
            support = _index(tuple((c, scan.interpret(c)) for c in isolated))
            supports = [support]
        query = _index(test)
        true = jnp.stack([self.slot_words, self.slot_actions], axis=-1)
        return [
            Episode(
                Split(jnp.asarray(x[s]), jnp.asarray(y[s])),
                Split(jnp.asarray(x[query]), jnp.asarray(y[query])),
                true.astype(jnp.float32),
            )
            for s in supports
        ]

    def loss(self, pred: Float[Array, "n len vocab"], y: Int[Array, "n len"]) -> Float[Array, ""]:
        return sequence_loss(pred, y)

    def metrics(
        self, pred: Float[Array, "n len vocab"], y: Int[Array, "n len"]
    ) -> dict[str, Float[Array, ""]]:
        return sequence_metrics(pred, y)


def same_assignment(a: Int[Array, "slots 2"], b: Int[Array, "slots 2"]) -> Bool[Array, ""]:
    """Whether two assignments pair the same words with the same meanings (in any order)."""
    pairs_a = a[:, 0:1] * 100_000 + a[:, 1:2]
    pairs_b = b[:, 0] * 100_000 + b[:, 1]
    return jnp.all(jnp.any(pairs_a == pairs_b[None, :], axis=1))


def sequence_loss(logits: Float[Array, "n len vocab"], y: Int[Array, "n len"]) -> Float[Array, ""]:
    """Cross-entropy averaged over the non-padding target tokens (EOS included)."""
    logp = jax.nn.log_softmax(logits, axis=-1)
    nll = -jnp.take_along_axis(logp, y[..., None], axis=-1)[..., 0]
    mask = y != 0
    return jnp.sum(nll * mask) / jnp.maximum(jnp.sum(mask), 1)


def sequence_metrics(
    logits: Float[Array, "n len vocab"], y: Int[Array, "n len"]
) -> dict[str, Float[Array, ""]]:
    """`accuracy`: exact match of whole sequences (every target token up to EOS);
    `token_accuracy`: over the non-padding target tokens."""
    right = (jnp.argmax(logits, axis=-1) == y) | (y == 0)
    mask = y != 0
    return {
        "accuracy": jnp.mean(jnp.all(right, axis=-1)),
        "token_accuracy": jnp.sum(right * mask) / jnp.maximum(jnp.sum(mask), 1),
        "loss": sequence_loss(logits, y),
    }


def make_scan_episodes(
    experiment: Experiment,
    *,
    num_support: int | None = None,
    num_query: int = 20,
    validation: ScanValidation = "true-assignment",
    num_extra_directions: int = 2,
    key: PRNGKeyArray,
) -> ScanEpisodes:
    """The episodes of `experiment` (20 + 20 items; 100 + 20 for length). Validation
    episodes: the true assignment (the reference's), or, with `validation="held-out"`, five
    random assignments drawn from `key` and kept out of training. `num_extra_directions`:
    the directions `around_right` may write `left` and `right` as, beside them."""
    if validation not in ("true-assignment", "held-out"):
        raise ValueError(f"validation must be 'true-assignment' or 'held-out', got {validation!r}")
    if num_extra_directions < 0:
        raise ValueError(f"num_extra_directions must be >= 0, got {num_extra_directions}")
    if num_extra_directions != 2 and experiment != "around_right":
        raise ValueError(
            f"extra directions only apply to the around_right experiment, not {experiment!r}; "
            "leave task.num_extra_directions at 2."
        )
    vocab = vocabulary(experiment, num_extra_directions)
    x, y = encoded_pairs(experiment, num_extra_directions)
    everything = np.arange(len(x), dtype=np.int32)
    val_pools = None
    if experiment == "length":
        train, test = scan.split("length")
        support_pool = _index(tuple(p for p in train if len(p[1]) < 12))
        query_pool = _index(tuple(p for p in train if 12 <= len(p[1]) <= 22))
        if validation == "true-assignment":  # the reference's: any training item; test queries
            val_pools = (_index(train), _index(test))
        num_support = 100 if num_support is None else num_support
    elif experiment in STANDARD:
        train, _ = scan.split(_STANDARD_SPLIT[experiment])
        if experiment == "standard_augmentation":  # templates of every primitive but jump
            train = tuple(p for p in train if p[0] != "jump")
        support_pool, query_pool = everything[:0], _index(train)
        num_support = 0 if num_support is None else num_support
    else:  # the whole SCAN set: its held-out meanings are never assigned in training
        support_pool = query_pool = everything
    num_support = 20 if num_support is None else num_support
    val_support_pool, val_query_pool = (
        (support_pool, query_pool) if val_pools is None else val_pools
    )
    shared_pool = experiment in ("permutation", "augmentation", "around_right")
    if not 0 <= num_query <= len(query_pool):
        raise ValueError(f"num_query must be in [0, {len(query_pool)}], got {num_query}")
    room = len(support_pool) - (num_query if shared_pool else 0)
    if not 0 <= num_support <= room:
        raise ValueError(f"num_support must be in [0, {room}], got {num_support}")
    if num_support > len(val_support_pool) or num_query > len(val_query_pool):
        raise ValueError(
            f"validation episodes draw from {len(val_support_pool)} support and "
            f"{len(val_query_pool)} query items; num_support={num_support} and "
            f"num_query={num_query} do not fit"
        )
    if experiment in ("standard", "standard_augmentation") and num_query < 2:
        raise ValueError(
            f"{experiment} batches hold 'jump' and at least one other command: num_query must "
            f"be >= 2, got {num_query}"
        )
    slot_words, slot_actions = _slots(experiment)
    cand_words, cand_actions = _candidates(experiment, num_extra_directions)
    forbidden = None
    if experiment == "augmentation":
        forbidden = (vocab.inputs.index("jump"), vocab.outputs.index("I_JUMP"))
    elif experiment == "around_right":
        forbidden = (vocab.inputs.index("right"), vocab.outputs.index("I_TURN_RIGHT"))
    task = ScanEpisodes(
        experiment=experiment,
        vocab=vocab,
        num_support=num_support,
        num_query=num_query,
        commands_x=jnp.asarray(x),
        commands_y=jnp.asarray(y),
        support_pool=jnp.asarray(support_pool),
        query_pool=jnp.asarray(query_pool),
        val_support_pool=jnp.asarray(val_support_pool),
        val_query_pool=jnp.asarray(val_query_pool),
        shared_pool=shared_pool,
        slot_words=jnp.array([vocab.inputs.index(w) for w in slot_words], jnp.int32),
        slot_actions=jnp.array([vocab.outputs.index(a) for a in slot_actions], jnp.int32),
        candidate_words=jnp.array([vocab.inputs.index(w) for w in cand_words], jnp.int32),
        candidate_actions=jnp.array([vocab.outputs.index(a) for a in cand_actions], jnp.int32),
        forbid_true_assignment=experiment == "permutation",
        forbidden_pair=forbidden,
        validation=jnp.zeros((0, len(slot_words), 2), jnp.int32),
        validation_kind=validation,
        jump=scan.commands().index("jump"),
        jump_word=vocab.inputs.index("jump"),
    )
    if validation == "true-assignment":
        true = jnp.stack([task.slot_words, task.slot_actions], axis=-1)
        return eqx.tree_at(lambda t: t.validation, task, true[None])
    # Five validation assignments, drawn first: distinct, and allowed otherwise. (Plain JAX
    # ops, so that a task can be built abstractly, as runs do before compiling.)
    slots = len(slot_words)

    def draw(i, carry):
        found, count = carry
        candidate = task.assignment(jax.random.fold_in(key, i))
        seen = jax.vmap(lambda v: same_assignment(candidate, v))(found)
        take = ~jnp.any(seen & (jnp.arange(NUM_VALIDATION) < count)) & (count < NUM_VALIDATION)
        found = jnp.where(
            take, found.at[jnp.minimum(count, NUM_VALIDATION - 1)].set(candidate), found
        )
        return found, count + take

    empty = jnp.zeros((NUM_VALIDATION, slots, 2), jnp.int32)
    validation, _ = jax.lax.fori_loop(0, 256, draw, (empty, jnp.array(0)))
    return eqx.tree_at(lambda t: t.validation, task, validation)


# --------------------------------------------------------------------------- mutual exclusivity

ME_WORDS = ("dax", "wif", "lug", "zup")
ME_MEANINGS = ("RED", "YELLOW", "GREEN", "BLUE")


class MutualExclusivity(AbstractTask):
    """The mutual-exclusivity episodes of Lake 2019, Section 4.2.

    Each episode maps the 4 pseudowords to the 4 meanings by one of the 24 permutations: 19 for
    training (pool "train"), 5 held out for test (pool "test"), chosen from the key. The support
    set shows 3 of the 4 words in isolation; the 20 queries are random sequences of 2 to 6
    words, translated word by word (the fourth word is among them: its meaning is the one no
    support item shows).
    """

    vocab: Vocabulary
    permutations: Int[Array, "24 4"]
    test_permutations: Int[Array, "5"]
    train_permutations: Int[Array, "19"]
    num_query: int = eqx.field(static=True, default=20)
    min_length: int = eqx.field(static=True, default=2)
    max_length: int = eqx.field(static=True, default=6)

    @property
    def io(self) -> IOSpec:
        """Word sequences and meaning sequences `[max_length + 1]` (EOS included), int32
        token ids; predictions are logits over the output tokens."""
        return IOSpec.sequences(
            x_len=self.max_length + 1,
            y_len=self.max_length + 1,
            x_vocab=len(self.vocab.inputs),
            y_vocab=len(self.vocab.outputs),
        )

    def pools(self) -> tuple[str, ...]:
        return ("train", "test")

    def sample(self, key: PRNGKeyArray, pool: str = "train") -> Episode:
        if pool not in self.pools():
            raise ValueError(f"unknown pool {pool!r}; the pools are {self.pools()}")
        k_perm, k_hidden, k_words, k_len = jax.random.split(key, 4)
        choices = self.train_permutations if pool == "train" else self.test_permutations
        meaning = self.permutations[jax.random.choice(k_perm, choices)]  # word i -> meaning
        hidden = jax.random.randint(k_hidden, (), 0, 4)
        shown = jnp.delete(jnp.arange(4), hidden, assume_unique_indices=True)
        n_in, n_out = len(IN_SPECIALS), len(OUT_SPECIALS)
        eos_in, eos_out = IN_SPECIALS.index(EOS), OUT_SPECIALS.index(EOS)
        length = self.max_length + 1
        sx = jnp.zeros((3, length), jnp.int32).at[:, 0].set(shown + n_in).at[:, 1].set(eos_in)
        sy = jnp.zeros((3, length), jnp.int32).at[:, 0].set(meaning[shown] + n_out)
        sy = sy.at[:, 1].set(eos_out)
        words = jax.random.randint(k_words, (self.num_query, self.max_length), 0, 4)
        lengths = jax.random.randint(
            k_len, (self.num_query, 1), self.min_length, self.max_length + 1
        )
        position = jnp.arange(length)[None, :]
        words = jnp.pad(words, ((0, 0), (0, 1)))
        qx = jnp.where(position < lengths, words + n_in, jnp.where(position == lengths, eos_in, 0))
        qy = jnp.where(
            position < lengths, meaning[words] + n_out, jnp.where(position == lengths, eos_out, 0)
        )
        return Episode(Split(sx, sy), Split(qx, qy), meaning.astype(jnp.float32))

    def loss(self, pred: Float[Array, "n len vocab"], y: Int[Array, "n len"]) -> Float[Array, ""]:
        return sequence_loss(pred, y)

    def metrics(
        self, pred: Float[Array, "n len vocab"], y: Int[Array, "n len"]
    ) -> dict[str, Float[Array, ""]]:
        return sequence_metrics(pred, y)


def make_mutual_exclusivity(*, key: PRNGKeyArray, num_query: int = 20) -> MutualExclusivity:
    """The task with its 5 test permutations drawn from `key`."""
    permutations = np.array(list(itertools.permutations(range(4))), np.int32)
    order = jax.random.permutation(key, len(permutations))
    vocab = Vocabulary(IN_SPECIALS + ME_WORDS, OUT_SPECIALS + ME_MEANINGS)
    return MutualExclusivity(
        vocab=vocab,
        permutations=jnp.asarray(permutations),
        test_permutations=jnp.sort(order[:5]),
        train_permutations=jnp.sort(order[5:]),
        num_query=num_query,
    )


def make(config: ScanEpisodesConfig, *, key: PRNGKeyArray) -> ScanEpisodes:
    """Build the SCAN episodes of `config.experiment` (the factory of the `scan` plugin); held-out
    validation assignments are drawn from `key`."""
    return make_scan_episodes(
        config.experiment,
        num_support=config.num_support,
        num_query=config.num_query,
        validation=config.validation,
        num_extra_directions=config.num_extra_directions,
        key=key,
    )


def make_me(config: MutualExclusivityConfig, *, key: PRNGKeyArray) -> MutualExclusivity:
    """Build the mutual-exclusivity episodes (the factory of the `mutual-exclusivity` plugin);
    the 5 held-out mappings are drawn from `key`."""
    return make_mutual_exclusivity(key=key, num_query=config.num_query)
