"""Lake 2019, Compositional generalization through meta sequence-to-sequence learning
(NeurIPS): the presets and sweeps of its Sections 4.2-4.6 and Tables 2-3, registered as the
`lake2019` experiment."""

from runs import (
    EvalConfig,
    Experiment,
    InContextConfig,
    OuterConfig,
    Preset,
    RunConfig,
    Sweep,
    SweepRun,
    TrainConfig,
)
from tasks.config import (
    MutualExclusivityConfig,
    ScanEpisodesConfig,
    ScanExperiment,
)
from zoo.config import (
    MetaSeq2SeqConfig,
)

from .claims import CLAIMS

PRESETS: dict[str, tuple[str, TrainConfig]] = {}

# --------------------------------------------------------------------------- Lake 2019


def _lake(task, **model) -> TrainConfig:
    """Lake 2019, Section 4.1: m = 200, 2 layers, dropout 0.5; 10,000 episodes, one per step;
    Adam 1e-3, divided by 10 halfway (the reference also resets Adam's state there; we do
    not); gradient norm clipped at 50 (the reference clips encoder and decoder separately, we
    clip the whole gradient)."""
    return TrainConfig(
        task=task,
        model=MetaSeq2SeqConfig(**model),
        task_name="mutual-exclusivity" if isinstance(task, MutualExclusivityConfig) else "scan",
        model_name="meta-seq2seq",
        algorithm=InContextConfig(
            outer=OuterConfig(
                lr=1e-3, weight_decay=0.0, clip=50.0, schedule="piecewise", meta_batch=1
            )
        ),
        eval=EvalConfig(every=2500, tasks=64, batch=16, query_batch=512),
        run=RunConfig(steps=10_000, steps_per_call=50, checkpoint_every=1000),
    )


def _standard_seq2seq(experiment: ScanExperiment) -> TrainConfig:
    """The standard seq2seq baseline of an experiment: the same encoder and decoder without
    the memory, trained on batches of 40 commands with fixed meanings."""
    return _lake(ScanEpisodesConfig(experiment, num_query=40), memory=False, support_loss=False)


# Lake 2019: each experiment's preset, the paper's words for it and the paper's exact-match
# accuracy (a fraction; Section 4.2 and Tables 2-3). The descriptions and the sweeps' paper
# marks are both drawn from here.
LAKE_PAPER: dict[str, tuple[str, float, TrainConfig]] = {
    "lake2019/mutual-exclusivity": ("Section 4.2", 1.0, _lake(MutualExclusivityConfig())),
    "lake2019/addjump-permutation": (
        "Table 2, permutation meta-training",
        0.9995,
        _lake(ScanEpisodesConfig("permutation")),
    ),
    "lake2019/addjump-permutation-no-support-loss": (
        "Table 2, lesion without support loss",
        0.0543,
        _lake(ScanEpisodesConfig("permutation"), support_loss=False),
    ),
    "lake2019/addjump-permutation-no-attention": (
        "Table 2, lesion without decoder attention",
        0.1032,
        _lake(ScanEpisodesConfig("permutation"), decoder_attention=False),
    ),
    "lake2019/addjump-standard-seq2seq": (
        "Table 2, standard seq2seq on the plain add-jump split, batches of 40",
        0.0003,
        _standard_seq2seq("standard"),
    ),
    "lake2019/addjump-augmentation": (
        "Table 2, augmentation meta-training",
        0.9871,
        _lake(ScanEpisodesConfig("augmentation")),
    ),
    "lake2019/addjump-augmentation-no-support-loss": (
        "Table 2, augmentation, lesion without support loss",
        0.9948,
        _lake(ScanEpisodesConfig("augmentation"), support_loss=False),
    ),
    "lake2019/addjump-augmentation-no-attention": (
        "Table 2, augmentation, lesion without decoder attention",
        0.0929,
        _lake(ScanEpisodesConfig("augmentation"), decoder_attention=False),
    ),
    "lake2019/around-right": (
        "Table 3, around right",
        0.9996,
        _lake(ScanEpisodesConfig("around_right")),
    ),
    "lake2019/length": ("Table 3, length", 0.1664, _lake(ScanEpisodesConfig("length"))),
    "lake2019/addjump-augmentation-standard-seq2seq": (
        "Table 2, standard seq2seq on SCAN augmented with 20 primitives of fixed meaning, "
        "batches of 40",
        0.1226,
        _standard_seq2seq("standard_augmentation"),
    ),
    "lake2019/around-right-standard-seq2seq": (
        "Table 3, standard seq2seq on the around-right split, batches of 40",
        0.0,
        _standard_seq2seq("standard_around_right"),
    ),
    "lake2019/length-standard-seq2seq": (
        "Table 3, standard seq2seq on the length split, batches of 40",
        0.0771,
        _standard_seq2seq("standard_length"),
    ),
    "lake2019/around-right-20-directions": (
        "Section 4.5, around right meta-trained with 20 extra directions instead of 2",
        0.3633,
        _lake(ScanEpisodesConfig("around_right", num_extra_directions=20)),
    ),
}
LAKE_EXPERIMENTS = {
    name: (f"{words} (paper: {100 * value:.4g}%)", config)
    for name, (words, value, config) in LAKE_PAPER.items()
}
PRESETS.update(LAKE_EXPERIMENTS)


