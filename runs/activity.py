"""Which modules of an agent are active at each step (as papers on modular agents draw it):
recorded over a few episodes and drawn as a PNG, so a person can see whether modules
specialise, take turns or die. `zoo eval DIR --activity N` writes `DIR/activity.png` and
`DIR/activity.json`."""

import json
from pathlib import Path

import equinox as eqx
import jax
import jax.numpy as jnp
import jax.random as jr
import jax.tree_util as jtu
import numpy as np
from jaxtyping import Array, PRNGKeyArray

from tasks import AbstractEnvironment
from zoo import AbstractModuleActivity


@eqx.filter_jit
def _record(
    env: AbstractEnvironment, model: AbstractModuleActivity, key: PRNGKeyArray, episodes: int
) -> dict[str, Array]:
    reset_key, run_key = jr.split(key)
    state, obs = jax.vmap(env.reset)(jr.split(reset_key, episodes))
    initial = model.initial_memory()  # pyright: ignore[reportAttributeAccessIssue]
    memory = jtu.tree_map(lambda m: jnp.broadcast_to(m, (episodes, *m.shape)), initial)
    over = jnp.zeros(episodes, bool)

    def body(carry, key):
        state, obs, memory, over = carry
        action_key, env_key = jr.split(key)
        logits, _, memory, active = jax.vmap(lambda o, m: model.activity(o, m))(obs, memory)
        action = jr.categorical(action_key, logits)
        state, obs, reward, terminated, truncated = jax.vmap(env.step)(
            state, action, jr.split(env_key, episodes)
        )
        record = {"active": active, "alive": ~over, "reward": jnp.where(over, 0.0, reward)}
        return (state, obs, memory, over | terminated | truncated), record

    _, records = jax.lax.scan(body, (state, obs, memory, over), jr.split(run_key, env.max_steps))
    return jtu.tree_map(lambda x: jnp.swapaxes(x, 0, 1), records)


def record_activity(
    env: AbstractEnvironment, model: AbstractModuleActivity, key: PRNGKeyArray, episodes: int
) -> dict[str, np.ndarray]:
    """The modules active at every step of the first episode in each of `episodes` fresh
    environments, acting by sampling from the policy: `active [episodes, steps, modules]`,
    `alive [episodes, steps]` (the episode still running at that step), `reward [episodes,
    steps]`.

    **Raises:** `ValueError` if `model` does not report its modules' activity."""
    if not isinstance(model, AbstractModuleActivity):
        raise ValueError(
            f"{type(model).__name__} does not report which of its modules are active "
            "(zoo.AbstractModuleActivity); train a modular agent such as rims-agent."
        )
    return {k: np.asarray(v) for k, v in _record(env, model, key, episodes).items()}


def summarize_activity(records: dict[str, np.ndarray]) -> dict:
    """Per module, the fraction of the episodes' steps it was active at; episode lengths and
    returns."""
    alive = records["alive"]
    steps = alive.sum()
    fraction = (records["active"] & alive[..., None]).sum(axis=(0, 1)) / max(int(steps), 1)
    return {
        "active_fraction": [float(f) for f in fraction],
        "episode_lengths": [int(n) for n in alive.sum(axis=1)],
        "episode_returns": [float(r) for r in records["reward"].sum(axis=1)],
    }


def plot_activity(records: dict[str, np.ndarray], path: Path, title: str) -> None:
    """One panel per episode: modules (rows) against steps (columns), active in dark; and the
    fraction of steps each module was active."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    active, alive = records["active"], records["alive"]
    episodes, _, modules = active.shape
    summary = summarize_activity(records)
    fig, axes = plt.subplots(
        episodes + 1, 1, figsize=(10, 1.0 + 0.45 * modules * (episodes + 1)), squeeze=False
    )
    for i in range(episodes):
        length = max(int(alive[i].sum()), 1)
        ax = axes[i, 0]
        ax.imshow(
            active[i, :length].T,
            aspect="auto",
            cmap="Greys",
            vmin=0,
            vmax=1,
            interpolation="nearest",
        )
        ax.set_yticks(range(modules), [f"module {m}" for m in range(modules)], fontsize=7)
        ax.set_title(
            f"episode {i}: {length} steps, return {summary['episode_returns'][i]:.2f}",
            fontsize=8,
        )
        ax.set_xlabel("step", fontsize=7)
    ax = axes[episodes, 0]
    ax.bar(range(modules), summary["active_fraction"], color="0.3")
    ax.set_xticks(range(modules), [f"module {m}" for m in range(modules)], fontsize=7)
    ax.set_ylim(0, 1)
    ax.set_ylabel("active fraction", fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_activity(
    directory: Path, env: AbstractEnvironment, model, key: PRNGKeyArray, episodes: int, title: str
) -> dict:
    """Record, summarize and plot; `directory/activity.json` and `directory/activity.png`."""
    records = record_activity(env, model, key, episodes)
    summary = summarize_activity(records)
    (directory / "activity.json").write_text(json.dumps(summary, indent=2) + "\n")
    plot_activity(records, directory / "activity.png", title)
    return summary
