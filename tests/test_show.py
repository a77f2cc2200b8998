"""`zoo show`: a PNG of a few episodes of each grid world; unknown pools and tasks without
pictures are refused with a message."""

import pytest

from runs.cli import main

TINY = {
    "compositional-preferences": [
        "--task.shots-support", "2", "--task.shots-query", "2", "--task.horizon", "3",
    ],
    "compositional-goals": ["--task.max-len", "64"],
}  # fmt: skip


@pytest.mark.parametrize("task", sorted(TINY))
def test_show_writes_a_png(task, tmp_path, capsys):
    out = tmp_path / "show.png"
    args = ["show", task, "--episodes", "2", "--pool", "ood", "--out", str(out), *TINY[task]]
    assert main(args) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 1000
    assert f"wrote {out}" in capsys.readouterr().out


def test_show_refuses_an_unknown_pool(tmp_path, capsys):
    out = tmp_path / "show.png"
    args = ["show", "compositional-goals", "--pool", "bogus", "--out", str(out)]
    assert main([*args, *TINY["compositional-goals"]]) == 2
    err = capsys.readouterr().err
    assert "Unknown pool 'bogus'" in err and "['train', 'test', 'ood']" in err
    assert not out.exists()


def test_show_says_when_a_task_has_nothing_to_show(tmp_path, capsys):
    assert main(["show", "hyperteacher", "--out", str(tmp_path / "x.png")]) == 2
    assert "nothing to show" in capsys.readouterr().err
