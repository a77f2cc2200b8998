"""The hyperteacher runs of docs/papers/schug2024.md: the linear hypernetwork at CPU scale with
compositional vs non-compositional support, evaluated along training.

    python scripts/hyperteacher_results.py --out results/hyperteacher-cpu [--steps 6000] [--seeds 0]

Each (split, seed) is an ordinary run directory (resumable with the same command); the script
then collects their evaluation rows into `summary.csv` and draws `accuracy.png` (train, test
and OOD accuracy against outer steps, one panel per split).
"""

import argparse
import csv
import dataclasses
from pathlib import Path

from runs.config import EvalConfig
from runs.presets import get_preset
from runs.run import read_metrics, train

SPLITS = ("compositional", "non-compositional")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/hyperteacher-cpu"))
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--eval-every", type=int, default=500)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    args = parser.parse_args()

    rows = []
    for split in SPLITS:
        for seed in args.seeds:
            base = get_preset(f"schug2024/hyperteacher-{split}-cpu")
            config = dataclasses.replace(
                base,
                run=dataclasses.replace(base.run, steps=args.steps, seed=seed),
                eval=EvalConfig(every=args.eval_every, tasks=256, batch=64),
            )
            directory = args.out / f"{split}-seed{seed}"
            print(f"== {directory}")
            train(config, directory, resume=True)
            for row in read_metrics(directory):
                rows.append({"split": split, "seed": seed, **row})

    keys = ["split", "seed", "step", "pool", "loss", "accuracy"]
    with (args.out / "summary.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    plot(rows, args.out / "accuracy.png")
    print(f"wrote {args.out / 'summary.csv'} and {args.out / 'accuracy.png'}")


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(SPLITS), figsize=(5 * len(SPLITS), 3.8), sharey=True)
    styles = {"train": ("0.6", "-"), "test": ("tab:blue", "-"), "ood": ("tab:red", "-")}
    for ax, split in zip(axes, SPLITS, strict=True):
        for pool, (color, ls) in styles.items():
            points = sorted(
                (r["step"], r["accuracy"])
                for r in rows
                if r["split"] == split and r["pool"] == pool
            )
            if pool == "train":  # per-chunk training rows: thin them to the eval steps
                evals = {r["step"] for r in rows if r["split"] == split and r["pool"] == "test"}
                points = [p for p in points if p[0] in evals]
            if points:
                steps, acc = zip(*points, strict=True)
                ax.plot(steps, acc, color=color, ls=ls, marker="o", ms=3, label=pool)
        ax.axhline(1 / 8, color="0.8", lw=0.8, ls=":", label="chance")
        ax.set_title(f"{split} support")
        ax.set_xlabel("outer steps")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("query accuracy")
    axes[0].legend(loc="lower right")
    fig.suptitle("Linear hypernetwork on the hyperteacher (M=8, K=2, CPU scale)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
