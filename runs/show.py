"""`zoo show`: a picture of a few episodes of a task, for a person to check by eye.

The task draws each episode (`AbstractTask.show`: RGB panels with titles, NumPy only); this
module samples the episodes and lays the panels out with matplotlib, one row per episode. An
environment (`AbstractEnvironment`) draws states instead (`AbstractEnvironment.show`): each
row is one episode, its start state and then every few steps of random actions.
"""

from pathlib import Path

import jax
import jax.random as jr
import numpy as np

from tasks import AbstractEnvironment, AbstractTask


class NothingToShow(ValueError):
    """The task has no picture of its episodes, or the pool is unknown."""


def sample_episodes(task: AbstractTask, pool: str, episodes: int, seed: int) -> list:
    """`episodes` episodes of `pool`, drawn from `seed`, as a list of unbatched episodes."""
    if pool not in task.pools():
        raise NothingToShow(f"Unknown pool {pool!r}; this task's pools are {list(task.pools())}.")
    keys = jr.split(jr.fold_in(jr.key(seed), 3), episodes)
    batch = jax.jit(jax.vmap(lambda key: task.sample(key, pool)))(keys)
    batch = jax.tree.map(np.asarray, batch)
    return [jax.tree.map(lambda a, i=i: a[i], batch) for i in range(episodes)]


def panels_of(task: AbstractTask, task_name: str, episodes: list) -> list[list]:
    """The panels `(image, title)` of each episode; `NothingToShow` if the task has none."""
    rows = [task.show(episode) for episode in episodes]
    if any(row is None for row in rows) or not rows:
        raise NothingToShow(
            f"Task {task_name!r} has nothing to show: it draws no picture of its episodes "
            "(the grid worlds compositional-preferences and compositional-goals do)."
        )
    return rows  # pyright: ignore[reportReturnType]


def _keep_where(done: np.ndarray, old, new):
    """`old` in the episodes that are `done`, `new` in the others (batched pytrees)."""

    def pick(a, b):
        return np.where(done.reshape(-1, *[1] * (np.ndim(a) - 1)), a, b)

    return jax.tree.map(pick, old, new)


def rollout_rows(
    env: AbstractEnvironment,
    task_name: str,
    episodes: int,
    seed: int,
    frames: int = 6,
    every: int = 3,
) -> list[list]:
    """Panels `(image, title)` of `episodes` episodes of `env` from `seed`: the start state,
    then every `every` steps of uniformly random actions (`frames` panels a row); an episode
    that ends keeps its last state. `NothingToShow` if the environment draws no states."""
    keys = jr.split(jr.fold_in(jr.key(seed), 3), episodes)
    state, _ = jax.jit(jax.vmap(env.reset))(keys)
    step = jax.jit(jax.vmap(env.step))
    actions = env.io.actions or 1
    done = np.zeros(episodes, bool)
    returns = np.zeros(episodes)
    rows: list[list] = [[] for _ in range(episodes)]
    mission_text = getattr(env, "mission_text", None)
    for t in range((frames - 1) * every + 1):
        if t % every == 0:
            for i in range(episodes):
                one = jax.tree.map(lambda a, i=i: np.asarray(a[i]), state)
                image = env.show(one)
                if image is None:
                    raise NothingToShow(
                        f"Environment {task_name!r} has nothing to show: it draws no picture "
                        "of its states."
                    )
                if t == 0:
                    title = "start" + (f"\n{mission_text(one)}" if mission_text else "")
                else:
                    title = f"step {t}, return {returns[i]:.2f}" + (" (ended)" if done[i] else "")
                rows[i].append((image, title))
        key = jr.fold_in(jr.key(seed), 100 + t)
        action = jr.randint(key, (episodes,), 0, actions)
        new, _, reward, terminated, truncated = step(state, action, jr.split(key, episodes))
        state = _keep_where(done, state, new)
        returns += np.where(done, 0.0, np.asarray(reward))
        done |= np.asarray(terminated | truncated)
    return rows


def write_figure(rows: list[list], out: Path, title: str = "") -> Path:
    """Lay out `rows` of `(image, title)` panels, one row per episode, and save a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = max(len(row) for row in rows)
    fig, axes = plt.subplots(
        len(rows), columns, figsize=(2.6 * columns, 3.0 * len(rows)), squeeze=False
    )
    for r, row in enumerate(rows):
        for c in range(columns):
            ax = axes[r][c]
            ax.set_axis_off()
            if c < len(row):
                image, caption = row[c]
                ax.imshow(image, interpolation="nearest")
                ax.set_title(caption, fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def show(
    task: AbstractTask | AbstractEnvironment,
    task_name: str,
    *,
    pool: str = "train",
    episodes: int = 4,
    seed: int = 0,
    out: Path = Path("show.png"),
) -> Path:
    """Sample `episodes` episodes of `pool` and write their pictures to `out` (a PNG); for an
    environment (`pool` unused), its start states and a few random steps of each.

    **Raises:** `NothingToShow` for an unknown pool or a task without pictures."""
    if episodes < 1:
        raise NothingToShow(f"episodes must be >= 1, got {episodes}.")
    if isinstance(task, AbstractEnvironment):
        rows = rollout_rows(task, task_name, episodes, seed)
        title = f"{task_name}, seed {seed}: one episode per row, start then random actions"
        return write_figure(rows, out, title)
    rows = panels_of(task, task_name, sample_episodes(task, pool, episodes, seed))
    title = f"{task_name}, pool {pool!r}, seed {seed}: one episode per row, support then query"
    return write_figure(rows, out, title)
