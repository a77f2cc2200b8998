"""Schug et al. 2024, Discovering modular solutions that generalize compositionally (ICLR):
its presets, sweeps and reference values, registered as the `schug2024` experiment. The
presets are the paper's settings as plain values (flags override them).

`schug2024/hyperteacher-*` follow Schug et al. 2024, Appendix C.2, with the settings of the
authors' code (docs/authors-settings.md): teacher 16-32-32-32-8 with M=8 modules, K=2, 256 + 256
shots, meta-batch 128, 200k second-order outer steps. Learners (its table):

| learner | model | inner | outer lr / wd / clip |
|---|---|---|---|
| linear hypernet (no suffix) | hidden 128 x 3, T = 4M | AdamW 0.3, 10 steps | 1e-3 / 1e-2 / 1.0 |
| nonlinear hypernet | hidden 128 x 3, T = 4M | AdamW 0.3, 10 steps | 3e-3 / 1e-2 / 1.0 |
| ANIL | width 512 x 3 | AdamW 0.03, 100 steps, minibatches of 64 | 1e-3 / 1e-4 / 2.0 |
| MAML | width 384 x 3 | AdamW 0.01, 10 steps | 1e-3 / 1e-4 / 2.0 |

`schug2024/teacher-student-*` follow Appendix C.1 with the reference code's settings: teacher
16 -> 16 -> 4 with M=6 modules, student with twice the hidden units and modules, equilibrium
(stop-gradient) training with 300 inner Adam steps at lr 3e-3 on 256 fresh inputs each (a
support of 300 x 256 inputs read in sequential minibatches), outer AdamW 1e-3 with cosine
decay to 1e-6, meta-batch 64, 256 query inputs, 60k steps. Their `-cpu` versions keep a
smaller regime: one fixed support of 128 inputs used whole at each of 100 inner steps.

`schug2024/{preferences,goals}-{split}-{learner}` are the grid worlds of Section 4.2-4.3 (Fig. 4)
at the settings of the authors' configs (docs/specs/gridworlds.md, A3; `GRID_LEARNERS` below):

| world | learner | base MLP | T | inner steps, lr (batch) | outer lr / clip |
|---|---|---|---|---|---|
| preferences | linear hypernet | 64 x 3 | 32 | 10, 0.1 | 3e-4 / 1.0 |
| preferences | nonlinear hypernet | 64 x 2 | 32 | 10, 0.1 | 3e-4 / 2.0 |
| preferences | ANIL | 512 x 4 | - | 100, 0.01 (64) | 3e-4 / 2.0 |
| preferences | MAML | 368 x 3 | - | 10, 0.01 | 1e-3 / 2.0 |
| goals | linear hypernet | 32 x 2 | 8 | 10, 0.3 | 3e-3 / 2.0 |
| goals | nonlinear hypernet | 32 x 2 | 8 | 10, 0.1 | 1e-3 / 2.0 |
| goals | ANIL | 512 x 2 | - | 100, 0.01 | 1e-3 / 2.0 |
| goals | MAML | 384 x 2 | - | 10, 0.01 | 1e-3 / 1.0 |

All second-order, inner AdamW (weight decay 1e-4), outer AdamW with weight decay 1e-2,
meta-batch 128, 100k (preferences) or 200k (goals) steps, evaluation every 1000 steps on 1024
tasks per pool; preferences K=3 on the compositional / non-compositional splits, K=2 on the
connected / disconnected ones (presets for the hypernetworks only, as Fig. 4B). The authors'
learners map to ours as `linear_hnet` -> linear-hypernet, `hnet_deepmlp` -> nonlinear-hypernet
(the default generator, width 32 and depth 4, gives the authors' counts), `anil` -> anil,
`learned_init` -> maml; every parameter count equals the authors' (`AUTHORS_GRID_COUNTS`,
`zoo info --preset`). Where we still differ from the authors' runs:

- Every run skips non-finite outer steps (`outer.max_nonfinite`); the authors do so for the
  preferences only.
- We report the last evaluation; the authors' runs return the model of lowest validation loss.
- Preferences evaluate on 16 query trajectories per task; the authors' evaluation uses 1 (the
  same expected loss, noisier).
- Goals: demonstrations break ties between optimal moves by a fixed order (tasks/goal_grid.py).

The `-cpu` presets keep the paper's networks and inner loops and scale down the meta-batch
(32), the evaluation (every 350 steps, 256 tasks per pool) and the length (700 steps), sized
from a measurement of the linear hypernetwork on one core: see `GRID_CPU_STEPS`.

The other `-cpu` presets are CPU-scale versions (docs/papers/schug2024.md says how they differ).
"""

import dataclasses

from runs import (
    BilevelConfig,
    EvalConfig,
    Experiment,
    InnerConfig,
    OuterConfig,
    Preset,
    RunConfig,
    Select,
    Sweep,
    SweepRun,
    TrainConfig,
)
from tasks.config import (
    CompositionalGoalsConfig,
    CompositionalPreferencesConfig,
    HyperteacherConfig,
    TeacherStudentConfig,
)
from zoo.config import (
    ANILConfig,
    LinearHypernetConfig,
    MAMLConfig,
    NonlinearHypernetConfig,
    ShallowHypernetConfig,
)

from .claims import CLAIMS


def _bilevel(*, inner: InnerConfig | None = None, outer: OuterConfig | None = None, **fields):
    """A `TrainConfig` of the bilevel algorithm with this inner loop and outer optimizer."""
    algorithm = BilevelConfig(inner=inner or InnerConfig(), outer=outer or OuterConfig())
    return TrainConfig(algorithm=algorithm, **fields)


