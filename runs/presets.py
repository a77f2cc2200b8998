"""Named presets: the papers' settings as plain `TrainConfig` values (flags override them).

`schug2024/hyperteacher-*` follow Schug et al. 2024, Appendix C.2, with the settings of the
authors' code (REFERENCE_FACTS.md): teacher 16-32-32-32-8 with M=8 modules, K=2, 256 + 256
shots, meta-batch 128, 200k second-order outer steps, linear hypernet with hidden 128, 3 hidden
layers and T = 4M templates, inner AdamW lr 0.3 for 10 steps, outer AdamW 1e-3 / wd 1e-2 /
clip 1.0. The `-cpu` presets are the CPU-scale versions used in docs/results.md.
"""

import dataclasses
import difflib

from tasks.config import HyperteacherConfig
from zoo.config import LinearHypernetConfig

from .config import EvalConfig, InnerConfig, OuterConfig, RunConfig, TrainConfig


def _hyperteacher(split: str, **task) -> TrainConfig:
    return TrainConfig(
        task=HyperteacherConfig(split=split, **task),  # pyright: ignore[reportArgumentType]
        model=LinearHypernetConfig(hidden=128, num_hidden=3, num_templates=32),
        task_name="hyperteacher",
        model_name="linear-hypernet",
        inner=InnerConfig(steps=10, lr=0.3, weight_decay=1e-4, mode="second-order"),
        outer=OuterConfig(lr=1e-3, weight_decay=1e-2, clip=1.0, meta_batch=128),
        eval=EvalConfig(every=1000, tasks=512, batch=64),
        run=RunConfig(steps=200_000, steps_per_call=100, checkpoint_every=5000),
    )


def _cpu(config: TrainConfig) -> TrainConfig:
    """The small setting of REFERENCE_FACTS.md (meta-batch 32, 64 + 64 shots, hidden 64)."""
    return dataclasses.replace(
        config,
        task=dataclasses.replace(config.task, shots_support=64, shots_query=64),
        model=dataclasses.replace(config.model, hidden=64),
        outer=dataclasses.replace(config.outer, meta_batch=32),
        eval=EvalConfig(every=1000, tasks=256, batch=64),
        run=RunConfig(steps=6000, steps_per_call=100, checkpoint_every=1000),
    )


_SPLITS = {
    "compositional": "random 3/4 of the module combinations for training, every module covered",
    "non-compositional": "the last module (in the last layer) only in OOD tasks",
    "connected": "one-hots plus neighbouring pairs per layer (connected support)",
    "disconnected": "one-hots or pairs from one half of the modules only (disconnected support)",
}

PRESETS: dict[str, tuple[str, TrainConfig]] = {}
for _split, _text in _SPLITS.items():
    PRESETS[f"schug2024/hyperteacher-{_split}"] = (
        f"Fig. 3, linear hypernet, paper size: {_text}",
        _hyperteacher(_split),
    )
    PRESETS[f"schug2024/hyperteacher-{_split}-cpu"] = (
        "the same at CPU scale (M=8, K=2, meta-batch 32, 64+64 shots, hidden 64, 6k steps)",
        _cpu(_hyperteacher(_split)),
    )


def get_preset(name: str) -> TrainConfig:
    """The preset `name`; an unknown name is an error listing the close matches."""
    if name not in PRESETS:
        close = difflib.get_close_matches(name, PRESETS, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise SystemExit(f"zoo: unknown preset {name!r}.{hint} `zoo presets` lists them all.")
    return PRESETS[name][1]
