"""The gradient of one PPO minibatch's recurrence, stepped frame by frame against
`AbstractActorCritic.unroll` (the default and the agent's own), for the zoo's agents.

    python scripts/benchmark_unroll.py [--model rims-agent|lstm-agent] [--frames 20]
        [--envs 64] [--calls 40] [--json out.json]

The agent is built for DoorKey-5x5 as a PPO run builds it; the features are random (the
encoders are not timed), one episode in ten starts mid-sequence, and every frame has its own
dropout key. Each variant's loss is the sum of the first action's log-probability and the
squared values; it is differentiated with respect to every leaf of the agent. The variants
are compiled first, then called in turn (`--calls` rounds, so that the host's drift falls on
all of them alike), and each call is timed with `jax.block_until_ready`:

- `step`: a `lax.scan` of `agent.step`, vmapped over the environments, as PPO's loss ran
  before `unroll` existed;
- `default`: `AbstractActorCritic.unroll`, the default, which is that scan;
- `unroll`: the agent's own `unroll` (for the RIMs agent: its inputs projected and its noise
  drawn before the recurrence, each step rematerialized in the backward pass but for its
  matrix products; for the LSTM agent, the default);
- `step-no-dropout` (RIMs only): `step` with the cell's dropout at 0, what dropout costs.

It prints, per variant, the best and the median milliseconds, and the largest difference of
its loss and gradient from `step`'s.
"""

import argparse
import json
import os
import statistics
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="rims-agent", choices=["rims-agent", "lstm-agent"])
    parser.add_argument("--frames", type=int, default=20, help="frames per sequence")
    parser.add_argument("--envs", type=int, default=64, help="sequences")
    parser.add_argument("--calls", type=int, default=40, help="timed calls of each variant")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import jax.random as jr

    import plugins
    from runs.algorithms.config import PPOConfig
    from runs.config import RunConfig, TrainConfig
    from runs.run import build, resolve
    from zoo import AbstractActorCritic

    def agent_for(model: dict | None = None):
        spec = plugins.model_spec(args.model)
        config = spec.config() if model is None else spec.config(**model)
        train = TrainConfig(
            task=plugins.task_spec("doorkey-5x5").config(),
            model=config,
            task_name="doorkey-5x5",
            model_name=args.model,
            algorithm_name="ppo",
            algorithm=PPOConfig(),
            run=RunConfig(devices=1),
        )
        return build(resolve(train))[1]

    agent = agent_for()
    frames, envs = args.frames, args.envs
    size = agent.encode_batch(
        {"image": jnp.zeros((1, 7, 7, 3), jnp.uint8), "direction": jnp.zeros((1,), jnp.int32)}
    ).shape[-1]
    features = jr.normal(jr.key(1), (frames, envs, size))
    keys = jr.split(jr.key(2), (frames, envs))
    mask = (jr.uniform(jr.key(3), (frames, envs)) > 0.1).astype(jnp.float32)
    memory = jax.vmap(lambda _: agent.initial_memory())(jnp.arange(envs))

    def step_by_step(agent, features, memory, mask, keys):
        def body(memory, inputs):
            f, m, k = inputs
            memory = jax.vmap(agent.reset_memory)(memory, m)
            logits, value, memory = jax.vmap(lambda f, m, k: agent.step(f, m, key=k))(f, memory, k)
            return memory, (logits, value)

        memory, (logits, value) = jax.lax.scan(body, memory, (features, mask, keys))
        return logits, value, memory

    def loss_of(unroll):
        def loss(agent):
            logits, value, _ = unroll(agent, features, memory, mask, keys)
            return jnp.sum(jax.nn.log_softmax(logits)[..., 0]) + jnp.sum(value**2)

        return eqx.filter_jit(eqx.filter_value_and_grad(loss))

    variants = {
        "step": (agent, loss_of(step_by_step)),
        "default": (agent, loss_of(AbstractActorCritic.unroll)),
        "unroll": (agent, loss_of(lambda a, *rest: a.unroll(*rest))),
    }
    if args.model == "rims-agent":
        variants["step-no-dropout"] = (agent_for({"dropout": 0.0}), loss_of(step_by_step))

    print(f"host: {os.cpu_count()} CPU cores, load {os.getloadavg()}, JAX {jax.__version__}")
    print(f"{args.model}: gradient of {frames} frames x {envs} sequences, {args.calls} calls each")
    reference = variants["step"][1](agent)
    differences = {}
    for name, (model, fn) in variants.items():
        value, grad = fn(model)
        if model is agent:
            differences[name] = {
                "loss": float(jnp.abs(value - reference[0])),
                "grad": max(
                    float(jnp.max(jnp.abs(a - b)))
                    for a, b in zip(
                        jax.tree.leaves(grad), jax.tree.leaves(reference[1]), strict=True
                    )
                ),
            }
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.calls):
        for name, (model, fn) in variants.items():
            start = time.perf_counter()
            jax.block_until_ready(fn(model))
            times[name].append(time.perf_counter() - start)
    rows = {}
    for name, ts in times.items():
        rows[name] = {"best_ms": 1e3 * min(ts), "median_ms": 1e3 * statistics.median(ts)}
        diff = differences.get(name)
        note = (
            ""
            if diff is None
            else f"  |loss diff| {diff['loss']:.2g}, max |grad diff| {diff['grad']:.2g}"
        )
        print(
            f"  {name:16s} best {rows[name]['best_ms']:7.2f} ms  median {rows[name]['median_ms']:7.2f} ms{note}"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {
                    "model": args.model,
                    "frames": frames,
                    "envs": envs,
                    "calls": args.calls,
                    "load": os.getloadavg(),
                    "times": rows,
                    "differences": differences,
                    "max_abs_grad": max(
                        float(jnp.max(jnp.abs(g))) for g in jax.tree.leaves(reference[1])
                    ),
                },
                f,
                indent=2,
            )


if __name__ == "__main__":
    main()