def _replace(obj, **changes):
    """`dataclasses.replace`, where `inner` and `outer` of a `TrainConfig` replace those of its
    (bilevel) algorithm's config."""
    if isinstance(obj, TrainConfig):
        section = {k: changes.pop(k) for k in ("inner", "outer") if k in changes}
        if section:
            changes["algorithm"] = dataclasses.replace(obj.algorithm, **section)
    return dataclasses.replace(obj, **changes)


# --------------------------------------------------------------------------- hyperteacher

HYPERTEACHER_MODELS = ("linear-hypernet", "nonlinear-hypernet", "anil", "maml")


def _learner(model_name: str) -> dict:
    """Model, inner and outer settings of one learner at the paper's size."""
    if model_name == "linear-hypernet":
        return dict(
            model=LinearHypernetConfig(hidden=128, num_hidden=3, num_templates=32),
            inner=InnerConfig(steps=10, lr=0.3, weight_decay=1e-4),
            outer=OuterConfig(lr=1e-3, weight_decay=1e-2, clip=1.0, meta_batch=128),
        )
    if model_name == "nonlinear-hypernet":
        return dict(
            model=NonlinearHypernetConfig(hidden=128, num_hidden=3, num_templates=32),
            inner=InnerConfig(steps=10, lr=0.3, weight_decay=1e-4),
            outer=OuterConfig(lr=3e-3, weight_decay=1e-2, clip=1.0, meta_batch=128),
        )
    if model_name == "anil":
        return dict(
            model=ANILConfig(hidden=512, num_hidden=3),
            inner=InnerConfig(
                steps=100, lr=0.03, weight_decay=1e-4, batch=64, minibatches="with-replacement"
            ),
            outer=OuterConfig(lr=1e-3, weight_decay=1e-4, clip=2.0, meta_batch=128),
        )
    if model_name == "maml":
        return dict(
            model=MAMLConfig(hidden=384, num_hidden=3),
            inner=InnerConfig(steps=10, lr=0.01, weight_decay=1e-4),
            outer=OuterConfig(lr=1e-3, weight_decay=1e-4, clip=2.0, meta_batch=128),
        )
    raise ValueError(f"no hyperteacher settings for model {model_name!r}")


def _hyperteacher(split: str, model_name: str = "linear-hypernet", **task) -> TrainConfig:
    return _bilevel(
        task=HyperteacherConfig(split=split, **task),  # pyright: ignore[reportArgumentType]
        task_name="hyperteacher",
        model_name=model_name,
        eval=EvalConfig(every=1000, tasks=1024, batch=64),  # the authors' 1,024 tasks a pool
        run=RunConfig(steps=200_000, steps_per_call=100, checkpoint_every=5000),
        **_learner(model_name),
    )


# CPU-scale widths: the base networks are shrunk so that each learner's parameter count keeps
# roughly the paper's proportion to the linear hypernetwork's (hidden 64: 185k meta).
_CPU_WIDTH = {"linear-hypernet": 64, "nonlinear-hypernet": 64, "anil": 272, "maml": 160}


def _cpu(config: TrainConfig, steps: int = 6000) -> TrainConfig:
    """The small setting of docs/authors-settings.md (meta-batch 32, 64 + 64 shots, hidden 64)."""
    inner = config.algorithm.inner
    if inner.batch:  # the reference's ANIL minibatch is a quarter of the support set
        inner = _replace(inner, batch=16)
    return _replace(
        config,
        task=_replace(config.task, shots_support=64, shots_query=64),
        model=_replace(config.model, hidden=_CPU_WIDTH[config.model_name]),
        inner=inner,
        outer=_replace(config.algorithm.outer, meta_batch=32),
        eval=EvalConfig(every=1000, tasks=256, batch=64),
        run=RunConfig(steps=steps, steps_per_call=100, checkpoint_every=1000),
    )


_SPLITS = {
    "compositional": "random 3/4 of the module combinations for training, every module covered",
    "non-compositional": "the last module (in the last layer) only in OOD tasks",
    "connected": "one-hots plus neighbouring pairs per layer (connected support)",
    "disconnected": "one-hots or pairs from one half of the modules only (disconnected support)",
}


def hyperteacher_preset(split: str, model: str, cpu: bool = False) -> str:
    """The name of the hyperteacher preset of `split` and `model` (the linear hypernetwork's
    carry no model suffix)."""
    name = f"schug2024/hyperteacher-{split}"
    name += "" if model == "linear-hypernet" else f"-{model}"
    return name + ("-cpu" if cpu else "")


PRESETS: dict[str, tuple[str, TrainConfig]] = {}
for _split, _text in _SPLITS.items():
    for _model in HYPERTEACHER_MODELS:
        _name = hyperteacher_preset(_split, _model)
        PRESETS[_name] = (f"Fig. 3, {_model}, paper size: {_text}", _hyperteacher(_split, _model))
        PRESETS[f"{_name}-cpu"] = (
            f"the same at CPU scale (M=8, K=2, meta-batch 32, 64+64 shots, {_model})",
            _cpu(_hyperteacher(_split, _model)),
        )

# --------------------------------------------------------------------------- teacher-student


TEACHER_STUDENT_INNER_STEPS = 300
TEACHER_STUDENT_INNER_BATCH = 256
"""The authors' inner loop: 300 Adam steps, each on 256 fresh inputs."""


