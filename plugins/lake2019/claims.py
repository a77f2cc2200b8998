"""The claims of Lake 2019 (NeurIPS), Compositional generalization through meta
sequence-to-sequence learning, each scored against a committed export under `docs/figures/`
(`zoo scoreboard --show lake2019`; the rule is `runs.scoreboard`'s).

The paper gives a number (exact match on the split's test commands, mean of five runs) for
every cell of Tables 2 and 3, for mutual exclusivity (Section 4.2) and for around right with 20
extra directions (Section 4.5); the sweeps' `paper` values are those numbers, and the cells
below reuse them. Its readings (the meta seq2seq learner beats standard seq2seq and its
lesions; augmented training helps standard seq2seq; the support loss matters with permutation
meta-training and not with augmentation; 20 extra directions hurt around right; nothing
generalizes to longer outputs, meta seq2seq the least badly) are written as comparisons
(`than`) with both of the paper's values.

How the rows were chosen, before reading any verdict: every cell reads the runs after issue
20's fixes (`lake2019/tables2-3-after-fixes`, five seeds per row, the paper's count, at the
paper's model size and 10,000 episodes), not the superseded one-seed table before them
(`lake2019-tables2-3`). The length meta seq2seq row mixes devices (seed 0 on a lent H100,
seeds 1-4 on CPU) under one label, so it has one row; the H200 run of it stopped at 9,000
episodes (`lake2019/length-h200-unfinished`) has no final evaluation and no row. Syntactic
attention (Russin et al. 2019, the paper's [28]) is quoted by the paper in both tables; the zoo
has no such model, so its three cells name where an export would go and read "not run yet".
"""

from runs import Claim

_TABLES = "lake2019/tables2-3-after-fixes"
_ME = "lake2019/mutual-exclusivity"
_ACC = "test_episodes.accuracy"
_SWEEP = "tables2-3"

# Scales, as the presets (`plugins/lake2019/presets.py`) and docs/papers/lake2019.md state them.
_META = (
    "CPU, one core per run; the paper's model (m = 200, 2 layers, dropout 0.5, 4.0 M "
    "parameters) and its 10,000 episodes, one per step; 5 seeds (paper 5)"
)
_STANDARD = (
    "CPU, one core per run; the paper's encoder and decoder without the memory, 10,000 steps "
    "of batches of 40 commands; 5 seeds (paper 5)"
)
_LENGTH = (
    "seed 0 on a lent H100, seeds 1-4 on CPU (one core each); the paper's model and its "
    "10,000 episodes; 5 seeds (paper 5)"
)
_ME_SCALE = (
    "CPU, one core per run; the paper's model and its 10,000 episodes, one per step; 5 seeds"
)
_NOT_IN_ZOO = "no zoo model: the paper quotes Russin et al. 2019 [28]"


def _cell(text: str, label: str, paper: float, scale: str) -> Claim:
    return Claim(text, _TABLES, label, _ACC, paper=paper, sweep=_SWEEP, scale=scale)


def _beats(text: str, label: str, paper: float, than: str, paper_than: float, scale: str) -> Claim:
    return Claim(
        text,
        _TABLES,
        label,
        _ACC,
        paper=paper,
        than=than,
        paper_than=paper_than,
        sweep=_SWEEP,
        scale=scale,
    )


