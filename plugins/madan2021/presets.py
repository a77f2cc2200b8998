"""Madan et al. 2021, Fast and slow learning of recurrent independent mechanisms (ICLR): the
LSTM, RIMs and Meta-RIMs agents on MiniGrid / BabyAI levels, registered as the `madan2021`
experiment."""

import dataclasses
from typing import Any

from runs import EvalConfig, Experiment, PPOConfig, Preset, RunConfig, Sweep, SweepRun, TrainConfig
from tasks.config import (
    DoorKey5x5Config,
    GoToLocalConfig,
    GoToObjConfig,
    GoToRedBallConfig,
    GoToRedBallGreyConfig,
    PickupDistConfig,
    PickupLocConfig,
)
from zoo.config import (
    LSTMAgentConfig,
    RIMsAgentConfig,
)

from .claims import CLAIMS
from .config import MetaRIMsConfig

PRESETS: dict[str, tuple[str, TrainConfig]] = {}

# Madan et al. 2021: the agents on MiniGrid / BabyAI levels with BabyAI's PPO
# (docs/specs/meta-rims.md, B3) or the fast and slow loops (B4). The paper gives no frame
# budgets; these are CPU-scale budgets (1M frames), measured runs in docs/papers/madan2021.md.
MADAN_LEVELS = {
    "doorkey-5x5": DoorKey5x5Config(),
    "gotoobj": GoToObjConfig(),
    "gotoredballgrey": GoToRedBallGreyConfig(),
    "gotoredball": GoToRedBallConfig(),
    "gotolocal": GoToLocalConfig(),
    "pickuploc": PickupLocConfig(),
    "pickupdist": PickupDistConfig(),
}
"""The levels of the presets, by the presets' short names."""
MADAN_AGENTS = {
    "lstm": ("lstm-agent", "ppo"),
    "rims": ("rims-agent", "ppo"),
    "meta-rims": ("rims-agent", "meta-rims"),
    "meta-lstm": ("lstm-agent", "meta-rims"),
}
"""The paper's agents: vanilla (LSTM), modular (RIMs), Meta-RIMs and meta-LSTM (Fig. 5b), as
(model, algorithm)."""
MADAN_CPU_FRAMES = 1_000_000


def madan_preset(level: str, agent: str) -> str:
    """The name of the Madan et al. 2021 preset of `level` and `agent`."""
    return f"madan2021/{level}-{agent}"


FAITHFUL_RIMS = {"input_attention": "modules"}
"""The RIMs cell of the presets (RIMs and Meta-RIMs alike): the input attention of the RIMs
authors' RL code, a softmax across modules made sparse to the top k. With the reference cell's
null-slot attention two of five modules die during training (a module whose state is zero
scores 0 and gets no gradient); with this one every module keeps acting (DoorKey-5x5)."""
FAITHFUL_META_MODEL = {"encoders": "both"}
"""The encoders of the two-timescale agents: trained by both loops. The paper puts the module
cells in the fast loop and the attentions in the slow one and does not place the encoders; in
both loops they are the shared trunk each loss trains."""
FAITHFUL_META = {"outer_data": "reuse"}
"""The slow loop of the presets: on the fast iterations' own frames (the paper's Section 2.2
reading), four fast iterations per step, so that Meta-RIMs takes as many policy updates per
frame as PPO."""


