"""Do the built-in learners train with default flags? `zoo train hyperteacher anil` (and
`maml`) with every engine setting at its default, for a few dozen outer steps, once with the
inner Adam's `eps_root` at its default (float32 epsilon) and once at 0 (the old default):

    python scripts/check_default_flags.py [--steps 30] [--models anil maml]

Prints, per run, the training loss every 10 steps or the divergence message."""

import argparse
import tempfile

import plugins
import runs
from runs.algorithms.config import BilevelConfig
from runs.config import EvalConfig, InnerConfig, RunConfig, TrainConfig
from runs.run import TrainingDiverged


def _ensure_registered() -> None:
    """Where the distribution is not installed (a bare machine), register the built-ins."""
    if not any(e.name == "anil" for e in plugins.list_models()):
        from plugins import builtin

        for spec in vars(builtin).values():
            if isinstance(spec, plugins.ModelSpec | plugins.TaskSpec):
                plugins.register(spec, dist=plugins.own_distribution())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--models", nargs="+", default=["anil", "maml"])
    parser.add_argument("--task", default="hyperteacher")
    args = parser.parse_args()
    _ensure_registered()
    for model in args.models:
        for eps_root in (InnerConfig().eps_root, 0.0):
            config = TrainConfig(
                task=plugins.task_spec(args.task).config(),
                model=plugins.model_spec(model).config(),
                task_name=args.task,
                model_name=model,
                algorithm=BilevelConfig(inner=InnerConfig(eps_root=eps_root)),
                eval=EvalConfig(every=0, tasks=64),
                run=RunConfig(steps=args.steps, steps_per_call=10, checkpoint_every=10),
            )
            with tempfile.TemporaryDirectory() as out:
                try:
                    runs.train(config, out, progress=False)
                    rows = runs.read_metrics(out)
                    losses = [round(r["loss"], 4) for r in rows if r["pool"] == "train"]
                    ood = [r for r in rows if r["pool"] == "ood"]
                    result = f"trains: losses {losses}"
                    if ood:
                        result += f"; ood accuracy {ood[-1].get('accuracy', float('nan')):.3f}"
                except TrainingDiverged as error:
                    result = f"DIVERGED: {error}"
            print(f"{args.task} {model} eps_root={eps_root:g}: {result}", flush=True)


if __name__ == "__main__":
    main()
