"""Which runs of a sweep diverged in meta-training: for each run, its outer training loss at its
minimum, at the end (mean of the last five `pool: train` records of `metrics.jsonl`) and the
first step after the minimum where it passed `--factor` times it; beside the run's last
evaluation of each pool's chosen metrics.

    python scripts/outer_divergence.py docs/figures/schug2024-fig2-cpu/fig2d-grid-continuous-cpu
        [--factor 10] [--metrics identification.alignment identification.r2_test] [--csv OUT]

A run is marked `diverged` when its final loss is more than `--factor` times its minimum. Reads
only the run directories (DIR/<label>/seed_<k>/metrics.jsonl); trains nothing.
"""

import argparse
import csv
import json
import sys
from pathlib import Path


def read_run(run: Path, metrics: list[str], factor: float) -> dict[str, object] | None:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line]
    train = [r for r in rows if r.get("pool") == "train" and "loss" in r]
    if not train:
        return None
    losses = [float(r["loss"]) for r in train]
    i_min = min(range(len(losses)), key=losses.__getitem__)
    final = sum(losses[-5:]) / len(losses[-5:])
    rise = next((r["step"] for r in train[i_min:] if r["loss"] > factor * losses[i_min]), None)
    out: dict[str, object] = {
        "label": run.parent.name,
        "seed": run.name.removeprefix("seed_"),
        "min_loss": losses[i_min],
        "min_step": train[i_min]["step"],
        "final_loss": final,
        "final_over_min": final / losses[i_min],
        f"first_step_over_{factor:g}x": rise,
        "diverged": final > factor * losses[i_min],
    }
    for name in metrics:
        pool, _, key = name.partition(".")
        last = [r for r in rows if r.get("pool") == pool and key in r]
        out[name] = last[-1][key] if last else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("dir", type=Path, help="a sweep directory (or a zoo report export)")
    parser.add_argument("--factor", type=float, default=10.0)
    parser.add_argument(
        "--metrics",
        nargs="*",
        default=["identification.alignment", "identification.r2_test"],
        help="POOL.KEY of the last evaluation to print beside each run",
    )
    parser.add_argument("--csv", type=Path, default=None, help="also write the table here")
    args = parser.parse_args()
    runs = sorted(p.parent for p in args.dir.glob("*/seed_*/metrics.jsonl"))
    if not runs:
        sys.exit(f"no runs under {args.dir}: expected {args.dir}/<label>/seed_<k>/metrics.jsonl")
    table = [r for r in (read_run(run, args.metrics, args.factor) for run in runs) if r]
    for r in table:
        extra = " ".join(
            f"{m.split('.')[-1]} {r[m]:.3f}" if isinstance(r[m], float) else f"{m} -"
            for m in args.metrics
        )
        print(
            f"{r['label']:24s} seed {r['seed']}  loss min {r['min_loss']:.1e} at {r['min_step']}"
            f"  final {r['final_loss']:.1e} ({r['final_over_min']:6.1f}x)"
            f"  {'DIVERGED' if r['diverged'] else '        '}  {extra}"
        )
    diverged = sum(bool(r["diverged"]) for r in table)
    print(f"{diverged} of {len(table)} runs end above {args.factor:g}x their minimum outer loss")
    if args.csv:
        with args.csv.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(table[0]))
            writer.writeheader()
            writer.writerows(table)


if __name__ == "__main__":
    main()