def _teacher_student(distribution: str, support: str) -> TrainConfig:
    steps, batch = TEACHER_STUDENT_INNER_STEPS, TEACHER_STUDENT_INNER_BATCH
    return _bilevel(
        task=TeacherStudentConfig(
            distribution=distribution,  # pyright: ignore[reportArgumentType]
            support=support,  # pyright: ignore[reportArgumentType]
            shots_support=steps * batch,  # fresh inputs at every inner step
            shots_query=256,
        ),
        model=ShallowHypernetConfig(hidden=32, num_modules=12),
        task_name="teacher-student",
        model_name="shallow-hypernet",
        inner=InnerConfig(
            steps=steps,
            lr=3e-3,
            weight_decay=0.0,
            mode="equilibrium",
            batch=batch,
            minibatches="sequential",
        ),
        outer=OuterConfig(
            lr=1e-3, weight_decay=0.0, clip=0.0, schedule="cosine", lr_end=1e-6, meta_batch=64
        ),
        eval=EvalConfig(every=5000, tasks=256, batch=64),
        run=RunConfig(steps=60_000, steps_per_call=500, checkpoint_every=5000),
    )


def _teacher_student_cpu(config: TrainConfig, steps: int = 12_000) -> TrainConfig:
    """CPU scale: one fixed support of 128 inputs, used whole at each of 100 inner steps (not
    fresh inputs per step), meta-batch 32, 12k steps."""
    return _replace(
        config,
        task=_replace(config.task, shots_support=128, shots_query=128),
        inner=_replace(config.algorithm.inner, steps=100, lr=1e-2, batch=0, minibatches="random"),
        outer=_replace(config.algorithm.outer, lr=3e-3, meta_batch=32),
        eval=EvalConfig(every=1000, tasks=128, batch=64),
        run=RunConfig(steps=steps, steps_per_call=100, checkpoint_every=1000),
    )


for _dist in ("discrete", "continuous"):
    for _support in ("connected", "disconnected"):
        _name = f"schug2024/teacher-student-{_dist}-{_support}"
        PRESETS[_name] = (
            f"Fig. 2C, {_dist} codes, {_support} support (Table A9)",
            _teacher_student(_dist, _support),
        )
        PRESETS[f"{_name}-cpu"] = (
            "the same at CPU scale (100 inner steps on one fixed support of 128 inputs, "
            "meta-batch 32, 12k steps)",
            _teacher_student_cpu(_teacher_student(_dist, _support)),
        )


# --------------------------------------------------------------------------- grid worlds

# Schug et al. 2024, Section 4.2-4.3 / Appendix C.3-C.4, with the authors' configs
# (docs/specs/gridworlds.md, A3): per world and learner, the base network, inner loop (steps, lr,
# minibatch; AdamW with optax's default weight decay 1e-4) and outer lr and clip. Common to all:
# second-order, outer AdamW with weight decay 1e-2, constant lr, meta-batch 128.
GRID_WORLDS = ("preferences", "goals")
GRID_MODELS = HYPERTEACHER_MODELS
GRID_LEARNERS: dict[tuple[str, str], tuple[object, InnerConfig, float, float]] = {
    # (world, model): (model config, inner, outer lr, outer clip)
    ("preferences", "linear-hypernet"): (
        LinearHypernetConfig(hidden=64, num_hidden=3, num_templates=32),
        InnerConfig(steps=10, lr=0.1),
        3e-4,
        1.0,
    ),
    ("preferences", "nonlinear-hypernet"): (
        NonlinearHypernetConfig(hidden=64, num_hidden=2, num_templates=32),
        InnerConfig(steps=10, lr=0.1),
        3e-4,
        2.0,
    ),
    ("preferences", "anil"): (
        ANILConfig(hidden=512, num_hidden=4),
        InnerConfig(steps=100, lr=0.01, batch=64, minibatches="with-replacement"),
        3e-4,
        2.0,
    ),
    ("preferences", "maml"): (
        MAMLConfig(hidden=368, num_hidden=3),
        InnerConfig(steps=10, lr=0.01),
        1e-3,
        2.0,
    ),
    ("goals", "linear-hypernet"): (
        LinearHypernetConfig(hidden=32, num_hidden=2, num_templates=8),
        InnerConfig(steps=10, lr=0.3),
        3e-3,
        2.0,
    ),
    ("goals", "nonlinear-hypernet"): (
        NonlinearHypernetConfig(hidden=32, num_hidden=2, num_templates=8),
        InnerConfig(steps=10, lr=0.1),
        1e-3,
        2.0,
    ),
    ("goals", "anil"): (
        ANILConfig(hidden=512, num_hidden=2),
        InnerConfig(steps=100, lr=0.01),
        1e-3,
        2.0,
    ),
    ("goals", "maml"): (
        MAMLConfig(hidden=384, num_hidden=2),
        InnerConfig(steps=10, lr=0.01),
        1e-3,
        1.0,
    ),
}

# The authors' parameter counts (meta, fast) of each learner, as written in their configs'
# comments (docs/specs/gridworlds.md, A3). Ours are equal for every grid-world preset, paper
# size and -cpu alike (the -cpu presets keep the paper's networks): tests/test_grid_presets.py
# checks it.
# Where a count did differ it would carry its reason as a third item, shown by `zoo info`.
AUTHORS_GRID_COUNTS: dict[tuple[str, str], tuple[int, int]] = {
    ("preferences", "linear-hypernet"): (1_149_216, 133),
    ("preferences", "nonlinear-hypernet"): (1_162_816, 96),
    ("preferences", "anil"): (1_041_925, 2_565),
    ("preferences", "maml"): (454_117, 454_117),
    ("goals", "linear-hypernet"): (227_144, 30),
    ("goals", "nonlinear-hypernet"): (919_688, 24),
    ("goals", "anil"): (699_910, 3_078),
    ("goals", "maml"): (475_782, 475_782),
}

