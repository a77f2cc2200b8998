"""`zoo show`: a picture of a few episodes of a task, for a person to check by eye.

The task draws each episode (`AbstractTask.show`: RGB panels with titles, NumPy only); this
module samples the episodes and lays the panels out with matplotlib, one row per episode.
"""

from pathlib import Path

import jax
import jax.random as jr
import numpy as np

from tasks import AbstractTask


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
    task: AbstractTask,
    task_name: str,
    *,
    pool: str = "train",
    episodes: int = 4,
    seed: int = 0,
    out: Path = Path("show.png"),
) -> Path:
    """Sample `episodes` episodes of `pool` and write their pictures to `out` (a PNG).

    **Raises:** `NothingToShow` for an unknown pool or a task without pictures."""
    if episodes < 1:
        raise NothingToShow(f"episodes must be >= 1, got {episodes}.")
    rows = panels_of(task, task_name, sample_episodes(task, pool, episodes, seed))
    title = f"{task_name}, pool {pool!r}, seed {seed}: one episode per row, support then query"
    return write_figure(rows, out, title)
