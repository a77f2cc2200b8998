"""Module activity of a modular agent (`runs.activity`, `zoo eval --activity`)."""

import jax.random as jr
import numpy as np
import pytest
import rl_toys

from runs.activity import record_activity, summarize_activity, write_activity
from tasks.minigrid_levels import DoorKey
from zoo.agents import make_rims
from zoo.config import RIMsAgentConfig


def test_activity_records_k_active_modules_per_step(tmp_path):
    env = DoorKey(5, max_steps=12)
    config = RIMsAgentConfig(num_modules=4, top_k=2, hidden=4, image_dim=8, head_hidden=8)
    agent = make_rims(config, io=env.io, key=jr.key(0))
    records = record_activity(env, agent, jr.key(1), episodes=3)
    assert records["active"].shape == (3, 12, 4)
    alive = records["alive"]
    assert alive[:, 0].all()
    np.testing.assert_array_equal(records["active"].sum(axis=-1)[alive], 2)
    summary = summarize_activity(records)
    assert sum(summary["active_fraction"]) == pytest.approx(2.0)
    assert summary["episode_lengths"] == [int(n) for n in alive.sum(axis=1)]
    again = write_activity(tmp_path, env, agent, jr.key(1), 3, "test")
    assert again == summary  # same key, same episodes
    assert (tmp_path / "activity.png").stat().st_size > 0


def test_an_agent_without_modules_is_refused():
    env = rl_toys.Corridor(4)
    with pytest.raises(ValueError, match="rims-agent"):
        record_activity(env, rl_toys.TinyAgent(env.io, 4, key=jr.key(0)), jr.key(1), 2)  # pyright: ignore[reportArgumentType]
