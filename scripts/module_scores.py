"""The input-attention scores of a trained RIMs agent's modules:
`python scripts/module_scores.py RUN_DIR [--envs 64] [--steps 60] [--seed 0]`.

Runs the run's newest agent in `--envs` fresh environments of its task for `--steps` steps
(actions sampled, no dropout) and prints, per module, the mean |score| (`q_j . k / sqrt(d)`,
the quantity the top-k ranks) and its standard deviation: a module whose state stays zero
scores exactly 0. Used to size `--model.score-noise`."""

import argparse
import math


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    import jax
    import jax.numpy as jnp
    import jax.random as jr
    import numpy as np

    import runs
    from runs.run import build_task
    from tasks import AbstractEnvironment
    from zoo.agents import ActorCritic
    from zoo.rims import RIMCell

    loaded = runs.load(args.run)
    model, env = loaded.model, build_task(loaded.config)
    if not isinstance(model, ActorCritic) or not isinstance(model.core, RIMCell):
        raise SystemExit(f"{args.run}: the agent has no RIMs core.")
    assert isinstance(env, AbstractEnvironment)
    core = model.core
    n = args.envs
    key = jr.key(args.seed)
    state, obs = jax.vmap(env.reset)(jr.split(jr.fold_in(key, 0), n))
    memory = jax.tree.map(lambda m: jnp.broadcast_to(m, (n, *m.shape)), model.initial_memory())

    @jax.jit
    def step(state, obs, memory, key):
        features = model.encode_batch(obs)
        query = jnp.einsum("bnh,nhk->bnk", memory[0], core.input_query.weight)
        if core.query_bias is not None:
            query = query + core.query_bias
        k = (features @ core.input_key_value)[:, : core.key_size]
        score = jnp.einsum("bnk,bk->bn", query, k) / math.sqrt(core.key_size)
        logits, _, memory = jax.vmap(lambda f, m: model.step(f, m))(features, memory)
        action_key, env_key = jr.split(key)
        action = jr.categorical(action_key, logits)
        state, obs, *_ = jax.vmap(env.step)(state, action, jr.split(env_key, n))
        return state, obs, memory, score

    scores = []
    for t in range(args.steps):
        state, obs, memory, score = step(state, obs, memory, jr.fold_in(key, t + 1))
        scores.append(np.asarray(score))
    s = np.stack(scores)
    print(f"{args.run}: {n} environments x {args.steps} steps")
    print("mean |score| per module:", " ".join(f"{x:.3f}" for x in np.abs(s).mean(axis=(0, 1))))
    print("std of score per module:", " ".join(f"{x:.3f}" for x in s.std(axis=(0, 1))))


if __name__ == "__main__":
    main()