def _madan(
    level: str,
    agent: str,
    frames: int = MADAN_CPU_FRAMES,
    model: dict | None = None,
    reading: str = "faithful",
    **algorithm,
) -> TrainConfig:
    """`agent` on `level` for about `frames` environment frames (`model` and `algorithm`
    override fields of the agent's and the algorithm's settings).

    `reading="faithful"` (the presets) starts from `FAITHFUL_RIMS`, `FAITHFUL_META_MODEL` and
    `FAITHFUL_META`; `reading="first"` from the model's and `MetaRIMsConfig`'s plain fields
    with the slow loop on `fresh` frames: the reading of the runs committed before 0.2.0 (the
    sweeps that hold them keep it, so that `zoo sweep --reuse` finds them)."""
    if reading not in ("faithful", "first"):
        raise ValueError(f"reading must be 'faithful' or 'first', got {reading!r}.")
    model_name, algorithm_name = MADAN_AGENTS[agent]
    meta = algorithm_name == "meta-rims"
    if reading == "faithful":
        model = {
            **(FAITHFUL_RIMS if model_name == "rims-agent" else {}),
            **(FAITHFUL_META_MODEL if meta else {}),
            **(model or {}),
        }
        if meta:
            algorithm = {**FAITHFUL_META, **algorithm}
    settings: MetaRIMsConfig | PPOConfig
    if meta:
        # `fresh` runs name their one fast iteration, as the runs committed before
        # `outer_data` existed saved it (so that `zoo sweep --reuse` finds those).
        fresh = algorithm.get("outer_data", "fresh") == "fresh"
        settings = (
            MetaRIMsConfig(outer_data="fresh", inner_updates=1)
            if fresh
            else MetaRIMsConfig(outer_data="reuse")
        )
    else:
        settings = PPOConfig()
    settings = dataclasses.replace(settings, **algorithm)
    # Steps per call: 20 PPO iterations; 4 fresh Meta-RIMs steps (1 + 4 iterations' frames
    # each); 5 reuse steps (4 fast iterations each), so that a run is exactly 1,024,000 frames.
    if isinstance(settings, MetaRIMsConfig):
        per_call = 4 if settings.fast_updates == 1 else 5
    else:
        per_call = 20
    block = 4 * per_call  # evaluations and checkpoints at every quarter of the run
    steps = max(block, round(frames / settings.frames_per_step / block) * block)
    task = MADAN_LEVELS[level]
    return TrainConfig(
        task=task,
        model=(LSTMAgentConfig if model_name == "lstm-agent" else RIMsAgentConfig)(**(model or {})),
        task_name=level if level.startswith("doorkey") else f"babyai-{level}",
        model_name=model_name,
        algorithm_name=algorithm_name,
        algorithm=settings,
        eval=EvalConfig(every=steps // 4, tasks=256, batch=64),
        run=RunConfig(steps=steps, steps_per_call=per_call, checkpoint_every=steps // 4),
    )


PRESETS.update(
    {
        madan_preset(level, agent): (
            f"Madan et al. 2021: {agent} agent on {level}, {MADAN_CPU_FRAMES:,} frames (CPU scale)",
            _madan(level, agent),
        )
        for level in MADAN_LEVELS
        for agent in MADAN_AGENTS
    }
)


def _ablations(reading: str) -> dict[str, tuple[str, TrainConfig]]:
    """The ablations of Figs. 5b, 6a and 8 on DoorKey-5x5 under `reading` (see `_madan`):
    label -> (description, config)."""
    return {
        "meta-rims-k5": (
            "Meta-RIMs updating all modules (k = 5 of 5; Fig. 6a sparsity)",
            _madan("doorkey-5x5", "meta-rims", model={"top_k": 5}, reading=reading),
        ),
        "meta-rims-slow1": (
            "Meta-RIMs with slow factor 1 (Fig. 6a)",
            _madan("doorkey-5x5", "meta-rims", slow_factor=1, reading=reading),
        ),
        "meta-rims-slow2": (
            "Meta-RIMs with slow factor 2 (Fig. 6a)",
            _madan("doorkey-5x5", "meta-rims", slow_factor=2, reading=reading),
        ),
        "meta-flip": (
            "metaFlip: attentions fast, module cells slow (Fig. 8)",
            _madan("doorkey-5x5", "meta-rims", model={"split": "flip"}, reading=reading),
        ),
        "slowlr": (
            "slowLR: one PPO loop, the attentions at a quarter of the learning rate (Fig. 8)",
            _madan(
                "doorkey-5x5",
                "rims",
                model={"split": "attention"},
                reading=reading,
                slow_lr_factor=0.25,
            ),
        ),
    }


MADAN_ABLATIONS = _ablations("faithful")
"""The ablations of Figs. 5b, 6a and 8 on DoorKey-5x5, as presets (the faithful reading)."""
MADAN_OUTER_DATA = {
    "meta-rims-reuse": (
        "Meta-RIMs with the slow loop on the fast loop's frames (outer_data reuse, 4 fast "
        "iterations per step: 400 policy updates in 1,024,000 frames, as PPO's)",
        _madan("doorkey-5x5", "meta-rims", reading="first", outer_data="reuse"),
    ),
    "meta-lstm-reuse": (
        "meta-LSTM with the slow loop on the fast loop's frames (outer_data reuse)",
        _madan("doorkey-5x5", "meta-lstm", reading="first", outer_data="reuse"),
    ),
}
"""The two readings of the slow loop's data (`MetaRIMsConfig.outer_data`) beside the `fresh`
presets above."""

SCORE_NOISE = 0.1
"""The Gumbel scale of the score-noise variants: about a fifth of the mean |score| of the live
modules of a trained Meta-RIMs agent on DoorKey-5x5 (0.49-0.54, `scripts/module_scores.py`)."""
_SYMMETRY = {
    "learned-start": ({"initial_state": "learned"}, "a learned initial state per module"),
    "query-bias": ({"query_bias": True}, "a learned bias on the input query"),
    "score-noise": ({"score_noise": SCORE_NOISE}, f"Gumbel noise ({SCORE_NOISE}) on the scores"),
    "modules-attention": (
        {"input_attention": "modules"},
        "the RIMs RL code's input attention (a sparse softmax across modules)",
    ),
}
MADAN_SYMMETRY = {
    f"{agent}-{label}": (
        f"{words} with {what} (symmetry breaking: modules that can win back)",
        _madan(
            "doorkey-5x5",
            agent.removesuffix("-reuse"),
            model=model,
            reading="first",
            **algorithm,
        ),
    )
    for agent, words, algorithm in (
        ("rims", "RIMs", dict[str, Any]()),
        ("meta-rims-reuse", "Meta-RIMs (outer_data reuse)", dict[str, Any](outer_data="reuse")),
    )
    for label, (model, what) in _SYMMETRY.items()
}
"""The RIMs cell's symmetry-breaking options, each alone, on RIMs and on Meta-RIMs."""
MADAN_GROUPS = {
    "meta-rims-reuse-encoders-fast": (
        "Meta-RIMs (outer_data reuse) with the encoders fast",
        _madan(
            "doorkey-5x5",
            "meta-rims",
            model={"encoders": "fast"},
            reading="first",
            outer_data="reuse",
        ),
    ),
    "meta-rims-reuse-encoders-both": (
        "Meta-RIMs (outer_data reuse) with the encoders in both loops",
        _madan(
            "doorkey-5x5",
            "meta-rims",
            model={"encoders": "both"},
            reading="first",
            outer_data="reuse",
        ),
    ),
    "meta-rims-reuse-no-fast-value": (
        "Meta-RIMs (outer_data reuse) without the value loss in the fast loop",
        _madan(
            "doorkey-5x5",
            "meta-rims",
            reading="first",
            outer_data="reuse",
            fast_value_loss=False,
        ),
    ),
    "meta-rims-reuse-dropout-acting": (
        "Meta-RIMs (outer_data reuse), the loss with the dropout masks it acted with",
        _madan(
            "doorkey-5x5",
            "meta-rims",
            reading="first",
            outer_data="reuse",
            dropout_keys="acting",
        ),
    ),
    "rims-dropout-acting": (
        "RIMs, the loss with the dropout masks it acted with",
        _madan("doorkey-5x5", "rims", reading="first", dropout_keys="acting"),
    ),
}
"""The parameter groups (encoders fast, or in both loops), the critic's loss in the fast loop,
and the dropout of the loss."""

PRESETS.update(
    {
        f"madan2021/doorkey-5x5-{label}": (
            f"Madan et al. 2021: {words}, DoorKey-5x5, {MADAN_CPU_FRAMES:,} frames (CPU scale)",
            config,
        )
        for label, (words, config) in {
            **MADAN_ABLATIONS,
            **MADAN_OUTER_DATA,
            **MADAN_SYMMETRY,
            **MADAN_GROUPS,
        }.items()
    }
)


def get_preset(name: str) -> TrainConfig:
    """The config of this experiment's preset `name` (its full name, `madan2021/...`)."""
    return PRESETS[name][1]


_FIRST = (
    " (the first reading, before 0.2.0's presets: the reference cell's null-slot attention, "
    "the encoders slow, the slow loop on fresh frames)"
)


def _madan_fig3(
    levels: tuple[str, ...], agents: tuple[str, ...], reading: str = "faithful"
) -> Sweep:
    runs = [
        SweepRun(
            f"{level}-{agent}",
            _madan(level, agent, reading=reading),
            {"level": level, "agent": agent},
        )
        for level in levels
        for agent in agents
    ]
    return Sweep(
        "Madan et al. 2021, Figs. 3-4: sample efficiency of the LSTM (vanilla), RIMs (modular) "
        f"and Meta-RIMs agents, {MADAN_CPU_FRAMES:,} frames per run (CPU scale)"
        f"{_FIRST if reading == 'first' else ''}; curves against frames and policy updates. "
        "Paper (plots only): Meta-RIMs learns fastest, with the largest gaps on the harder "
        "levels",
        tuple(runs),
        metrics=("eval.success", "eval.return"),
        x="level",
        hue="agent",
    )


def _madan_ablations(reading: str = "faithful") -> Sweep:
    labels = ("lstm", "rims", "meta-rims", "meta-lstm")
    if reading == "first":  # the committed sweep had no LSTM baseline
        labels = labels[1:]
    runs = [
        SweepRun(label, _madan("doorkey-5x5", label, reading=reading), {"variant": label})
        for label in labels
    ]
    runs += [
        SweepRun(label, config, {"variant": label})
        for label, (_, config) in _ablations(reading).items()
    ]
    return Sweep(
        "Madan et al. 2021, Figs. 5b, 6a, 8 on DoorKey-5x5: Meta-RIMs against its ablations "
        f"(sparsity k = 5, slow factor 1 and 2, metaFlip, slowLR, meta-LSTM), {MADAN_CPU_FRAMES:,} "
        f"frames per run (CPU scale){_FIRST if reading == 'first' else ''}; curves against "
        "frames and policy updates. Paper (plots only): each ablation learns slower than "
        "Meta-RIMs",
        tuple(runs),
        metrics=("eval.success", "eval.return"),
        x="variant",
    )


def _madan_outer_data() -> Sweep:
    labels = ("lstm", "rims", "meta-rims", "meta-lstm")
    runs = [
        SweepRun(label, _madan("doorkey-5x5", label, reading="first"), {"variant": label})
        for label in labels
    ]
    runs += [
        SweepRun(label, config, {"variant": label})
        for label, (_, config) in MADAN_OUTER_DATA.items()
    ]
    return Sweep(
        "Madan et al. 2021 on DoorKey-5x5, the two readings of the slow loop's data: fresh "
        "frames (Alg. 1 line 8) against the fast loop's own (Section 2.2), beside the LSTM and "
        f"RIMs baselines, {MADAN_CPU_FRAMES:,} frames per run (CPU scale){_FIRST}; curves "
        "against frames (curves.png) and policy updates (curves-updates.png). Paper (plots "
        "only): Meta-RIMs learns fastest",
        tuple(runs),
        metrics=("eval.success", "eval.return"),
        x="variant",
    )


def _madan_variants(variants: dict, description: str) -> Sweep:
    baselines = {
        "rims": _madan("doorkey-5x5", "rims", reading="first"),
        "meta-rims-reuse": MADAN_OUTER_DATA["meta-rims-reuse"][1],
    }
    runs = [SweepRun(label, config, {"variant": label}) for label, config in baselines.items()]
    runs += [SweepRun(label, config, {"variant": label}) for label, (_, config) in variants.items()]
    return Sweep(
        f"{description}, {MADAN_CPU_FRAMES:,} frames per run (CPU scale){_FIRST}; curves "
        "against frames and policy updates",
        tuple(runs),
        metrics=("eval.success", "eval.return"),
        x="variant",
    )


_LEVELS_OF_FIG3 = ("gotoobj", "gotoredball", "gotolocal")
SWEEPS: dict[str, Sweep] = {
    "madan2021/faithful-doorkey-cpu": _madan_ablations(),
    "madan2021/faithful-levels-cpu": _madan_fig3(_LEVELS_OF_FIG3, ("lstm", "rims", "meta-rims")),
    "madan2021/fig3-cpu": _madan_fig3(
        tuple(MADAN_LEVELS), ("lstm", "rims", "meta-rims"), reading="first"
    ),
    "madan2021/doorkey-cpu": _madan_fig3(
        ("doorkey-5x5",), ("lstm", "rims", "meta-rims"), reading="first"
    ),
    "madan2021/ablations-cpu": _madan_ablations("first"),
    "madan2021/outer-data-cpu": _madan_outer_data(),
    "madan2021/symmetry-cpu": _madan_variants(
        MADAN_SYMMETRY,
        "Madan et al. 2021 on DoorKey-5x5: RIMs and Meta-RIMs with each of the RIMs cell's "
        "symmetry-breaking options (modules that can win back; measure with zoo eval "
        "--activity). Paper (Fig. 6b): every module acts",
    ),
    "madan2021/groups-cpu": _madan_variants(
        MADAN_GROUPS,
        "Madan et al. 2021 on DoorKey-5x5: Meta-RIMs' parameter groups (the encoders fast or "
        "in both loops), the fast loop without the value loss, and the loss with the acting "
        "dropout masks",
    ),
}
"""The sweeps: `faithful-*` run the presets (the faithful reading); the others hold the runs
committed under the first reading, and keep it so that `zoo sweep --reuse` finds them."""


def experiment() -> Experiment:
    """The factory of the `madan2021` experiment (entry point `zoo.experiments`)."""
    return Experiment(
        presets={
            name.removeprefix("madan2021/"): Preset(config, description)
            for name, (description, config) in PRESETS.items()
        },
        sweeps={
            name.removeprefix("madan2021/"): (lambda presets, sweep=sweep: sweep)
            for name, sweep in SWEEPS.items()
        },
        description="Madan et al. 2021, Fast and slow learning of recurrent independent mechanisms (ICLR)",
        claims=CLAIMS,
    )
