"""Configuration dataclasses of the built-in models.

Imported by the plugin specs and the CLI, so it imports no JAX: listing models stays cheap.
"""

import dataclasses
from typing import Literal


@dataclasses.dataclass(frozen=True)
class LinearHypernetConfig:
    """Linear hypernetwork (Schug et al. 2024, Appendix D.3, with the reference code's details)."""

    hidden: int = 128
    """Width of the base network's hidden layers."""
    num_hidden: int = 3
    """Number of hidden layers of the base network."""
    num_templates: int = 32
    """Embedding size T (number of weight templates per layer group); the reference uses 4M."""

    def __post_init__(self):
        if self.hidden < 1:
            raise ValueError(
                f"model.hidden must be >= 1, got {self.hidden}; pass e.g. --model.hidden 128."
            )
        if self.num_hidden < 1:
            raise ValueError(
                f"model.num_hidden must be >= 1, got {self.num_hidden}; pass e.g. --model.num-hidden 3."
            )
        if self.num_templates < 1:
            raise ValueError(
                f"model.num_templates must be >= 1, got {self.num_templates}; "
                "the reference uses 4x the number of teacher modules."
            )


def _positive(name: str, value: int, hint: str) -> None:
    if value < 1:
        raise ValueError(f"model.{name} must be >= 1, got {value}; {hint}")


@dataclasses.dataclass(frozen=True)
class NonlinearHypernetConfig:
    """Nonlinear hypernetwork (Schug et al. 2024, Appendix D.4, with the reference code's
    details): each layer group's embedding passes through an MLP before the linear head."""

    hidden: int = 128
    """Width of the base network's hidden layers."""
    num_hidden: int = 3
    """Number of hidden layers of the base network."""
    num_templates: int = 32
    """Embedding size T per layer group; the reference uses 4M."""
    generator_width: int = 32
    """Width of the generator MLP's hidden layers."""
    generator_depth: int = 4
    """Number of hidden layers of the generator MLP (Linear -> LayerNorm -> ELU each)."""

    def __post_init__(self):
        _positive("hidden", self.hidden, "pass e.g. --model.hidden 128.")
        _positive("num_hidden", self.num_hidden, "pass e.g. --model.num-hidden 3.")
        _positive("num_templates", self.num_templates, "the reference uses 4x the modules.")
        _positive("generator_width", self.generator_width, "the reference uses 32.")
        _positive("generator_depth", self.generator_depth, "the reference uses 4.")


@dataclasses.dataclass(frozen=True)
class ANILConfig:
    """ANIL (Schug et al. 2024, Appendix D.2): a ReLU MLP whose body is meta-learned and whose
    linear readout adapts per task from a meta-learned initialization."""

    hidden: int = 512
    """Width of the hidden layers (the reference uses 512 on the hyperteacher)."""
    num_hidden: int = 3
    """Number of hidden layers."""

    def __post_init__(self):
        _positive("hidden", self.hidden, "pass e.g. --model.hidden 512.")
        _positive("num_hidden", self.num_hidden, "pass e.g. --model.num-hidden 3.")


@dataclasses.dataclass(frozen=True)
class MAMLConfig:
    """MAML (Schug et al. 2024, Appendix D.1): a ReLU MLP whose every parameter adapts per task
    from a meta-learned initialization."""

    hidden: int = 384
    """Width of the hidden layers (the reference uses 384 on the hyperteacher)."""
    num_hidden: int = 3
    """Number of hidden layers."""

    def __post_init__(self):
        _positive("hidden", self.hidden, "pass e.g. --model.hidden 384.")
        _positive("num_hidden", self.num_hidden, "pass e.g. --model.num-hidden 3.")


