"""Zero-shot transfer (Madan et al. 2021, Table 1): every finished run of a sweep evaluated,
without any update, on other levels; mean return R and success rate S per agent and level,
with the mean and standard deviation over seeds, beside the paper's values.

    python scripts/zero_shot.py results/madan-doorkey [--levels doorkey-6x6 doorkey-8x8 doorkey-16x16]
        [--episodes 500] [--only rims meta-rims] [--include OTHER.csv] [--out docs/figures/madan2021-table1]

Each evaluation is `zoo eval RUN --task LEVEL --tasks EPISODES` (its JSON lands in the run
directory as `eval-LEVEL.json`, and is reused when it is there with as many episodes). Writes
OUT.csv (one row per run and level), OUT-summary.csv and OUT.png. The summary has the columns
of `zoo report`'s (`label,level,metric,mean,std,n,paper`, the metric `LEVEL.return` or
`LEVEL.success`), so that `zoo scoreboard` reads it as it reads a sweep's. `--include` adds the
rows of an earlier OUT.csv for agents not evaluated here (e.g. the same LSTM runs).

    python scripts/zero_shot.py --summarize docs/figures/madan2021-table1-cpu.csv

rewrites the summary and figure of a committed OUT.csv without evaluating anything.
"""

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

# Table 1 of the paper: (R, S) per agent for "Difficult" and "More Difficult" (sizes not
# given; read as DoorKey 6x6 and 8x8, docs/specs/meta-rims.md, B5).
PAPER = {
    ("meta-rims", "doorkey-6x6"): (0.97, 1.0),
    ("lstm", "doorkey-6x6"): (0.95, 1.0),
    ("rims", "doorkey-6x6"): (0.85, 0.89),
    ("meta-rims", "doorkey-8x8"): (0.45, 0.47),
    ("lstm", "doorkey-8x8"): (0.18, 0.19),
    ("rims", "doorkey-8x8"): (0.01, 0.02),
}


def evaluate(run: Path, level: str, episodes: int) -> dict:
    path = run / f"eval-{level}.json"
    if path.exists():
        report = json.loads(path.read_text())
        if report.get("episodes") == episodes:
            return report["pools"]["eval"]
    from runs.cli import main

    if main(["eval", str(run), "--task", level, "--tasks", str(episodes)]) != 0:
        raise SystemExit(f"zoo eval {run} --task {level} failed")
    report = json.loads(path.read_text())
    report["episodes"] = episodes
    path.write_text(json.dumps(report, indent=2) + "\n")
    return report["pools"]["eval"]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("sweep", type=Path, nargs="?")
    parser.add_argument(
        "--levels",
        nargs="+",
        default=["doorkey-5x5", "doorkey-6x6", "doorkey-8x8", "doorkey-16x16"],
    )
    parser.add_argument("--episodes", type=int, default=500)
    parser.add_argument("--only", nargs="+", default=None, help="the sweep's labels to evaluate")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--include", type=Path, nargs="*", default=[])
    parser.add_argument("--summarize", type=Path, default=None)
    args = parser.parse_args()
    if args.summarize is not None:
        rows = _read(args.summarize)
        levels = list(dict.fromkeys(r["level"] for r in rows))
        _write(rows, levels, args.summarize.with_suffix(""))
        return
    if args.sweep is None:
        parser.error("give the sweep directory (or --summarize OUT.csv)")
    out = args.out or args.sweep / "zero-shot"
    record = json.loads((args.sweep / "sweep.json").read_text())
    rows = []
    for run in record["runs"]:
        if args.only and run["label"] not in args.only:
            continue
        agent = run["facets"].get("agent", run["label"])
        for seed_dir in sorted((args.sweep / run["label"]).glob("seed_*")):
            if not (seed_dir / "checkpoints").exists():
                continue
            for level in args.levels:
                values = evaluate(seed_dir, level, args.episodes)
                rows.append(
                    {
                        "agent": agent,
                        "seed": seed_dir.name.removeprefix("seed_"),
                        "level": level,
                        "return": values["return"],
                        "success": values["success"],
                        "length": values["length"],
                    }
                )
                print(
                    f"{agent:>10} {seed_dir.name:>7} {level:>14}  R {values['return']:.3f}  "
                    f"S {values['success']:.3f}",
                    file=sys.stderr,
                )
    evaluated = {r["agent"] for r in rows}
    for other in args.include:
        rows += [
            r for r in _read(other) if r["agent"] not in evaluated and r["level"] in args.levels
        ]
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_suffix(".csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    _write(rows, args.levels, out)


def _read(path: Path) -> list[dict]:
    """The rows of an OUT.csv, with return, success and length as numbers."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for key in ("return", "success", "length"):
            r[key] = float(r[key])
    return rows


def _write(rows: list[dict], levels: list[str], out: Path) -> None:
    """OUT-summary.csv (zoo report's columns) and OUT.png from the per-run rows."""
    summary = []
    agents = list(dict.fromkeys(r["agent"] for r in rows))
    for agent in agents:
        for level in levels:
            mine = [r for r in rows if r["agent"] == agent and r["level"] == level]
            paper = PAPER.get((agent, level))
            for i, metric in enumerate(("return", "success")):
                values = [r[metric] for r in mine]
                summary.append(
                    {
                        "label": agent,
                        "level": level,
                        "metric": f"{level}.{metric}",
                        "mean": statistics.fmean(values),
                        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
                        "n": len(values),
                        "paper": paper[i] if paper else "",
                    }
                )
    with open(out.parent / f"{out.name}-summary.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(summary[0]))
        writer.writeheader()
        writer.writerows(summary)
    _plot(rows, summary, agents, levels, out.with_suffix(".png"))
    print(f"wrote {out.name}-summary.csv and {out.with_suffix('.png')} in {out.parent}")


def _plot(rows, summary, agents, levels, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / len(agents)
    for ax, metric in zip(axes, ("return", "success"), strict=True):
        for i, agent in enumerate(agents):
            xs = [j + (i - (len(agents) - 1) / 2) * width for j in range(len(levels))]
            means = [
                next(e for e in summary if e["label"] == agent and e["metric"] == f"{lv}.{metric}")[
                    "mean"
                ]
                for lv in levels
            ]
            ax.bar(xs, means, width, label=agent, alpha=0.7)
            for x, level in zip(xs, levels, strict=True):
                seeds = [r[metric] for r in rows if r["agent"] == agent and r["level"] == level]
                ax.scatter([x] * len(seeds), seeds, color="black", s=8, zorder=3)
                paper = PAPER.get((agent, level))
                if paper:
                    value = paper[0 if metric == "return" else 1]
                    ax.plot([x - width / 2, x + width / 2], [value, value], color="red", lw=2)
        ax.set_xticks(range(len(levels)), levels)
        ax.set_ylabel(f"mean {metric}" if metric == "return" else "success rate")
        ax.set_ylim(0, 1.05)
        ax.set_title(f"zero-shot {metric} (dots: seeds; red: the paper's Table 1)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
