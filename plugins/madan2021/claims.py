"""The claims of Madan et al. 2021 (Fast and slow learning of recurrent independent mechanisms,
ICLR) that the zoo measures, for the scoreboard (`runs.Claim`, `zoo scoreboard`).

Figs. 3-8 are learning curves without numbers: their claims are orderings ("Meta-RIMs learns
faster than RIMs"), scored on evaluation success at the end of our runs (1,024,000 frames) and,
for the sample-efficiency claims, at the first evaluation (256,000 frames), where a faster
learner shows first. Table 1 gives numbers: each row compares two of its cells.

The headline rows use the presets (the faithful reading: the RIMs RL code's input attention
across modules, the encoders in both loops, the slow loop on the fast loop's frames); the rows
marked "first reading" are the runs committed before it (the null-slot attention, the encoders
slow, the slow loop on fresh frames)."""

from runs import Claim

_FRAMES = "1,024,000 frames per run, BabyAI's PPO, N = 5 modules, k = 3, h = 32"
FAITHFUL = f"CPU, {_FRAMES}, the faithful reading (paper: frame budget not stated)"
FIRST = f"CPU, {_FRAMES}, the first reading (paper: frame budget not stated)"
TABLE1 = (
    f"CPU, trained on DoorKey-5x5 for {_FRAMES}, first reading; 128 zero-shot episodes per run"
    " and level (paper: budget not stated; 'Difficult' / 'More Difficult' read as 6x6 / 8x8)"
)
FAITHFUL_TABLE1 = (
    f"CPU, trained on DoorKey-5x5 for {_FRAMES}, the faithful reading; 128 zero-shot episodes"
    " per run and level; RIMs seed 0 retrained at 0.2.0 for its checkpoint (paper: budget not"
    " stated; 'Difficult' / 'More Difficult' read as 6x6 / 8x8)"
)
EARLY = 256_000
"""The first evaluation of a run (a quarter of its frames): where the faster learner shows."""


def _faithful_doorkey(text: str, label: str, than: str, at: int | None = None) -> Claim:
    return Claim(
        f"DoorKey-5x5: {text}",
        "madan2021-faithful-doorkey-cpu",
        label,
        "eval.success",
        than=than,
        sweep="faithful-doorkey-cpu",
        scale=FAITHFUL,
        at=at,
        figure=None if at is None else "madan2021-faithful-doorkey-cpu/curves.png",
    )


def _faithful_level(level: str, name: str, than: str, at: int | None = None) -> Claim:
    baseline = {"rims": "RIMs", "lstm": "LSTM"}[than]
    return Claim(
        f"{name}: Meta-RIMs learns faster than {baseline} (Figs. 3-4)",
        "madan2021-faithful-levels-cpu",
        f"{level}-meta-rims",
        "eval.success",
        than=f"{level}-{than}",
        sweep="faithful-levels-cpu",
        scale=FAITHFUL,
        at=at,
        figure=None if at is None else "madan2021-faithful-levels-cpu/curves.png",
    )


def _table1(
    level: str, metric: str, than: str, paper: float, paper_than: float, faithful: bool = False
) -> Claim:
    words = {"doorkey-6x6": "Difficult (6x6)", "doorkey-8x8": "More Difficult (8x8)"}[level]
    baseline = {"rims": "modular (RIMs)", "lstm": "vanilla (LSTM)"}[than]
    letter = {"success": "S", "return": "R"}[metric]
    relation = "level with" if paper == paper_than else "above"
    return Claim(
        f"Table 1, zero-shot transfer to {words}: {letter} of Meta-RIMs {relation} {baseline}"
        + (" (the faithful reading)" if faithful else " (first reading)"),
        "madan2021-faithful-table1-cpu" if faithful else "madan2021-table1-cpu",
        "meta-rims",
        f"{level}.{metric}",
        paper=paper,
        than=than,
        paper_than=paper_than,
        sweep="faithful-doorkey-cpu" if faithful else "doorkey-cpu",
        scale=FAITHFUL_TABLE1 if faithful else TABLE1,
    )