GRID_SPLITS = {
    "preferences": {
        "compositional": "K=3, a random quarter of the masks OOD (Fig. 4C)",
        "non-compositional": "K=3, every mask with module 8 OOD (Fig. 4C)",
        "connected": "K=2, connected support (Fig. 4B)",
        "disconnected": "K=2, disconnected support (Fig. 4B)",
    },
    "goals": {
        "compositional": "a random quarter of the 200 goals OOD (Fig. 4E)",
        "non-compositional": "every goal in quadrant 4 OOD (Fig. 4F)",
    },
}


def grid_preset(world: str, split: str, model: str, cpu: bool = False) -> str:
    """The name of the grid-world preset of `world`, `split` and `model`."""
    return f"schug2024/{world}-{split}-{model}" + ("-cpu" if cpu else "")


def _grid(world: str, split: str, model_name: str) -> TrainConfig:
    """A grid-world run at the paper's settings (docs/specs/gridworlds.md, A3)."""
    model, inner, lr, clip = GRID_LEARNERS[world, model_name]
    if world == "preferences":
        k = 2 if split in ("connected", "disconnected") else 3
        task = CompositionalPreferencesConfig(split=split, max_active=k)  # pyright: ignore[reportArgumentType]
        task_name, steps = "compositional-preferences", 100_000
    else:
        task = CompositionalGoalsConfig(split=split)  # pyright: ignore[reportArgumentType]
        task_name, steps = "compositional-goals", 200_000
    return _bilevel(
        task=task,
        model=model,
        task_name=task_name,
        model_name=model_name,
        inner=inner,
        outer=OuterConfig(lr=lr, weight_decay=1e-2, clip=clip, meta_batch=128),
        eval=EvalConfig(every=1000, tasks=1024, batch=64),
        run=RunConfig(steps=steps, steps_per_call=100, checkpoint_every=5000),
    )


# Outer steps of the -cpu presets, from a measurement (2-core CPU, one core given to the run
# with `taskset` and single-threaded XLA, the other core and part of this one busy with the
# test suite): the linear hypernetwork's -cpu preset trains at 0.7-0.9 s per outer step on the
# preferences (1.1-1.4 outer steps/s) and about 1.0 s per step on the goals, after ~40 s of
# compilation; the first evaluation (256 tasks in each of the preferences' 7 pools) takes ~2
# min with its compilation. 700 steps keep such a run at about 12-14 minutes on one core, the
# budget of one run. The other learners run the same steps (the sweeps compare them) and cost
# more: on the preferences ANIL (100 inner steps) took 2.3 s per step (~30 min a run) and MAML
# (every parameter adapted) 7.5 s per step (~1.5 h a run).
GRID_CPU_STEPS = {"preferences": 700, "goals": 700}
GRID_CPU_EVAL_EVERY = 350


def _grid_cpu(config: TrainConfig, world: str) -> TrainConfig:
    """The paper's networks and inner loops, with meta-batch 32 (paper 128), evaluation every
    350 steps on 256 tasks per pool (paper: every 1000 on 1024) and 700 steps (paper 100k /
    200k)."""
    return _replace(
        config,
        outer=_replace(config.algorithm.outer, meta_batch=32),
        eval=EvalConfig(every=GRID_CPU_EVAL_EVERY, tasks=256, batch=64),
        run=RunConfig(steps=GRID_CPU_STEPS[world], steps_per_call=50, checkpoint_every=350),
    )


def _grid_models(world: str, split: str) -> tuple[str, ...]:
    """Fig. 4B trains only the hypernetworks on the connected / disconnected supports."""
    if split in ("connected", "disconnected"):
        return ("linear-hypernet", "nonlinear-hypernet")
    return GRID_MODELS


for _world, _splits in GRID_SPLITS.items():
    for _split, _text in _splits.items():
        for _model in _grid_models(_world, _split):
            _config = _grid(_world, _split, _model)
            _steps = f"{_config.run.steps // 1000}k"
            PRESETS[grid_preset(_world, _split, _model)] = (
                f"Fig. 4, {_world}, {_model}, paper size ({_steps} steps, meta-batch 128): {_text}",
                _config,
            )
            PRESETS[grid_preset(_world, _split, _model, cpu=True)] = (
                f"the same at CPU scale (one core: ~14 min for the linear hypernetwork, "
                "~30 min ANIL, ~1.5 h MAML on the preferences): "
                f"the paper's network and inner loop, meta-batch 32 (paper 128), "
                f"{GRID_CPU_STEPS[_world]:,} steps (paper {_steps}), evaluation every "
                f"{GRID_CPU_EVAL_EVERY} steps on 256 tasks (paper 1000, 1024)",
                _grid_cpu(_config, _world),
            )


def authors_counts(preset: str) -> tuple[int, int] | None:
    """The authors' (meta, fast) parameter counts of a grid-world preset, if it is one."""
    for (world, model), counts in AUTHORS_GRID_COUNTS.items():
        for split in GRID_SPLITS[world]:
            if preset in (grid_preset(world, split, model), grid_preset(world, split, model, True)):
                return counts
    return None


