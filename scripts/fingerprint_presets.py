"""Fingerprint the final parameters of a short run of each preset (for refactors that must keep
the numbers bit-identical): `python scripts/fingerprint_presets.py OUT.json [PRESET ...]`.

Each preset is run for 2 steps (1 per compiled call) with a meta-batch of at most 4 (the
reinforcement-learning presets with their own batch of environments, whose outer settings their
algorithm refuses to change) and a minimal evaluation, on one device; the SHA-256 of its final model arrays and its logged losses
are written to OUT.json. Compare two such files with `--compare A.json B.json`.
`docs/figures/fingerprints-v0.1.0.json` holds those of release 0.1.0 (commit 5184a78)."""

import dataclasses
import hashlib
import json
import os
import pathlib
import sys
import tempfile

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")

DEFAULT = [
    "schug2024/hyperteacher-compositional-cpu",
    "schug2024/hyperteacher-compositional-nonlinear-hypernet-cpu",
    "schug2024/hyperteacher-compositional-anil-cpu",
    "schug2024/hyperteacher-compositional-maml-cpu",
    "schug2024/teacher-student-discrete-connected-cpu",
    "schug2024/teacher-student-continuous-disconnected-cpu",
    "lake2019/mutual-exclusivity",
    "lake2019/addjump-permutation",
    "schug2024/preferences-compositional-linear-hypernet-cpu",
    "madan2021/doorkey-5x5-lstm",
    "madan2021/doorkey-5x5-rims",
    "madan2021/doorkey-5x5-meta-rims",
]


def fingerprint(name: str) -> dict:
    import equinox as eqx
    import jax
    import numpy as np

    import runs

    try:  # 0.2: presets are experiment plugins
        from runs.experiments import get_preset
    except ImportError:  # 0.1
        from runs.presets import get_preset  # pyright: ignore

    config = get_preset(name)
    replace = dataclasses.replace
    # The outer loop's settings sit on the bilevel and in-context algorithms' configs (0.2) or
    # on the run's config (0.1); RL algorithms have none.
    nested = hasattr(config.algorithm, "outer")
    holder = config.algorithm if nested else config
    outer = getattr(holder, "outer", None)
    if outer is not None and not _is_rl(config):
        holder = replace(holder, outer=replace(outer, meta_batch=min(outer.meta_batch, 4)))
        config = replace(config, algorithm=holder) if nested else holder
    config = replace(
        config,
        eval=replace(config.eval, every=0, tasks=1, batch=1, test_episodes=False),
        run=replace(config.run, steps=2, steps_per_call=1, checkpoint_every=1, devices=1),
    )
    with tempfile.TemporaryDirectory() as tmp:
        runs.train(config, tmp, progress=False)
        model = runs.load(tmp).model
        losses = [r["loss"] for r in runs.read_metrics(tmp) if r["pool"] == "train"]
    digest = hashlib.sha256()
    for leaf in jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_array)):
        digest.update(np.asarray(leaf).tobytes())
    return {"sha256": digest.hexdigest(), "losses": losses}


def _is_rl(config) -> bool:
    return hasattr(config.algorithm, "envs")


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--compare":
        a, b = (json.loads(pathlib.Path(p).read_text()) for p in argv[1:3])
        same = True
        for name in sorted(set(a) | set(b)):
            ok = a.get(name, {}).get("sha256") == b.get(name, {}).get("sha256")
            same &= ok
            print(f"{'same' if ok else 'DIFFERENT':<10} {name}")
        return 0 if same else 1
    out, names = argv[0], argv[1:] or DEFAULT
    results = {}
    for name in names:
        results[name] = fingerprint(name)
        print(name, results[name], flush=True)
        with open(out, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
