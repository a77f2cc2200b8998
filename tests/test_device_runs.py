"""The deadline rule of `scripts/device_runs.py` (several runs sharing a lent GPU)."""

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "device_runs", Path(__file__).parents[1] / "scripts" / "device_runs.py"
)
assert _spec is not None and _spec.loader is not None
device_runs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(device_runs)
runs_to_keep = device_runs.runs_to_keep
rate = device_runs.rate

GIVEN = ["a", "b", "c", "d"]


def test_keeps_every_run_that_can_end_in_time():
    remaining = {s: 1000 for s in GIVEN}
    rates = {s: 10.0 for s in GIVEN}  # 100 s each at the current share
    assert runs_to_keep(GIVEN, remaining, rates, GIVEN, 200.0, 0.85, 30.0) == GIVEN


def test_stops_the_runs_furthest_from_their_end_first():
    remaining = {"a": 9000, "b": 1000, "c": 5000, "d": 2000}
    rates = {s: 10.0 for s in GIVEN}  # 40 steps/s in all
    # 300 s left, 30 s of tail: two runs share 34 steps/s (margin 0.85), 17 each, and the
    # slower of b and d ends after 2000 / 17 + 30 = 148 s; c would need 5000 / 11.3 + 30 s.
    assert runs_to_keep(GIVEN, remaining, rates, GIVEN, 300.0, 0.85, 30.0) == ["b", "d"]


def test_runs_still_compiling_go_first_and_ties_keep_the_given_order():
    remaining = {s: 1000 for s in GIVEN}
    rates = {"b": 5.0, "c": 5.0}  # a and d have no rate yet
    kept = runs_to_keep(GIVEN, remaining, rates, GIVEN, 250.0, 1.0, 0.0)  # 5 steps/s each
    assert kept == ["b", "c"]
    assert runs_to_keep(GIVEN, remaining, rates, GIVEN, 10.0, 1.0, 0.0) == ["b"]  # at least one


def test_the_rate_spans_the_whole_run_so_an_evaluation_pause_does_not_stop_it():
    # First seen at step 900 after 80 s; then 100 s in an evaluation (no new steps) and 20 s
    # training at 50 steps/s: a 30-s window would read 0 or 50 steps/s, the whole run 8.3.
    assert rate((80.0, 900), 200.0, 1900) == 1000 / 120
    assert rate(None, 200.0, 1900) is None  # not yet seen training
    assert rate((80.0, 900), 200.0, 900) is None  # no step since: no rate yet
