"""The `sines` experiment: presets and a sweep comparing ANIL-style adaptation with the
multi-task baseline on sine regression, at a size that trains in seconds."""

import runs

from .config import MultitaskConfig, SineConfig, SineMLPConfig


def _config(algorithm, steps: int = 4) -> runs.TrainConfig:
    return runs.TrainConfig(
        task=SineConfig(),
        model=SineMLPConfig(),
        task_name="zoo-full-plugin:sine",
        model_name="zoo-full-plugin:sine-mlp",
        algorithm=algorithm,
        eval=runs.EvalConfig(every=0, tasks=4, batch=4),
        run=runs.RunConfig(steps=steps, steps_per_call=2, checkpoint_every=2),
    )


def _compare(presets) -> runs.Sweep:
    return runs.Sweep(
        "Adaptation against the multi-task baseline on held-out phases",
        tuple(
            runs.SweepRun(name, presets[name].config, {"algorithm": name.removeprefix("sine-")})
            for name in ("sine-anil", "sine-multitask")
        ),
        metrics=("ood.mse",),
        x="algorithm",
        paper={"sine-anil": {"ood.mse": 0.5}},
        seeds=(0, 1),
    )


def experiment() -> runs.Experiment:
    """The factory of the `sines` experiment."""
    outer = runs.OuterConfig(lr=1e-2, meta_batch=4)
    return runs.Experiment(
        presets={
            "sine-anil": runs.Preset(
                _config(runs.BilevelConfig(inner=runs.InnerConfig(steps=2, lr=0.1), outer=outer)),
                "sine regression, readout adapted per task (bilevel)",
            ),
            "sine-multitask": runs.Preset(
                _config(MultitaskConfig(outer=outer)), "sine regression, multi-task baseline"
            ),
        },
        sweeps={"compare": _compare},
        description="A tiny example experiment of the zoo-full-plugin package.",
    )