def get_preset(name: str) -> TrainConfig:
    """The config of this experiment's preset `name` (its full name, `lake2019/...`)."""
    return PRESETS[name][1]


# Lake 2019, Tables 2-3: the sweep's label of each experiment and its preset.
LAKE_TABLE = {
    "permutation": "lake2019/addjump-permutation",
    "no-support-loss": "lake2019/addjump-permutation-no-support-loss",
    "no-attention": "lake2019/addjump-permutation-no-attention",
    "standard-seq2seq": "lake2019/addjump-standard-seq2seq",
    "augmentation": "lake2019/addjump-augmentation",
    "augmentation-no-support-loss": "lake2019/addjump-augmentation-no-support-loss",
    "augmentation-no-attention": "lake2019/addjump-augmentation-no-attention",
    "around-right": "lake2019/around-right",
    "length": "lake2019/length",
    "augmentation-standard-seq2seq": "lake2019/addjump-augmentation-standard-seq2seq",
    "around-right-standard-seq2seq": "lake2019/around-right-standard-seq2seq",
    "length-standard-seq2seq": "lake2019/length-standard-seq2seq",
    "around-right-20-directions": "lake2019/around-right-20-directions",
}


def _lake_tables() -> Sweep:
    runs = [
        SweepRun(label, get_preset(preset), {"experiment": label})
        for label, preset in LAKE_TABLE.items()
    ]
    return Sweep(
        "Lake 2019, Tables 2-3: meta seq2seq, its lesions and standard seq2seq on SCAN's "
        "add-jump, around-right and length splits (10,000 episodes each)",
        tuple(runs),
        metrics=("test_episodes.accuracy",),
        x="experiment",
        paper={
            label: {"test_episodes.accuracy": LAKE_PAPER[preset][1]}
            for label, preset in LAKE_TABLE.items()
        },
    )


def _lake_mutual_exclusivity() -> Sweep:
    return Sweep(
        "Lake 2019, Section 4.2: mutual exclusivity, held-out word-meaning mappings",
        (
            SweepRun(
                "mutual-exclusivity", get_preset("lake2019/mutual-exclusivity"), {"task": "ME"}
            ),
        ),
        metrics=("test.accuracy",),
        x="task",
        paper={
            "mutual-exclusivity": {"test.accuracy": LAKE_PAPER["lake2019/mutual-exclusivity"][1]}
        },
    )


SWEEPS: dict[str, Sweep] = {
    "lake2019/tables2-3": _lake_tables(),
    "lake2019/mutual-exclusivity": _lake_mutual_exclusivity(),
}


def experiment() -> Experiment:
    """The factory of the `lake2019` experiment (entry point `zoo.experiments`)."""
    return Experiment(
        presets={
            name.removeprefix("lake2019/"): Preset(config, description)
            for name, (description, config) in PRESETS.items()
        },
        sweeps={
            name.removeprefix("lake2019/"): (lambda presets, sweep=sweep: sweep)
            for name, sweep in SWEEPS.items()
        },
        description="Lake 2019, Compositional generalization through meta sequence-to-sequence learning (NeurIPS)",
        claims=CLAIMS,
    )
