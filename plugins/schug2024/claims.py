"""The claims of Schug et al. 2024 (ICLR), Discovering modular solutions that generalize
compositionally, each scored against a committed export under `docs/figures/`
(`zoo scoreboard --show schug2024`; the rule is `runs.scoreboard`'s).

The paper gives numbers only for its hyperteacher tables (Appendix B.2, Tables A2-A8: accuracy
at the paper's size after 200,000 steps; the sweeps' `paper` values read Tables A5-A7 as M = 8
with K = 1, 2, 4) and for Table A1 (module alignment of over-parameterized discrete students
against the weight decay, its column headers lost in the text). Figs. 2C-D, 3C-D, 3F and 4 are
plots: their claims are orderings, written here as comparisons (`than`). Where a paper value
is a range or "close to 1", the claim's text says how it is read.

How the rows were chosen, before reading any verdict: orderings between learners or supports
are stated for the linear hypernetwork (the learner of the theory; the nonlinear one keeps its
table cells); "slight over-parameterization" is the paper's own Fig. 2C student, twice the
teacher's hidden units and modules (x2), and in Fig. 3F the student 4x the teacher on both axes
(hidden 64, T = 16); each claim reads the committed export closest to the paper's setting (the
largest scale, the runs after the fixes, the authors' outer learning rate where one was run).
MAML of Fig. 4 and the paper-size MAML and nonlinear hypernetwork of Fig. 3B after the fixes
are not run: their rows name the export they would be committed to.
"""

from runs import Claim

# Scales, as the presets and docs/papers/schug2024.md state them.
_TS_CPU = (
    "CPU, 12,000 outer steps (paper 60,000), 100 inner steps (300), meta-batch 32 (64), "
    "128 support / query inputs (256); the paper's teacher (16 -> 16 -> 4, M = 6)"
)
_TS_CPU_LR = _TS_CPU + "; outer lr {lr}"
_HT_CPU = (
    "CPU, 6,000 outer steps (paper 200,000), meta-batch 32 (128), 64 + 64 shots (256 + 256); "
    "hypernetworks hidden 64 (paper 128), ANIL width 272 (512), MAML width 160 (384)"
)
_HT_GPU = (
    "GPU (H200 / H100), the paper's size (hypernetwork hidden 128, ANIL width 512, meta-batch "
    "128, 256 + 256 shots), {steps} of the paper's 200,000 outer steps"
)
_GRID_CPU = (
    "CPU, the paper's networks and inner loops, meta-batch 32 (paper 128), 700 outer steps "
    "(paper {steps}), 256 tasks per pool (1,024)"
)
_PREF_CPU = _GRID_CPU.format(steps="100,000")
_GOAL_CPU = _GRID_CPU.format(steps="200,000")

_FIG2C = "schug2024-fig2-cpu/fig2c-cpu"
_FIG2D = "schug2024-fig2-cpu/fig2d-cpu-x32-lr1e-3"
_FIG3B = "schug2024-fig3-cpu/fig3b-cpu"
_FIG3CD = "schug2024-fig3-cpu/fig3cd-cpu"
_FIG3E = "schug2024-fig3-cpu/fig3e-cpu"
_FIG3F = "schug2024-fig3-cpu/fig3f-lr-cpu-best"
_GPU_7000 = "schug2024-fig3b-gpu/long-7000"
_GPU_8000 = "schug2024-fig3b-gpu/linear-8000"
_GPU_3000 = "schug2024-fig3b-gpu/steps-3000"
_FIG4B = "schug2024-fig4-cpu/fig4b-cpu"
_FIG4C = "schug2024-fig4-cpu/fig4c-cpu"
_FIG4EF = "schug2024-fig4-cpu/fig4ef-cpu"

_ALIGN = "identification.alignment"
_OOD = "ood.accuracy"
_R2 = "identification.r2_ood"