CLAIMS: tuple[Claim, ...] = (
    # Section 4.2: mutual exclusivity.
    Claim(
        "mutual exclusivity, held-out word-meaning mappings (Section 4.2)",
        _ME,
        "mutual-exclusivity",
        "test.accuracy",
        paper=1.0,
        sweep="mutual-exclusivity",
        scale=_ME_SCALE,
    ),
    # Table 2: add jump, its cells.
    _cell("add jump, permutation meta-training (Table 2)", "permutation", 0.9995, _META),
    _cell(
        "add jump, permutation, without support loss (Table 2)", "no-support-loss", 0.0543, _META
    ),
    _cell(
        "add jump, permutation, without decoder attention (Table 2)", "no-attention", 0.1032, _META
    ),
    _cell("add jump, standard seq2seq (Table 2)", "standard-seq2seq", 0.0003, _STANDARD),
    _cell("add jump, augmentation meta-training (Table 2)", "augmentation", 0.9871, _META),
    _cell(
        "add jump, augmentation, without support loss (Table 2)",
        "augmentation-no-support-loss",
        0.9948,
        _META,
    ),
    _cell(
        "add jump, augmentation, without decoder attention (Table 2)",
        "augmentation-no-attention",
        0.0929,
        _META,
    ),
    _cell(
        "add jump, standard seq2seq on the augmented batches (Table 2)",
        "augmentation-standard-seq2seq",
        0.1226,
        _STANDARD,
    ),
    Claim(
        "add jump, syntactic attention (Table 2)",
        _TABLES,
        "syntactic-attention",
        _ACC,
        paper=0.784,
        scale=_NOT_IN_ZOO,
    ),
    # Table 2: its readings.
    _beats(
        "add jump: meta seq2seq (permutation) beats standard seq2seq (Table 2)",
        "permutation",
        0.9995,
        "standard-seq2seq",
        0.0003,
        _META,
    ),
    _beats(
        "add jump, permutation: the support loss matters (Table 2)",
        "permutation",
        0.9995,
        "no-support-loss",
        0.0543,
        _META,
    ),
    _beats(
        "add jump, permutation: decoder attention matters (Table 2)",
        "permutation",
        0.9995,
        "no-attention",
        0.1032,
        _META,
    ),
    _beats(
        "add jump: meta seq2seq (augmentation) beats standard seq2seq on the same "
        "augmentation (Table 2)",
        "augmentation",
        0.9871,
        "augmentation-standard-seq2seq",
        0.1226,
        _META,
    ),
    _beats(
        "add jump, augmentation: decoder attention still matters (Table 2)",
        "augmentation",
        0.9871,
        "augmentation-no-attention",
        0.0929,
        _META,
    ),
    _beats(
        "add jump, no support loss: augmentation solves what permutation does not (Table 2)",
        "augmentation-no-support-loss",
        0.9948,
        "no-support-loss",
        0.0543,
        _META,
    ),
    _beats(
        "add jump, standard seq2seq: the augmented training generalizes better (Table 2)",
        "augmentation-standard-seq2seq",
        0.1226,
        "standard-seq2seq",
        0.0003,
        _STANDARD,
    ),
    # Table 3: around right and length, its cells.
    _cell("around right, meta seq2seq (Table 3)", "around-right", 0.9996, _META),
    _cell(
        "around right, standard seq2seq (Table 3)", "around-right-standard-seq2seq", 0.0, _STANDARD
    ),
    _cell("length, meta seq2seq (Table 3)", "length", 0.1664, _LENGTH),
    _cell("length, standard seq2seq (Table 3)", "length-standard-seq2seq", 0.0771, _STANDARD),
    Claim(
        "around right, syntactic attention (Table 3)",
        _TABLES,
        "syntactic-attention-around-right",
        _ACC,
        paper=0.289,
        scale=_NOT_IN_ZOO,
    ),
    Claim(
        "length, syntactic attention (Table 3)",
        _TABLES,
        "syntactic-attention-length",
        _ACC,
        paper=0.152,
        scale=_NOT_IN_ZOO,
    ),
    # Table 3: its readings.
    _beats(
        "around right: meta seq2seq beats standard seq2seq (Table 3)",
        "around-right",
        0.9996,
        "around-right-standard-seq2seq",
        0.0,
        _META,
    ),
    _beats(
        "length: both fail, meta seq2seq above standard seq2seq (Table 3)",
        "length",
        0.1664,
        "length-standard-seq2seq",
        0.0771,
        _LENGTH,
    ),
    # Section 4.5: 20 extra directions.
    _cell(
        "around right, meta-trained with 20 extra directions instead of 2 (Section 4.5)",
        "around-right-20-directions",
        0.3633,
        _META,
    ),
    _beats(
        "around right: 20 extra directions hurt meta-training (Section 4.5)",
        "around-right",
        0.9996,
        "around-right-20-directions",
        0.3633,
        _META,
    ),
)
