"""`runs.progress.Ticker`: a status line that moves while work without steps runs."""

import io
import time

from runs.progress import Ticker


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_line_is_redrawn_with_the_time(monkeypatch):
    screen = _Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    with Ticker("zoo eval", interval=0.01) as ticker:
        ticker.phase("evaluating test")
        time.sleep(0.1)
    drawn = [line for line in screen.getvalue().split("\r") if "evaluating test" in line]
    assert len(drawn) >= 3  # redrawn while it ran, not once
    assert all("zoo eval: evaluating test... [00:0" in line for line in drawn)


def test_in_a_log_each_phase_is_one_line(monkeypatch):
    log = io.StringIO()
    monkeypatch.setattr("sys.stderr", log)
    with Ticker("zoo eval", interval=0.01) as ticker:
        ticker.phase("loading run")
        time.sleep(0.05)
        ticker.phase("evaluating test")
    assert log.getvalue() == "zoo eval: loading run...\nzoo eval: evaluating test...\n"


def test_disabled_it_shows_nothing(monkeypatch):
    screen = _Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    with Ticker("zoo eval", enabled=False) as ticker:
        ticker.phase("evaluating test")
    assert screen.getvalue() == ""