def get_preset(name: str) -> TrainConfig:
    """The config of this experiment's preset `name` (its full name, `schug2024/...`)."""
    return PRESETS[name][1]


# --------------------------------------------------------------------------- sweeps


def _fig2c() -> Sweep:
    runs = [
        SweepRun(
            f"{dist}-{support}",
            get_preset(f"schug2024/teacher-student-{dist}-{support}-cpu"),
            {"codes": dist, "support": support},
        )
        for dist in ("discrete", "continuous")
        for support in ("connected", "disconnected")
    ]
    return Sweep(
        "Fig. 2C: module alignment with connected vs disconnected support",
        tuple(runs),
        metrics=("identification.alignment", "ood.mse"),
        x="codes",
        hue="support",
    )


# Fig. 2D as the authors ran it (their `sweeps/theory/overparam.yml`): the student's hidden width
# and module count each 2-32 times the teacher's (16, 6), crossed, the outer AdamW's weight decay
# 0-1e-3, both kinds of codes, connected support, 60,000 outer steps (their `train_step` 10,000
# times `n_task` 6), 300 inner steps.
FIG2D_FACTORS = (2, 4, 8, 16, 32)
FIG2D_WEIGHT_DECAY = (0.0, 1e-5, 1e-4, 1e-3)
FIG2D_CPU_FACTORS = (1, 2, 4, 8)
FIG2D_CPU_DIAGONAL = (1, 2, 4, 8, 16, 32)


def _fig2d(ratios: tuple[int, ...] = FIG2D_CPU_FACTORS, outer_lr: float | None = None) -> Sweep:
    """Fig. 2D at CPU scale along the diagonal of the authors' grid: students with hidden width
    and module count both `ratios` times the teacher's (16, 6), both kinds of codes, the CPU
    presets of Fig. 2C otherwise (12,000 steps, 100 inner steps, outer lr 3e-3). `outer_lr`
    replaces the presets' outer learning rate (at 3e-3 the x16 students' outer loss rises after
    its minimum; the authors' is 1e-3)."""
    runs = []
    for dist in ("discrete", "continuous"):
        base = get_preset(f"schug2024/teacher-student-{dist}-connected-cpu")
        if outer_lr is not None:
            base = _replace(base, outer=_replace(base.algorithm.outer, lr=outer_lr))
        for ratio in ratios:
            model = ShallowHypernetConfig(hidden=16 * ratio, num_modules=6 * ratio)
            runs.append(
                SweepRun(
                    f"{dist}-x{ratio}",
                    _replace(base, model=model),
                    {"overparameterization": f"x{ratio}", "codes": dist},
                )
            )
    lr = "" if outer_lr is None else f", outer lr {outer_lr:g}"
    return Sweep(
        "Fig. 2D: module alignment against student over-parameterization (hidden and modules "
        f"both {', '.join(f'x{r}' for r in ratios)} the teacher's), connected support{lr}",
        tuple(runs),
        metrics=("identification.alignment", "ood.mse"),
        x="overparameterization",
        hue="codes",
    )


def _fig2d_grid(cpu: bool = True, dist: str = "discrete", outer_lr: float | None = None) -> Sweep:
    """Fig. 2D over the authors' grid (`cpu=False`: 200 configurations, both kinds of codes, for
    a device), or at CPU scale the hidden and module factors 1, 2, 4, 8 crossed, codes `dist`,
    weight decay 0 (the CPU presets of Fig. 2C: 12,000 steps, 100 inner steps). `outer_lr`
    replaces the presets' outer learning rate (the CPU presets' 3e-3 diverges in some wide
    students with more modules than the teacher; the authors' is 1e-3)."""
    codes = (dist,) if cpu else ("discrete", "continuous")
    factors = FIG2D_CPU_FACTORS if cpu else FIG2D_FACTORS
    decays = (0.0,) if cpu else FIG2D_WEIGHT_DECAY
    runs = []
    for dist in codes:
        base = get_preset(f"schug2024/teacher-student-{dist}-connected" + ("-cpu" if cpu else ""))
        for hidden in factors:
            for modules in factors:
                for decay in decays:
                    model = ShallowHypernetConfig(hidden=16 * hidden, num_modules=6 * modules)
                    outer = _replace(base.algorithm.outer, weight_decay=decay)
                    if outer_lr is not None:
                        outer = _replace(outer, lr=outer_lr)
                    label = f"{dist}-h{hidden}-m{modules}" + ("" if cpu else f"-wd{decay:g}")
                    facets = {"hidden": f"hidden x{hidden}", "modules": f"modules x{modules}"}
                    if not cpu:
                        facets |= {"codes": dist, "weight_decay": f"wd {decay:g}"}
                    config = _replace(base, model=model, outer=outer)
                    runs.append(SweepRun(label, config, facets))
    scale = f"CPU scale, {dist} codes" if cpu else "the authors' grid, paper size"
    if outer_lr is not None:
        scale += f", outer lr {outer_lr:g}"
    paper = "Paper (Table A1, discrete): slight over-parameterization helps, more hurts (0.67-0.85)"
    if codes == ("continuous",):
        paper = (
            "Paper (Section 3.3): for continuous codes over-parameterization appears unproblematic"
        )
    return Sweep(
        f"Fig. 2D ({scale}): module alignment against the student's hidden width and module "
        f"count, each a multiple of the teacher's (16, 6), crossed; connected support. {paper}",
        tuple(runs),
        metrics=("identification.alignment", "ood.mse"),
        x="hidden",
        hue="modules",
        plot="grid",
    )