@dataclasses.dataclass(frozen=True)
class ShallowHypernetConfig:
    """The student of the multi-task teacher-student setting (Schug et al. 2024, Section 3.1):
    a 2-layer ReLU MLP whose first layer is a linear combination of modules weighted by a
    per-task code (the fast leaf, restarted from a fixed random value for every task)."""

    hidden: int = 32
    """Hidden width; the reference uses 2x the teacher's (16)."""
    num_modules: int = 12
    """Number of modules, the size of the inferred code; the reference uses 2x the teacher's (6)."""

    def __post_init__(self):
        _positive("hidden", self.hidden, "pass e.g. --model.hidden 32.")
        _positive("num_modules", self.num_modules, "pass e.g. --model.num-modules 12.")


@dataclasses.dataclass(frozen=True)
class MetaSeq2SeqConfig:
    """Meta seq2seq (Lake 2019, Section 3): biLSTM encoders, key-value memory of the support
    set, attention LSTM decoder. The lesions of Section 4.3 are switches."""

    hidden: int = 200
    """m: units per LSTM layer and direction, and the embedding size."""
    layers: int = 2
    """LSTM layers of each encoder and of the decoder."""
    dropout: float = 0.5
    """Dropout on the symbol embeddings and between LSTM layers."""
    memory: bool = True
    """Read the support set through the key-value memory; off: the standard seq2seq baseline."""
    decoder_attention: bool = True
    """Luong attention of the decoder over the stepwise context; off: a lesion of Table 2."""
    support_loss: bool = True
    """Also score the support items as queries in training; off: a lesion of Table 2."""

    def __post_init__(self):
        _positive("hidden", self.hidden, "--model.hidden 200")
        _positive("layers", self.layers, "--model.layers 2")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"model.dropout must be in [0, 1), got {self.dropout}.")


AgentEncoders = Literal["slow", "fast", "both"]
RIMsSplit = Literal["meta", "flip", "attention"]
RIMsInitialState = Literal["zeros", "learned"]
RIMsInputAttention = Literal["null-slot", "modules"]


def _check_agent(config) -> None:
    _positive("image_dim", config.image_dim, "BabyAI uses --model.image-dim 128.")
    _positive("instr_dim", config.instr_dim, "BabyAI uses --model.instr-dim 128.")
    _positive("head_hidden", config.head_hidden, "BabyAI uses --model.head-hidden 64.")
    if config.encoders not in ("slow", "fast", "both"):
        raise ValueError(
            f"model.encoders must be 'slow', 'fast' or 'both', got {config.encoders!r}."
        )


@dataclasses.dataclass(frozen=True)
class LSTMAgentConfig:
    """The "vanilla" agent of Meta-RIMs (Madan et al. 2021, Section 4): BabyAI's actor-critic
    (cnn1 image encoder, instruction GRU, actor and critic heads) with an LSTM memory. Its
    fast leaves (the "meta-LSTM" ablation) are the LSTM and the actor head."""

    memory: int = 128
    """Size of the LSTM's state (BabyAI's `memory_dim`)."""
    image_dim: int = 128
    """Size of the image embedding (channels of the last convolution)."""
    instr_dim: int = 128
    """Size of the word embeddings and of the instruction GRU's state."""
    head_hidden: int = 64
    """Width of the actor's and the critic's hidden layer."""
    encoders: AgentEncoders = "slow"
    """The timescale of the image and instruction encoders in two-timescale training: "slow",
    "fast", or "both" (trained by the fast and the slow loop)."""

    def __post_init__(self):
        _positive("memory", self.memory, "BabyAI uses --model.memory 128.")
        _check_agent(self)


