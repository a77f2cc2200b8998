"""Module activity of a preset's agent at initialization (before any update):
`python scripts/initial_activity.py PRESET [--episodes 16] [--seed 0] [--out FILE.json]`.

Prints, per module, the fraction of the steps of `--episodes` fresh episodes (actions sampled)
it was active at, as `zoo eval RUN --activity` does for a trained run: the baseline against
which modules that stop acting in training are measured."""

import argparse


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("preset")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    import dataclasses
    import json
    import pathlib

    import jax.random as jr

    from runs.activity import record_activity, summarize_activity
    from runs.experiments import get_preset
    from runs.run import build

    config = get_preset(args.preset)
    config = dataclasses.replace(config, run=dataclasses.replace(config.run, seed=args.seed))
    task, model = build(config)
    records = record_activity(task, model, jr.key(args.seed), args.episodes)  # pyright: ignore[reportArgumentType]
    summary = summarize_activity(records)
    print(args.preset, f"seed {args.seed}, {args.episodes} episodes at initialization:")
    print("active fraction per module:", " ".join(f"{f:.2f}" for f in summary["active_fraction"]))
    if args.out:
        path = pathlib.Path(args.out)
        table = json.loads(path.read_text()) if path.exists() else {}
        table[f"{args.preset} seed {args.seed}"] = {
            "preset": args.preset,
            "seed": args.seed,
            "episodes": args.episodes,
            "active_fraction": [round(f, 4) for f in summary["active_fraction"]],
        }
        path.write_text(json.dumps(table, indent=1) + "\n")


if __name__ == "__main__":
    main()