def _fig2d_weight_decay() -> Sweep:
    """Fig. 2D against the outer weight decay at CPU scale: the students of `schug2024/fig2d-cpu`
    (hidden width and module count both x1-x8 the teacher's, discrete codes) at each of the
    authors' four weight decays; the runs at 0 are `fig2d-cpu`'s (same configs)."""
    base = get_preset("schug2024/teacher-student-discrete-connected-cpu")
    runs = []
    for ratio in FIG2D_CPU_FACTORS:
        model = ShallowHypernetConfig(hidden=16 * ratio, num_modules=6 * ratio)
        for decay in FIG2D_WEIGHT_DECAY:
            outer = _replace(base.algorithm.outer, weight_decay=decay)
            config = _replace(base, model=model, outer=outer)
            facets = {"overparameterization": f"x{ratio}", "weight_decay": f"wd {decay:g}"}
            runs.append(SweepRun(f"discrete-x{ratio}-wd{decay:g}", config, facets))
    return Sweep(
        "Fig. 2D against the outer weight decay (CPU scale, discrete codes, connected support): "
        "module alignment of students with hidden width and modules both x1-x8 the teacher's. "
        "Paper (Table A1, discrete): 0.67-0.85 for over-parameterized students, whatever the "
        "weight decay",
        tuple(runs),
        metrics=("identification.alignment", "ood.mse"),
        x="overparameterization",
        hue="weight_decay",
    )


# The paper's hyperteacher tables (Appendix B.2; their captions were lost in conversion): accuracy
# as a fraction, at the paper's size and 200k steps. We read Tables A5-A7 as M = 8 with K = 1, 2
# and 4: the authors' sweep for Fig. 3E runs K in {1, 2, 4, 6, 8} and has no K = 3
# (docs/authors-settings.md, Schug 2024), and the third table is best on its h = 4 pool.
PAPER_M8 = {
    # K: {model: (test accuracy, OOD accuracy)}
    1: {
        "anil": (0.6601, 0.5580),
        "maml": (0.6516, 0.4742),
        "linear-hypernet": (0.8791, 0.2667),
        "nonlinear-hypernet": (0.9572, 0.2691),
    },
    2: {
        "anil": (0.6007, 0.5976),
        "maml": (0.6133, 0.6060),
        "linear-hypernet": (0.9006, 0.8745),
        "nonlinear-hypernet": (0.9695, 0.9605),
    },
    4: {
        "anil": (0.6064, 0.6063),
        "maml": (0.6293, 0.6278),
        "linear-hypernet": (0.9357, 0.9350),
        "nonlinear-hypernet": (0.9571, 0.9568),
    },
}


def _paper(k: int, model: str) -> dict[str, float]:
    test, ood = PAPER_M8[k][model]
    return {"test.accuracy": test, "ood.accuracy": ood}


# The hyperteacher sweeps set `task.split_seed` to each run seed (`Sweep.seed_task`): the
# authors' run seed drew the split, so their seeds vary it (docs/authors-settings.md,
# "Hyperteacher").


def _fig3b(cpu: bool = True) -> Sweep:
    runs = []
    for model in HYPERTEACHER_MODELS:
        for split in ("compositional", "non-compositional"):
            config = get_preset(hyperteacher_preset(split, model, cpu=cpu))
            runs.append(SweepRun(f"{model}-{split}", config, {"model": model, "support": split}))
    size = "" if cpu else " (paper size: for a GPU)"
    return Sweep(
        "Fig. 3B: OOD accuracy of the four learners, compositional vs non-compositional "
        f"support{size}",
        tuple(runs),
        metrics=("ood.accuracy", "test.accuracy", "identification.r2_ood"),
        x="model",
        hue="support",
        paper={f"{m}-compositional": _paper(2, m) for m in HYPERTEACHER_MODELS},
        seed_task="split_seed",
    )


def _fig3b_widths() -> Sweep:
    """Issue 20, item 6: ANIL and MAML at the authors' widths (512 and 384) in the CPU-scale
    setting of `fig3b-cpu`, to test whether that sweep's ordering comes from their smaller
    CPU-scale widths (272 and 160)."""
    runs = []
    for model in ("anil", "maml"):
        width = _learner(model)["model"].hidden
        for split in ("compositional", "non-compositional"):
            base = get_preset(hyperteacher_preset(split, model, cpu=True))
            config = _replace(base, model=_replace(base.model, hidden=width))
            runs.append(
                SweepRun(
                    f"{model}{width}-{split}",
                    config,
                    {"model": f"{model} (width {width})", "support": split},
                )
            )
    return Sweep(
        "Fig. 3B at CPU scale with ANIL and MAML at the authors' widths (512, 384) instead of "
        "the CPU presets' (272, 160)",
        tuple(runs),
        metrics=("ood.accuracy", "test.accuracy"),
        x="model",
        hue="support",
        paper={f"{m}{w}-compositional": _paper(2, m) for m, w in (("anil", 512), ("maml", 384))},
        seed_task="split_seed",
    )


