"""Helpers of the fidelity tests (`test_minigrid.py`, `test_babyai.py`): the Farama `minigrid`
package as an oracle. Its layout, agent and mission are copied into our state; both replay the
same actions; observations, rewards and termination are compared at every step."""

from collections import deque

import jax
import jax.numpy as jnp
import numpy as np

from tasks.minigrid import DIR_TO_VEC, MiniGridState, new_state, tokenize


def convert(env) -> MiniGridState:
    """Our state of a freshly reset `minigrid` env (BabyAI's instruction objects included)."""
    u = env.unwrapped
    grid = np.transpose(u.grid.encode(), (1, 0, 2)).copy()  # MiniGrid encodes [x, y]
    h, w = grid.shape[:2]
    tracked = np.zeros((h, w), bool)
    goal_cells = np.zeros((h, w), bool)
    instrs = getattr(u, "instrs", None)
    if instrs is not None:
        desc = instrs.desc
        for x in range(w):
            for y in range(h):
                cell = u.grid.get(x, y)
                if cell is not None and any(cell is obj for obj in desc.obj_set):
                    tracked[y, x] = True
        for x, y in desc.obj_poss:
            goal_cells[y, x] = True
    return new_state(
        grid, np.array(u.agent_pos), u.agent_dir, tokenize(u.mission), tracked, goal_cells
    )


def face_actions(env, target: tuple[int, int]) -> list[int]:
    """Shortest list of left/right/forward actions after which the agent of the `minigrid`
    env faces `target` (x, y), walking only over cells it can overlap; [] if it cannot."""
    u = env.unwrapped
    start = (int(u.agent_pos[0]), int(u.agent_pos[1]), int(u.agent_dir))
    seen = {start: []}
    queue = deque([start])
    while queue:
        x, y, d = queue.popleft()
        dx, dy = DIR_TO_VEC[d]
        if (x + dx, y + dy) == tuple(target):
            return seen[(x, y, d)]
        moves = [(0, (x, y, (d + 3) % 4)), (1, (x, y, (d + 1) % 4))]
        cell = u.grid.get(x + dx, y + dy)
        if cell is None or cell.can_overlap():
            moves.append((2, (x + dx, y + dy, d)))
        for action, nxt in moves:
            if nxt not in seen:
                seen[nxt] = [*seen[(x, y, d)], action]
                queue.append(nxt)
    return []


class Replay:
    """Steps a `minigrid` env and our environment side by side and compares them."""

    def __init__(self, env, ours):
        self.env = env
        self.ours = ours
        self.step_fn = jax.jit(ours.step)
        self.observe = jax.jit(ours.observe)
        self.steps = 0
        self.successes = 0

    def reset(self, seed: int) -> None:
        obs, _ = self.env.reset(seed=seed)
        self.state = convert(self.env)
        ours = self.observe(self.state)
        np.testing.assert_array_equal(np.asarray(ours["image"]), obs["image"])
        assert int(ours["direction"]) == obs["direction"]
        self.done = False

    def step(self, action: int) -> bool:
        """One action in both; asserts they agree; True when the episode ended."""
        obs, reward, terminated, truncated, _ = self.env.step(action)
        self.state, ours, r, term, trunc = self.step_fn(
            self.state, jnp.int32(action), jax.random.key(0)
        )
        where = f"step {self.steps} action {action}"
        np.testing.assert_array_equal(np.asarray(ours["image"]), obs["image"], err_msg=where)
        assert int(ours["direction"]) == obs["direction"], where
        assert abs(float(r) - float(reward)) < 1e-5, (where, float(r), reward)
        assert bool(term) == terminated, where
        assert bool(trunc) == truncated, where
        self.steps += 1
        self.successes += int(terminated and reward > 0)
        self.done = terminated or truncated
        return self.done

    def run(self, actions) -> None:
        for action in actions:
            if self.step(int(action)):
                return


def random_actions(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random actions weighted towards moving and interacting."""
    return rng.choice(7, size=n, p=[0.15, 0.15, 0.35, 0.12, 0.1, 0.1, 0.03])
