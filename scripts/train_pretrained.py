"""Train, export and check the pretrained models the zoo ships.

Each model is a recipe below: a preset as it stands, a seed, a small fixed evaluation to record
on its card, and what the model is not. Training writes the run into `--work` (default
`results/pretrained/NAME/run`; run the same command again to resume it), then `zoo export`s it
into `plugins/PAPER/pretrained/NAME/`, where the entry point `zoo.pretrained` of
`pyproject.toml` registers it:

    python scripts/train_pretrained.py --list
    python scripts/train_pretrained.py NAME [NAME ...]
    python scripts/train_pretrained.py NAME --reuse SWEEP_DIR [SWEEP_DIR ...]
    python scripts/train_pretrained.py --check [NAME ...]

`--reuse` copies in a finished run of exactly the recipe's config and seed from a sweep's
directory (e.g. `zoo sweep madan2021/faithful-doorkey-cpu --out DIR`), rather than training
it again; the card then names the commit that trained it. `--check` loads each shipped model
and measures its card's release metrics again (every evaluation pool of its run, then the
small check): equal to the last bit on the host kind that trained it, else within
`TOLERANCE`. It exits 1 if any differs.
"""

import argparse
import dataclasses
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TOLERANCE = 0.02
"""Largest absolute difference `--check` accepts on another host kind (float sums in another
order can flip a sampled action or a borderline token; on the same host kind it is 0)."""


@dataclasses.dataclass(frozen=True)
class Recipe:
    """One shipped model: `preset` trained with `seed`, exported as `name`."""

    name: str
    preset: str
    not_: str
    check: dict[str, Any]
    """The small fixed evaluation on the card: `{"tasks": N}`, the run's `EvalConfig` with N
    tasks (or episodes) per pool, what `zoo eval pretrained:NAME --tasks N` prints."""
    seed: int = 0

    @property
    def paper(self) -> str:
        return self.preset.partition("/")[0]

    @property
    def directory(self) -> Path:
        return ROOT / "plugins" / self.paper / "pretrained" / self.name


_SCHUG_NOT = (
    "CPU scale (M=8 modules, K=2, meta-batch 32, 6,000 steps), not the paper's size; one seed"
)
_MADAN_NOT = (
    "CPU scale (1,000,000 frames, 64 environments), not the paper's frames; one seed; the "
    "faithful reading of 0.2.0's presets"
)
_SMALL_META = {"tasks": 32}
_SMALL_RL = {"tasks": 16}

RECIPES = [
    Recipe(
        "schug2024-linear-hypernet-hyperteacher",
        "schug2024/hyperteacher-compositional-cpu",
        _SCHUG_NOT,
        _SMALL_META,
    ),
    Recipe(
        "schug2024-nonlinear-hypernet-hyperteacher",
        "schug2024/hyperteacher-compositional-nonlinear-hypernet-cpu",
        _SCHUG_NOT,
        _SMALL_META,
    ),
    Recipe(
        "schug2024-anil-hyperteacher",
        "schug2024/hyperteacher-compositional-anil-cpu",
        _SCHUG_NOT,
        _SMALL_META,
    ),
    Recipe(
        "schug2024-linear-hypernet-preferences",
        "schug2024/preferences-compositional-linear-hypernet-cpu",
        "CPU scale (meta-batch 32, 700 steps; the paper 128 and 100,000), not the paper's "
        "length; one seed",
        _SMALL_META,
    ),
    Recipe(
        "lake2019-meta-seq2seq-addjump",
        "lake2019/addjump-permutation",
        "one seed of the paper's five; the paper's network and 10,000 episodes",
        {"tasks": 8},
    ),
    Recipe(
        "lake2019-seq2seq-addjump",
        "lake2019/addjump-standard-seq2seq",
        "one seed of the paper's five; the baseline, which the paper shows fails add-jump",
        {"tasks": 8},
    ),
    Recipe("madan2021-lstm-doorkey-5x5", "madan2021/doorkey-5x5-lstm", _MADAN_NOT, _SMALL_RL),
    Recipe("madan2021-rims-doorkey-5x5", "madan2021/doorkey-5x5-rims", _MADAN_NOT, _SMALL_RL),
    Recipe(
        "madan2021-meta-rims-doorkey-5x5",
        "madan2021/doorkey-5x5-meta-rims",
        _MADAN_NOT,
        _SMALL_RL,
    ),
    Recipe("madan2021-lstm-gotoobj", "madan2021/gotoobj-lstm", _MADAN_NOT, _SMALL_RL),
]
BY_NAME = {r.name: r for r in RECIPES}


def config_of(recipe: Recipe):
    """The recipe's `TrainConfig`: its preset with its seed."""
    from runs.presets import get_preset

    config = get_preset(recipe.preset)
    return dataclasses.replace(config, run=dataclasses.replace(config.run, seed=recipe.seed))