def _fig3cd() -> Sweep:
    runs = []
    for model in ("linear-hypernet", "nonlinear-hypernet"):
        for split in _SPLITS:
            config = get_preset(hyperteacher_preset(split, model, cpu=True))
            runs.append(SweepRun(f"{model}-{split}", config, {"model": model, "support": split}))
    return Sweep(
        "Fig. 3C-D: linear decodability of the task latent (R^2 on OOD tasks) and OOD accuracy "
        "by support",
        tuple(runs),
        metrics=("identification.r2_ood", "ood.accuracy"),
        x="support",
        hue="model",
        seed_task="split_seed",
    )


# The authors' K values for Fig. 3E (docs/authors-settings.md, Schug 2024): at most K of the
# M = 8 modules active per layer in the training tasks.
FIG3E_K = (1, 2, 4, 6, 8)


def _fig3e() -> Sweep:
    runs = []
    for model in ("linear-hypernet", "nonlinear-hypernet"):
        for k in FIG3E_K:
            base = get_preset(hyperteacher_preset("compositional", model, cpu=True))
            config = _replace(base, task=_replace(base.task, max_active=k))
            runs.append(SweepRun(f"{model}-K{k}", config, {"model": model, "K": f"K={k}"}))
    return Sweep(
        "Fig. 3E: OOD accuracy against the number K of modules per combination (K=1 has no "
        "connected support), compositional split",
        tuple(runs),
        metrics=("ood.accuracy", "identification.r2_ood"),
        x="K",
        hue="model",
        paper={
            f"{m}-K{k}": {"ood.accuracy": PAPER_M8[k][m][1]}
            for m in ("linear-hypernet", "nonlinear-hypernet")
            for k in FIG3E_K
            if k in PAPER_M8
        },
        seed_task="split_seed",
    )


# Fig. 3F as the authors ran it (their `sweeps/hyperteacher/overparam.yaml`): a teacher of
# M = 4 modules, K = 2, hidden width 16; students of hidden width 16-512 and T = 1-16 times M
# templates; both hypernetworks, outer learning rates 3e-4, 1e-3 and 3e-3, seeds 2020-2022.
FIG3F_HIDDEN = (16, 32, 64, 128, 256, 512)
FIG3F_RATIO = (1, 2, 4, 8, 16)
FIG3F_LR = (3e-4, 1e-3, 3e-3)
FIG3F_TEACHER = {"num_modules": 4, "max_active": 2, "hidden": 16, "ood_h": (1, 2, 4)}


def _fig3f(cpu: bool = True, tune_lr: bool = False) -> Sweep:
    """Fig. 3F: the authors' grid (`cpu=False`, 180 configurations, for a device), or at CPU
    scale the linear hypernetwork at hidden 16 / 64 / 256 and T / M = 1 / 4 / 16, 6,000 steps,
    at the preset's outer learning rate (1e-3) or, with `tune_lr`, at each of the authors'
    three. Where the rate is swept, each configuration reports the rate of lowest mean test
    (in-distribution) loss, the same for every seed."""
    models = ("linear-hypernet",) if cpu else ("linear-hypernet", "nonlinear-hypernet")
    hiddens, ratios = ((16, 64, 256), (1, 4, 16)) if cpu else (FIG3F_HIDDEN, FIG3F_RATIO)
    lrs = FIG3F_LR if tune_lr or not cpu else (None,)
    m = FIG3F_TEACHER["num_modules"]
    runs = []
    for model_name in models:
        base = get_preset(hyperteacher_preset("compositional", model_name, cpu=cpu))
        task = _replace(base.task, **FIG3F_TEACHER)
        for hidden in hiddens:
            for ratio in ratios:
                for lr in lrs:
                    model = _replace(base.model, hidden=hidden, num_templates=ratio * m)
                    outer = (
                        base.algorithm.outer
                        if lr is None
                        else _replace(base.algorithm.outer, lr=lr)
                    )
                    config = _replace(base, task=task, model=model, outer=outer)
                    label = f"hidden{hidden}-T{ratio * m}"
                    facets = {"hidden": f"hidden {hidden}", "templates": f"T={ratio * m}"}
                    if not cpu:
                        label = f"{model_name}-{label}"
                        facets |= {"model": model_name}
                    if lr is not None:
                        label = f"{label}-lr{lr:g}"
                        facets |= {"lr": f"lr {lr:g}"}
                    runs.append(SweepRun(label, config, facets))
    scale = "CPU scale, linear hypernetwork" if cpu else "the authors' grid, paper size"
    if lrs != (None,):
        scale += ", the outer learning rate of lowest test loss per cell"
    return Sweep(
        f"Fig. 3F ({scale}): OOD accuracy against over-parameterization, a teacher of M = 4 "
        "modules (K = 2) and hidden width 16; student hidden width and templates T = 1-16 x M. "
        "Paper (plot only): some over-parameterization is needed, and OOD accuracy falls for "
        "larger",
        tuple(runs),
        metrics=("ood.accuracy", "test.accuracy"),
        x="hidden",
        hue="templates",
        plot="grid",
        seed_task="split_seed",
        select=None if lrs == (None,) else Select("lr", "test.loss"),
    )


# Fig. 4: the paper gives the grid worlds only as plots (no numbers), so these sweeps carry no
# paper values; their descriptions state the claims to check (docs/specs/gridworlds.md, A4). Seeds
# are the authors' (preferences 2020-2025, goals 2020-2022; 3 at CPU scale). The goals sweeps
# also set `task.seed` to each seed (`Sweep.seed_task`): the goals task takes its mazes and
# split from `task.seed`, and the authors' seed fixed both; the preferences task draws its
# module bank and split from the run's key, so the run seed already varies them.
_PREFERENCE_SEEDS = (2020, 2021, 2022, 2023, 2024, 2025)
_GOAL_SEEDS = (2020, 2021, 2022)


