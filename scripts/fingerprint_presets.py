"""Fingerprint the final parameters of a short run of each preset (for refactors that must keep
the numbers bit-identical): `python scripts/fingerprint_presets.py OUT.json [PRESET ...]`.

Each preset is run for 2 outer steps (1 per compiled call) with a meta-batch of at most 4 and a
minimal evaluation, on one device; the SHA-256 of its final model arrays and its logged losses
are written to OUT.json. Compare two such files with `--compare A.json B.json`."""

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
]


def fingerprint(name: str) -> dict:
    import equinox as eqx
    import jax
    import numpy as np

    import runs
    from runs.presets import get_preset

    config = get_preset(name)
    replace = dataclasses.replace
    outer = config.outer
    config = replace(
        config,
        outer=replace(outer, meta_batch=min(outer.meta_batch, 4)),
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