def _finished(out: Path) -> bool:
    from runs.checkpoint import Checkpoints
    from runs.run import CONFIG_FILE, read_config

    if not (out / CONFIG_FILE).is_file() or not (out / "checkpoints").is_dir():
        return False
    config = read_config(out)
    steps = Checkpoints(out, keep=config.run.keep, read_only=True).steps()
    return bool(steps) and steps[-1] >= config.run.steps


def _reuse(recipe: Recipe, sources: list[Path], out: Path) -> bool:
    """Copy into `out` a finished run of exactly the recipe's config and seed from `sources`
    (as `zoo sweep --reuse` does: its history records where from)."""
    from runs import sweeps

    found = sweeps._reuse(sweeps._finished_runs(sources), config_of(recipe), out)
    if found is not None:
        print(f"{recipe.name}: reusing {found} (the same config and seed)")
    return found is not None


def train(recipe: Recipe, work: Path, reuse: list[Path], progress: bool) -> Path:
    """Train (or resume, or reuse) the recipe's run, export it and record its check."""
    import runs
    from runs import pretrained

    out = work / recipe.name / "run"
    if not out.exists() and reuse and not _reuse(recipe, reuse, out):
        print(f"{recipe.name}: no finished run of this config in {[str(p) for p in reuse]}")
    if not _finished(out):
        start = time.time()
        runs.train(config_of(recipe), out, resume=out.exists(), progress=progress)
        print(f"{recipe.name}: trained in {time.time() - start:.0f} s")
    model, config, _ = runs.load(out)
    metrics = pretrained.measure(model, config, recipe.check)
    if recipe.directory.exists():
        shutil.rmtree(recipe.directory)
    pretrained.export(
        out,
        recipe.directory,
        name=recipe.name,
        preset=recipe.preset,
        not_=recipe.not_,
        check={"eval": recipe.check, "metrics": metrics},
        commands={
            "evaluate": f"zoo eval pretrained:{recipe.name} --tasks {recipe.check['tasks']}",
            "train": f"python scripts/train_pretrained.py {recipe.name}",
            "check": f"python scripts/train_pretrained.py --check {recipe.name}",
        },
    )
    card = pretrained.read_card(recipe.directory)
    print(f"{recipe.name}: wrote {recipe.directory.relative_to(ROOT)} ({card['size']:,} bytes)")
    return recipe.directory


def check(recipe: Recipe) -> bool:
    """Measure the shipped model's card metrics again; print them; whether all agree."""
    import runs
    from runs import pretrained
    from runs.provenance import provenance

    card = pretrained.read_card(recipe.directory)
    loaded = runs.load(recipe.directory)
    same_host = card.get("cpu") == provenance().get("cpu") and card.get("host_kind") == "cpu"
    tolerance = 0.0 if same_host else TOLERANCE
    full = pretrained.measure(loaded.model, loaded.config)
    recorded, small = pretrained.recheck(recipe.directory)
    rows = [
        (key, value, full.get(key))
        for key, value in card["metrics"].items()
        if not key.startswith("train/") and not key.endswith("/step")
    ]
    rows += [(f"check {key}", value, small.get(key)) for key, value in recorded.items()]
    ok = True
    for key, want, got in rows:
        agrees = got is not None and abs(got - want) <= tolerance
        ok &= agrees
        print(
            f"  {key:<40} card {want:<12.6g} now {'-' if got is None else f'{got:<12.6g}'}"
            f"  {'ok' if agrees else 'DIFFERS'}"
        )
    where = "the same host kind: bit-equal" if same_host else f"another host: within {tolerance}"
    print(f"{recipe.name}: {'agrees' if ok else 'DIFFERS'} ({where})")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="recipes (default with --check: every one)")
    parser.add_argument("--list", action="store_true", help="list the recipes")
    parser.add_argument("--check", action="store_true", help="re-measure the shipped cards")
    parser.add_argument("--work", type=Path, default=ROOT / "results" / "pretrained")
    parser.add_argument("--reuse", type=Path, nargs="*", default=[])
    parser.add_argument("--no-progress", dest="progress", action="store_false")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in BY_NAME]
    if unknown:
        parser.error(f"unknown recipe(s) {unknown}; --list lists them")
    if args.list or not (args.names or args.check):
        for r in RECIPES:
            shipped = "shipped" if r.directory.is_dir() else "not exported yet"
            print(f"{r.name:<44} {r.preset:<58} seed {r.seed}  {shipped}")
        return 0
    if args.check:
        names = args.names or [r.name for r in RECIPES if r.directory.is_dir()]
        results = [check(BY_NAME[n]) for n in names]
        return 0 if all(results) else 1
    for name in args.names:
        train(BY_NAME[name], args.work, args.reuse, args.progress)
    return 0


if __name__ == "__main__":
    sys.exit(main())