def _grid_sweep(
    world: str, splits: tuple[str, ...], models: tuple[str, ...], cpu: bool, **kwargs
) -> Sweep:
    runs = [
        SweepRun(
            f"{model}-{split}",
            get_preset(grid_preset(world, split, model, cpu=cpu)),
            {"model": model, "support": split},
        )
        for model in models
        for split in splits
    ]
    seeds = _PREFERENCE_SEEDS if world == "preferences" else _GOAL_SEEDS
    size = " (CPU scale)" if cpu else " (paper size: for a GPU)"
    kwargs["description"] += size
    return Sweep(runs=tuple(runs), seeds=seeds[:3] if cpu else seeds, **kwargs)


def _fig4b(cpu: bool) -> Sweep:
    return _grid_sweep(
        "preferences",
        ("connected", "disconnected"),
        ("linear-hypernet", "nonlinear-hypernet"),
        cpu,
        description="Fig. 4B: compositional preferences, K=2: OOD loss of the hypernetworks "
        "with connected vs disconnected support. Paper (plot only): disconnected support "
        "raises the OOD loss of both, with comparable numbers of training tasks (24 vs 20)",
        metrics=("ood.loss", "test.loss"),
        x="model",
        hue="support",
    )


def _fig4c(cpu: bool) -> Sweep:
    return _grid_sweep(
        "preferences",
        ("compositional", "non-compositional"),
        GRID_MODELS,
        cpu,
        description="Fig. 4C: compositional preferences, K=3: OOD loss of the four learners, "
        "compositional vs non-compositional support. Paper (plot only): with compositional "
        "support both hypernetworks reach a lower OOD loss than ANIL and MAML; their OOD loss "
        "rises markedly with non-compositional support",
        metrics=("ood.loss", "test.loss"),
        x="model",
        hue="support",
    )


def _fig4ef(cpu: bool) -> Sweep:
    return _grid_sweep(
        "goals",
        ("compositional", "non-compositional"),
        GRID_MODELS,
        cpu,
        description="Fig. 4E-F and A9: compositional goals: OOD per-step accuracy (and whole "
        "demonstrations followed, accuracy_all) of the four learners, random split vs quadrant "
        "held out; each seed also sets task.seed (the mazes and split). Paper (plot only): "
        "with the random split both hypernetworks beat ANIL and MAML; holding a quadrant out "
        "costs the hypernetworks more than ANIL and MAML",
        metrics=("ood.accuracy", "ood.accuracy_all", "test.accuracy"),
        x="model",
        hue="support",
        seed_task=True,
    )


SWEEPS: dict[str, Sweep] = {
    "schug2024/fig2c-cpu": _fig2c(),
    "schug2024/fig2d-cpu": _fig2d(),
    # The same diagonal out to the authors' largest factor, 32; its x1-x8 runs are fig2d-cpu's.
    "schug2024/fig2d-cpu-x32": _fig2d(FIG2D_CPU_DIAGONAL),
    "schug2024/fig2d-cpu-x32-lr1e-3": _fig2d(FIG2D_CPU_DIAGONAL, outer_lr=1e-3),
    # At 1e-3 the discrete x32 student's outer loss rises after step 300; a third of the lr.
    "schug2024/fig2d-cpu-x32-lr3e-4": _fig2d(FIG2D_CPU_DIAGONAL, outer_lr=3e-4),
    "schug2024/fig2d-grid": _fig2d_grid(cpu=False),
    "schug2024/fig2d-grid-cpu": _fig2d_grid(),
    "schug2024/fig2d-grid-continuous-cpu": _fig2d_grid(dist="continuous"),
    "schug2024/fig2d-grid-continuous-cpu-lr1e-3": _fig2d_grid(dist="continuous", outer_lr=1e-3),
    "schug2024/fig2d-wd-cpu": _fig2d_weight_decay(),
    "schug2024/fig3b": _fig3b(cpu=False),
    "schug2024/fig3b-cpu": _fig3b(),
    "schug2024/fig3b-widths-cpu": _fig3b_widths(),
    "schug2024/fig3cd-cpu": _fig3cd(),
    "schug2024/fig3e-cpu": _fig3e(),
    "schug2024/fig3f": _fig3f(cpu=False),
    "schug2024/fig3f-cpu": _fig3f(),
    "schug2024/fig3f-lr-cpu": _fig3f(tune_lr=True),
    "schug2024/fig4b": _fig4b(cpu=False),
    "schug2024/fig4b-cpu": _fig4b(cpu=True),
    "schug2024/fig4c": _fig4c(cpu=False),
    "schug2024/fig4c-cpu": _fig4c(cpu=True),
    "schug2024/fig4ef": _fig4ef(cpu=False),
    "schug2024/fig4ef-cpu": _fig4ef(cpu=True),
}


def experiment() -> Experiment:
    """The factory of the `schug2024` experiment (entry point `zoo.experiments`)."""
    return Experiment(
        presets={
            name.removeprefix("schug2024/"): Preset(config, description, authors_counts(name))
            for name, (description, config) in PRESETS.items()
        },
        sweeps={
            name.removeprefix("schug2024/"): (lambda presets, sweep=sweep: sweep)
            for name, sweep in SWEEPS.items()
        },
        description="Schug et al. 2024, Discovering modular solutions that generalize compositionally (ICLR)",
        claims=CLAIMS,
    )