CLAIMS: tuple[Claim, ...] = (
    # ---------------------------------------------------------------- Fig. 2C: connected support
    Claim(
        "Fig. 2C, discrete codes: connected support aligns the student's modules better than "
        "disconnected",
        _FIG2C,
        "discrete-connected",
        _ALIGN,
        than="discrete-disconnected",
        sweep="fig2c-cpu",
        scale=_TS_CPU + "; outer lr 3e-3 (authors 1e-3)",
    ),
    Claim(
        "Fig. 2C, continuous codes: connected support aligns the student's modules better than "
        "disconnected",
        _FIG2C,
        "continuous-connected",
        _ALIGN,
        than="continuous-disconnected",
        sweep="fig2c-cpu",
        scale=_TS_CPU + "; outer lr 3e-3 (authors 1e-3)",
    ),
    # ------------------------------------------------------- Fig. 2D and Table A1: over-parameterization
    Claim(
        "Fig. 2D, discrete codes: slight over-parameterization (x2, the student of Fig. 2C) "
        "aligns better than the teacher's size (x1)",
        _FIG2D,
        "discrete-x2",
        _ALIGN,
        than="discrete-x1",
        sweep="fig2d-cpu-x32-lr1e-3",
        scale=_TS_CPU_LR.format(lr="1e-3, the authors'"),
    ),
    Claim(
        "Fig. 2D, discrete codes: beyond slight over-parameterization alignment degrades (x16 "
        "below x2)",
        _FIG2D,
        "discrete-x16",
        _ALIGN,
        than="discrete-x2",
        higher=False,
        sweep="fig2d-cpu-x32-lr1e-3",
        scale=_TS_CPU_LR.format(lr="1e-3, the authors'"),
    ),
    Claim(
        "Table A1, discrete codes: over-parameterized students align at 0.67-0.85 (columns "
        "lost; read as 0.76 ± 0.09), here the largest, x32, weight decay 0",
        "schug2024-fig2-cpu/fig2d-cpu-x32-lr3e-4",
        "discrete-x32",
        _ALIGN,
        paper=0.76,
        tolerance=0.09,
        sweep="fig2d-cpu-x32-lr3e-4",
        scale=_TS_CPU_LR.format(lr="3e-4 (authors 1e-3, at which this student diverged)"),
    ),
    Claim(
        "Table A1, discrete codes: weight decay does not rescue an over-parameterized student "
        "(0.67-0.85 at every decay; read as 0.76 ± 0.09), here x8 at weight decay 1e-3",
        "schug2024-fig2-cpu/fig2d-wd-cpu",
        "discrete-x8-wd0.001",
        _ALIGN,
        paper=0.76,
        tolerance=0.09,
        sweep="fig2d-wd-cpu",
        scale=_TS_CPU + "; outer lr 3e-3 (authors 1e-3)",
    ),
    Claim(
        "Fig. 2D, continuous codes: over-parameterization unproblematic (x16 aligns at least "
        "as well as x1)",
        _FIG2D,
        "continuous-x16",
        _ALIGN,
        than="continuous-x1",
        sweep="fig2d-cpu-x32-lr1e-3",
        scale=_TS_CPU_LR.format(lr="1e-3, the authors'"),
    ),
    Claim(
        "Fig. 2D, continuous codes: over-parameterization unproblematic up to the authors' "
        "largest factor (x32 aligns at least as well as x1)",
        _FIG2D,
        "continuous-x32",
        _ALIGN,
        than="continuous-x1",
        sweep="fig2d-cpu-x32-lr1e-3",
        scale=_TS_CPU_LR.format(lr="1e-3, the authors'") + "; x32: 2 seeds (the third diverged)",
    ),
    # ------------------------------------------------------------ Fig. 3B and Table A6 (K = 2)
    Claim(
        "Fig. 3B / Table A6: linear hypernetwork, OOD accuracy, compositional support",
        _FIG3B,
        "linear-hypernet-compositional",
        _OOD,
        paper=0.8745,
        sweep="fig3b-cpu",
        scale=_HT_CPU,
    ),
    Claim(
        "Fig. 3B / Table A6: nonlinear hypernetwork, OOD accuracy, compositional support",
        _FIG3B,
        "nonlinear-hypernet-compositional",
        _OOD,
        paper=0.9605,
        sweep="fig3b-cpu",
        scale=_HT_CPU,
    ),
    Claim(
        "Fig. 3B / Table A6: ANIL, OOD accuracy, compositional support",
        _FIG3B,
        "anil-compositional",
        _OOD,
        paper=0.5976,
        sweep="fig3b-cpu",
        scale=_HT_CPU,
    ),
    Claim(
        "Fig. 3B / Table A6: ANIL, OOD accuracy, compositional support (paper size)",
        _GPU_7000,
        "anil-compositional",
        _OOD,
        paper=0.5976,
        sweep="fig3b",
        scale=_HT_GPU.format(steps="step 7,000") + "; 2 seeds",
    ),
    Claim(
        "Fig. 3B / Table A6: MAML, OOD accuracy, compositional support",
        _FIG3B,
        "maml-compositional",
        _OOD,
        paper=0.606,
        sweep="fig3b-cpu",
        scale=_HT_CPU,
    ),
    Claim(
        "Fig. 3B / Table A6: MAML, OOD accuracy, compositional support (paper size; after the "
        "fixes not run)",
        _GPU_7000,
        "maml-compositional",
        _OOD,
        paper=0.606,
        sweep="fig3b",
        scale=_HT_GPU.format(steps="step 7,000") + "; MAML width 384",
    ),
    Claim(
        "Fig. 3B / Table A6: nonlinear hypernetwork, OOD accuracy, compositional support "
        "(paper size; after the fixes not run)",
        _GPU_7000,
        "nonlinear-hypernet-compositional",
        _OOD,
        paper=0.9605,
        sweep="fig3b",
        scale=_HT_GPU.format(steps="step 7,000"),
    ),
    Claim(
        "Fig. 3B: with compositional support the linear hypernetwork beats ANIL (OOD accuracy)",
        _FIG3B,
        "linear-hypernet-compositional",
        _OOD,
        paper=0.8745,
        than="anil-compositional",
        paper_than=0.5976,
        sweep="fig3b-cpu",
        scale=_HT_CPU,
    ),
    Claim(
        "Fig. 3B: with compositional support the linear hypernetwork beats MAML (OOD accuracy)",
        _FIG3B,
        "linear-hypernet-compositional",
        _OOD,
        paper=0.8745,
        than="maml-compositional",
        paper_than=0.606,
        sweep="fig3b-cpu",
        scale=_HT_CPU,
    ),
    Claim(
        "Fig. 3B: with compositional support the linear hypernetwork beats ANIL (OOD accuracy, "
        "paper size)",
        _GPU_7000,
        "linear-hypernet-compositional",
        _OOD,
        paper=0.8745,
        than="anil-compositional",
        paper_than=0.5976,
        sweep="fig3b",
        scale=_HT_GPU.format(steps="step 7,000") + "; linear hypernetwork 3 seeds, ANIL 2",
    ),
    Claim(
        "Fig. 3B: with non-compositional support the linear hypernetwork drops below ANIL (OOD "
        "accuracy)",
        _FIG3B,
        "linear-hypernet-non-compositional",
        _OOD,
        than="anil-non-compositional",
        higher=False,
        sweep="fig3b-cpu",
        scale=_HT_CPU,
    ),
    Claim(
        "Fig. 3B: with non-compositional support the linear hypernetwork drops below ANIL (OOD "
        "accuracy, paper size)",
        _GPU_3000,
        "linear-hypernet-non-compositional",
        _OOD,
        than="anil-non-compositional",
        higher=False,
        sweep="fig3b",
        scale=_HT_GPU.format(steps="step 3,000") + "; 2 seeds each",
    ),
    # --------------------------------------------------------------- Fig. 3C-D: decodability
    Claim(
        "Fig. 3C: linear hypernetwork, R² of the task latent on OOD tasks close to 1 with "
        "compositional support (read as 1)",
        _FIG3CD,
        "linear-hypernet-compositional",
        _R2,
        paper=1.0,
        sweep="fig3cd-cpu",
        scale=_HT_CPU,
    ),
    Claim(
        "Fig. 3C: linear hypernetwork, R² of the task latent on OOD tasks close to 1 with "
        "compositional support (read as 1; paper size)",
        _GPU_8000,
        "linear-hypernet-compositional",
        _R2,
        paper=1.0,
        sweep="fig3b",
        scale=_HT_GPU.format(steps="step 8,000"),
    ),
    Claim(
        "Fig. 3C-D: the latent decodes worse with non-compositional support (linear "
        "hypernetwork, R² OOD)",
        _FIG3CD,
        "linear-hypernet-compositional",
        _R2,
        than="linear-hypernet-non-compositional",
        sweep="fig3cd-cpu",
        scale=_HT_CPU,
    ),
    Claim(
        "Fig. 3C-D: disconnected support decodes worse than connected (linear hypernetwork, R² "
        "OOD)",
        _FIG3CD,
        "linear-hypernet-connected",
        _R2,
        than="linear-hypernet-disconnected",
        sweep="fig3cd-cpu",
        scale=_HT_CPU,
    ),
    # ------------------------------------------------------------ Fig. 3E and Tables A5, A6
    Claim(
        "Fig. 3E / Table A5: K = 1 (no connected support) fails, linear hypernetwork OOD accuracy",
        _FIG3E,
        "linear-hypernet-K1",
        _OOD,
        paper=0.2667,
        sweep="fig3e-cpu",
        scale=_HT_CPU,
    ),
    Claim(
        "Fig. 3E / Table A5: K = 1 (no connected support) fails, nonlinear hypernetwork OOD "
        "accuracy",
        _FIG3E,
        "nonlinear-hypernet-K1",
        _OOD,
        paper=0.2691,
        sweep="fig3e-cpu",
        scale=_HT_CPU,
    ),
    Claim(
        "Fig. 3E: K = 2 generalizes far better than K = 1 (linear hypernetwork, OOD accuracy)",
        _FIG3E,
        "linear-hypernet-K2",
        _OOD,
        paper=0.8745,
        than="linear-hypernet-K1",
        paper_than=0.2667,
        sweep="fig3e-cpu",
        scale=_HT_CPU,
    ),
    # ------------------------------------------------------ Fig. 3F: over-parameterization
    Claim(
        "Fig. 3F: some over-parameterization is needed (hidden 64 / T = 16, 4x the teacher's "
        "on both axes, beats the teacher-sized hidden 16 / T = 4; OOD accuracy)",
        _FIG3F,
        "hidden64-T16-lr0.003",
        _OOD,
        than="hidden16-T4-lr0.003",
        sweep="fig3f-lr-cpu",
        scale="CPU, linear hypernetwork, teacher M = 4, K = 2, hidden 16; 6,000 outer steps "
        "(paper-size presets 200,000), meta-batch 32 (128); the outer lr of lowest mean test "
        "loss per cell of the authors' three, each run's model of lowest test loss "
        "(`zoo report --best test.loss`)",
    ),
    Claim(
        "Fig. 3F: performance falls for larger over-parameterization (the largest student, "
        "hidden 256 / T = 64, below hidden 64 / T = 16; OOD accuracy)",
        _FIG3F,
        "hidden256-T64-lr0.001",
        _OOD,
        than="hidden64-T16-lr0.003",
        higher=False,
        sweep="fig3f-lr-cpu",
        scale="CPU, linear hypernetwork, teacher M = 4, K = 2, hidden 16; 6,000 outer steps "
        "(paper-size presets 200,000), meta-batch 32 (128); the outer lr of lowest mean test "
        "loss per cell of the authors' three, each run's model of lowest test loss "
        "(`zoo report --best test.loss`)",
    ),
    # ------------------------------------------------------------ Fig. 4B-C: preferences
    Claim(
        "Fig. 4B: disconnected support raises the linear hypernetwork's OOD loss (preferences, "
        "K = 2)",
        _FIG4B,
        "linear-hypernet-disconnected",
        "ood.loss",
        than="linear-hypernet-connected",
        sweep="fig4b-cpu",
        scale=_PREF_CPU,
    ),
    Claim(
        "Fig. 4C: with compositional support the linear hypernetwork has a lower OOD loss than "
        "ANIL (preferences, K = 3)",
        _FIG4C,
        "linear-hypernet-compositional",
        "ood.loss",
        than="anil-compositional",
        higher=False,
        sweep="fig4c-cpu",
        scale=_PREF_CPU,
    ),
    Claim(
        "Fig. 4C: with compositional support the linear hypernetwork has a lower OOD loss than "
        "MAML (preferences, K = 3)",
        _FIG4C,
        "linear-hypernet-compositional",
        "ood.loss",
        than="maml-compositional",
        higher=False,
        sweep="fig4c-cpu",
        scale=_PREF_CPU + "; MAML not run (about 1.5 h a run on this CPU)",
    ),
    Claim(
        "Fig. 4C: a held-out preference module raises the linear hypernetwork's OOD loss",
        _FIG4C,
        "linear-hypernet-non-compositional",
        "ood.loss",
        than="linear-hypernet-compositional",
        sweep="fig4c-cpu",
        scale=_PREF_CPU,
    ),
    # ------------------------------------------------------------------ Fig. 4E-F: goals
    Claim(
        "Fig. 4E: the linear hypernetwork beats ANIL on held-out goal compositions (OOD accuracy)",
        _FIG4EF,
        "linear-hypernet-compositional",
        _OOD,
        than="anil-compositional",
        sweep="fig4ef-cpu",
        scale=_GOAL_CPU,
    ),
    Claim(
        "Fig. 4E: the linear hypernetwork beats MAML on held-out goal compositions (OOD accuracy)",
        _FIG4EF,
        "linear-hypernet-compositional",
        _OOD,
        than="maml-compositional",
        sweep="fig4ef-cpu",
        scale=_GOAL_CPU + "; MAML not run (about 1.5 h a run on this CPU)",
    ),
    Claim(
        "Fig. 4F: holding a goal quadrant out costs the linear hypernetwork OOD accuracy",
        _FIG4EF,
        "linear-hypernet-compositional",
        _OOD,
        than="linear-hypernet-non-compositional",
        sweep="fig4ef-cpu",
        scale=_GOAL_CPU,
    ),
)