@dataclasses.dataclass(frozen=True)
class RIMsAgentConfig:
    """The "modular" agent of Meta-RIMs (Madan et al. 2021, Section 2): BabyAI's actor-critic
    with Recurrent Independent Mechanisms as its memory. Its fast leaves are the module cells
    and the actor head (split "meta"), or the attentions and the actor head (split "flip")."""

    num_modules: int = 5
    """N, the number of modules (the paper's, for every environment)."""
    top_k: int = 3
    """k, the modules active at every step (the paper's); k = N updates every module."""
    hidden: int = 32
    """h, the size of one module's state (N h = 160, near BabyAI's memory of 128)."""
    key_size: int = 64
    """Size of the input attention's keys and queries."""
    value_size: int | None = None
    """Size of the input attention's values (the modules' input); `None`: 4 h."""
    comm_heads: int = 4
    """Heads of the communication attention."""
    comm_key_size: int = 16
    """Size of the communication's keys, queries and values per head."""
    dropout: float = 0.1
    """Dropout on both attentions' outputs, when the agent is called with a key."""
    communication: bool = True
    """Whether the modules read from each other (the communication attention)."""
    image_dim: int = 128
    """Size of the image embedding (channels of the last convolution)."""
    instr_dim: int = 128
    """Size of the word embeddings and of the instruction GRU's state."""
    head_hidden: int = 64
    """Width of the actor's and the critic's hidden layer."""
    split: RIMsSplit = "meta"
    """Fast and slow leaves: "meta" (module cells fast, attentions slow: Meta-RIMs), "flip"
    (attentions fast, module cells slow: the paper's metaFlip ablation) or "attention" (the
    attentions slow, everything else fast: for the slowLR ablation, one PPO loop with
    `--algorithm.slow-lr-factor 0.25`)."""
    encoders: AgentEncoders = "slow"
    """The timescale of the image and instruction encoders in two-timescale training: "slow",
    "fast", or "both" (trained by the fast and the slow loop)."""
    initial_state: RIMsInitialState = "zeros"
    """The modules' state at an episode's start: "zeros" (the RIMs authors') or "learned", one
    learned `(h, c)` per module (symmetry breaking: modules that differ from the first step)."""
    query_bias: bool = False
    """A learned bias per module on the input query (symmetry breaking: a module whose state
    is zero still scores, by the input)."""
    score_noise: float = 0.0
    """Scale of Gumbel noise on the top-k scores while training (symmetry breaking: a losing
    module sometimes wins, and so gets a gradient); 0: none."""
    input_attention: RIMsInputAttention = "null-slot"
    """"null-slot": the RIMs reference cell's input attention (per module, a softmax over a
    null slot and the input); "modules": the RIMs authors' RL code's (a softmax across
    modules, made sparse to the top k)."""

    def __post_init__(self):
        _positive("num_modules", self.num_modules, "the paper uses --model.num-modules 5.")
        _positive("top_k", self.top_k, "the paper uses --model.top-k 3.")
        if self.top_k > self.num_modules:
            raise ValueError(
                f"model.top_k ({self.top_k}) must be <= model.num_modules ({self.num_modules})."
            )
        _positive("hidden", self.hidden, "pass e.g. --model.hidden 32.")
        _positive("key_size", self.key_size, "the reference uses --model.key-size 64.")
        if self.value_size is not None:
            _positive("value_size", self.value_size, "or leave it unset (4 x hidden).")
        _positive("comm_heads", self.comm_heads, "the reference uses --model.comm-heads 4.")
        _positive("comm_key_size", self.comm_key_size, "the reference uses 16.")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"model.dropout must be in [0, 1), got {self.dropout}.")
        if self.split not in ("meta", "flip", "attention"):
            raise ValueError(
                f"model.split must be 'meta', 'flip' or 'attention', got {self.split!r}."
            )
        if self.initial_state not in ("zeros", "learned"):
            raise ValueError(
                f"model.initial_state must be 'zeros' or 'learned', got {self.initial_state!r}."
            )
        if not self.score_noise >= 0:
            raise ValueError(
                f"model.score_noise must be >= 0, got {self.score_noise}: pass e.g. "
                "--model.score-noise 0.01, or 0 for none."
            )
        if self.input_attention not in ("null-slot", "modules"):
            raise ValueError(
                "model.input_attention must be 'null-slot' or 'modules', got "
                f"{self.input_attention!r}."
            )
        _check_agent(self)
