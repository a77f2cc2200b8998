"""The grid-world presets and sweeps (Schug et al. 2024, Fig. 4): every preset builds, its
parameter counts are the authors', its settings are valid, and the sweeps cover them.

Counts: ours equal the authors' (docs/specs/gridworlds.md, A3) for every grid-world preset, paper
size and -cpu alike (the -cpu presets keep the paper's networks). None differs; were one to,
it would be listed here and in `plugins.schug2024.presets.AUTHORS_GRID_COUNTS` with its reason.
"""

import dataclasses

import equinox as eqx
import pytest

from plugins.schug2024 import presets
from runs.cli import main
from runs.run import build, resolve
from runs.sweeps import plan
from zoo import param_counts

GRID = {
    name: config
    for name, (_, config) in presets.PRESETS.items()
    if name.startswith(("schug2024/preferences-", "schug2024/goals-"))
}


def test_every_grid_world_setting_has_a_preset():
    expected = {
        presets.grid_preset(world, split, model, cpu)
        for world, splits in presets.GRID_SPLITS.items()
        for split in splits
        for model in presets.GRID_MODELS
        if model.endswith("hypernet") or split not in ("connected", "disconnected")
        for cpu in (False, True)
    }
    assert set(GRID) == expected
    assert len(GRID) == 40


@pytest.mark.parametrize("name", sorted(GRID))
def test_grid_preset_builds_with_the_authors_parameter_counts(name):
    _, model = eqx.filter_eval_shape(build, resolve(GRID[name]))
    counts = param_counts(model)
    assert (counts["meta"], counts["fast"]) == presets.authors_counts(name), name


def _support_rows(config) -> int:
    task = config.task
    if config.task_name == "compositional-preferences":
        return task.shots_support * task.horizon
    return task.max_len  # one demonstration per support set


@pytest.mark.parametrize("name", sorted(GRID))
def test_grid_preset_settings_are_the_papers_and_valid(name):
    config = GRID[name]
    world = "preferences" if config.task_name == "compositional-preferences" else "goals"
    model, inner, lr, clip = presets.GRID_LEARNERS[world, config.model_name]
    assert config.model == model and config.algorithm.inner == inner
    assert (
        config.algorithm.outer.lr,
        config.algorithm.outer.clip,
        config.algorithm.outer.weight_decay,
    ) == (lr, clip, 1e-2)
    assert (
        config.algorithm.inner.mode == "second-order"
        and config.algorithm.outer.schedule == "constant"
    )
    assert 0 <= config.algorithm.inner.batch <= _support_rows(config)
    assert config.eval.tasks % config.eval.batch == 0
    assert config.run.steps % config.run.steps_per_call == 0
    if world == "preferences":
        k = 2 if config.task.split in ("connected", "disconnected") else 3
        assert config.task.max_active == k
    if name.endswith("-cpu"):
        paper = GRID[name.removesuffix("-cpu")]
        assert config.algorithm.outer.meta_batch == 32 and config.eval.tasks == 256
        assert config.run.steps <= 10_000
        assert (
            dataclasses.replace(config, algorithm=paper.algorithm, eval=paper.eval, run=paper.run)
            == paper
        )  # only the meta-batch, evaluation and length are scaled down
    else:
        assert config.algorithm.outer.meta_batch == 128
        assert (config.eval.every, config.eval.tasks) == (1000, 1024)
        assert config.run.steps == (100_000 if world == "preferences" else 200_000)


def test_zoo_info_prints_the_authors_counts(capsys):
    assert main(["info", "--preset", "schug2024/goals-compositional-linear-hypernet"]) == 0
    out = capsys.readouterr().out
    assert "227,144 meta, 30 fast (adapted per task)" in out
    assert "authors':   227,144 meta, 30 fast (equal)" in out


@pytest.mark.parametrize(
    ("sweep", "runs", "seeds"),
    [
        ("schug2024/fig4b", 4, 6),
        ("schug2024/fig4c", 8, 6),
        ("schug2024/fig4ef", 8, 3),
        ("schug2024/fig4b-cpu", 4, 3),
        ("schug2024/fig4c-cpu", 8, 3),
        ("schug2024/fig4ef-cpu", 8, 3),
    ],
)
def test_fig4_sweeps(sweep, runs, seeds):
    s = presets.SWEEPS[sweep]
    assert (len(s.runs), len(s.seeds)) == (runs, seeds)
    assert not s.paper  # the paper has plots only
    cpu = sweep.endswith("-cpu")
    for run in s.runs:  # each run is a grid preset of the sweep's scale
        assert any(run.config == c for n, c in GRID.items() if n.endswith("-cpu") == cpu), run


def test_goal_sweeps_vary_the_task_seed_with_the_run_seed():
    """The goals task takes its mazes and split from `task.seed`; the authors' seed fixed both,
    so the goals sweeps set it to each seed. The preferences task draws them from the run key."""
    for _, seed, config in plan(presets.SWEEPS["schug2024/fig4ef-cpu"]):
        assert config.task.seed == config.run.seed == seed
    for _, seed, config in plan(presets.SWEEPS["schug2024/fig4c-cpu"]):
        assert config.run.seed == seed and not hasattr(config.task, "seed")


def test_every_fig4_seed_builds_its_split():
    """The compositional splits check that every module / factor value still trains, for the
    concrete seed: every seed of the Fig. 4 sweeps passes (a few seconds: the tasks only)."""
    from runs.run import build_task

    for name in ("schug2024/fig4b", "schug2024/fig4c", "schug2024/fig4ef"):
        for run, _, config in plan(presets.SWEEPS[name]):
            if run.config.model_name == "linear-hypernet":  # the task is the same for each
                build_task(config)