CLAIMS: tuple[Claim, ...] = (
    # Figs. 3-4 and the ablations on DoorKey-5x5, the faithful reading (the presets).
    _faithful_doorkey("Meta-RIMs learns faster than RIMs (Figs. 3-4)", "meta-rims", "rims"),
    _faithful_doorkey(
        "Meta-RIMs learns faster than RIMs (Figs. 3-4)", "meta-rims", "rims", at=EARLY
    ),
    _faithful_doorkey("Meta-RIMs learns faster than the LSTM (Figs. 3-4)", "meta-rims", "lstm"),
    _faithful_doorkey(
        "Meta-RIMs learns faster than the LSTM (Figs. 3-4)", "meta-rims", "lstm", at=EARLY
    ),
    _faithful_doorkey("meta-LSTM improves on the LSTM (Fig. 5b)", "meta-lstm", "lstm", at=EARLY),
    _faithful_doorkey(
        "sparse updates (k = 3) beat updating all modules (k = 5) (Fig. 6a)",
        "meta-rims",
        "meta-rims-k5",
    ),
    _faithful_doorkey(
        "slow factor 4 beats slow factor 1 (Fig. 6a)", "meta-rims", "meta-rims-slow1"
    ),
    _faithful_doorkey(
        "slow factor 4 beats slow factor 2 (Fig. 6a)", "meta-rims", "meta-rims-slow2"
    ),
    _faithful_doorkey(
        "Meta-RIMs beats metaFlip (attentions fast, modules slow) (Fig. 8)",
        "meta-rims",
        "meta-flip",
    ),
    _faithful_doorkey(
        "Meta-RIMs beats slowLR (one loop, attention lr / 4) (Fig. 8)", "meta-rims", "slowlr"
    ),
    # Figs. 3-4 on three BabyAI levels, the faithful reading.
    *(
        _faithful_level(level, name, than, at)
        for level, name in (
            ("gotoobj", "GoToObj"),
            ("gotoredball", "GoToRedBall"),
            ("gotolocal", "GoToLocal"),
        )
        for than in ("rims", "lstm")
        for at in (None, EARLY)
    ),
    # Table 1: zero-shot transfer of the DoorKey-5x5 agents to larger rooms (first reading).
    _table1("doorkey-8x8", "success", "lstm", 0.47, 0.19),
    _table1("doorkey-8x8", "success", "rims", 0.47, 0.02),
    _table1("doorkey-8x8", "return", "lstm", 0.45, 0.18),
    _table1("doorkey-8x8", "return", "rims", 0.45, 0.01),
    _table1("doorkey-6x6", "success", "lstm", 1.0, 1.0),  # the paper's S ties at 1.0
    _table1("doorkey-6x6", "success", "rims", 1.0, 0.89),
    _table1("doorkey-6x6", "return", "lstm", 0.97, 0.95),
    _table1("doorkey-6x6", "return", "rims", 0.97, 0.85),
    # Table 1 with the faithful agents (the LSTM runs are the same under both readings).
    *(
        _table1(level, metric, than, paper, paper_than, faithful=True)
        for level, metric, than, paper, paper_than in (
            ("doorkey-8x8", "success", "lstm", 0.47, 0.19),
            ("doorkey-8x8", "success", "rims", 0.47, 0.02),
            ("doorkey-8x8", "return", "lstm", 0.45, 0.18),
            ("doorkey-8x8", "return", "rims", 0.45, 0.01),
            ("doorkey-6x6", "success", "lstm", 1.0, 1.0),
            ("doorkey-6x6", "success", "rims", 1.0, 0.89),
            ("doorkey-6x6", "return", "lstm", 0.97, 0.95),
            ("doorkey-6x6", "return", "rims", 0.97, 0.85),
        )
    ),
    # The first reading (null-slot attention, encoders slow, slow loop on fresh frames).
    Claim(
        "DoorKey-5x5, first reading: Meta-RIMs learns faster than RIMs (Figs. 3-4)",
        "madan2021-doorkey-cpu",
        "doorkey-5x5-meta-rims",
        "eval.success",
        than="doorkey-5x5-rims",
        sweep="doorkey-cpu",
        scale=FIRST,
    ),
    Claim(
        "DoorKey-5x5, first reading: Meta-RIMs learns faster than the LSTM (Figs. 3-4)",
        "madan2021-doorkey-cpu",
        "doorkey-5x5-meta-rims",
        "eval.success",
        than="doorkey-5x5-lstm",
        sweep="doorkey-cpu",
        scale=FIRST,
    ),
    *(
        Claim(
            f"DoorKey-5x5, first reading: {text}",
            "madan2021-ablations-cpu",
            "meta-rims",
            "eval.success",
            than=than,
            sweep="ablations-cpu",
            scale=FIRST,
        )
        for text, than in (
            ("sparse updates (k = 3) beat k = 5 (Fig. 6a)", "meta-rims-k5"),
            ("slow factor 4 beats slow factor 1 (Fig. 6a)", "meta-rims-slow1"),
            ("Meta-RIMs beats metaFlip (Fig. 8)", "meta-flip"),
            ("Meta-RIMs beats slowLR (Fig. 8)", "slowlr"),
        )
    ),
    Claim(
        "DoorKey-5x5, first reading: meta-LSTM improves on the LSTM (Fig. 5b)",
        "madan2021-outer-data-cpu",
        "meta-lstm",
        "eval.success",
        than="lstm",
        sweep="outer-data-cpu",
        scale=FIRST,
        at=EARLY,
        figure="madan2021-outer-data-cpu/curves.png",
    ),
    *(
        Claim(
            f"{name}, first reading: Meta-RIMs learns faster than RIMs (Figs. 3-4)",
            "madan2021-fig3-cpu",
            f"{level}-meta-rims",
            "eval.success",
            than=f"{level}-rims",
            sweep="fig3-cpu",
            scale=FIRST,
        )
        for level, name in (
            ("gotoobj", "GoToObj"),
            ("gotoredball", "GoToRedBall"),
            ("gotolocal", "GoToLocal"),
            ("pickupdist", "PickupDist"),
        )
    ),
    # Levels of Figs. 3-4 with no committed runs: built and tested (fourrooms,
    # babyai-gotoredballgrey, babyai-pickuploc) or not built (the rest); where the export
    # would be committed, so that the rows read "not run yet" until it is.
    *(
        Claim(
            f"{name}: Meta-RIMs learns faster than RIMs (Figs. 3-4; {state})",
            "madan2021-more-levels-cpu",
            f"{level}-meta-rims",
            "eval.success",
            than=f"{level}-rims",
            scale=FAITHFUL,
        )
        for level, name, state in (
            ("fourrooms", "FourRooms", "built, not run"),
            ("gotoredballgrey", "GoToRedBallGrey", "built, not run"),
            ("pickuploc", "PickupLoc", "built, not run"),
            ("multiroom", "MultiRoom", "not built"),
            ("dynamicobstacles", "DynamicObstacles", "not built"),
            ("lavacrossing", "LavaCrossing", "not built"),
        )
    ),
)
"""The claims of the paper the zoo measures (or will: rows whose data is not committed)."""
