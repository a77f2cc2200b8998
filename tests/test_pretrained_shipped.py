"""Every pretrained model the zoo ships (entry points `zoo.pretrained` of this distribution,
made by `scripts/train_pretrained.py`) is registered, complete, small, and re-evaluates to the
small fixed check its card records: bit-equal on the host kind that trained it (the CPU the card
names), else within the script's stated tolerance."""

import importlib.util
import json
from pathlib import Path

import pytest

import plugins
from runs import pretrained
from runs.provenance import provenance

ROOT = Path(__file__).resolve().parent.parent
DIST = "compgen-zoo"
BUDGET = 40_000_000
"""Bytes all shipped models may weigh together in the repository."""


def _script():
    spec = importlib.util.spec_from_file_location(
        "train_pretrained", ROOT / "scripts" / "train_pretrained.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = _script()
SHIPPED = [e for e in plugins.entries("pretrained") if e.dist == DIST]


def test_every_recipe_is_registered_and_shipped_within_the_budget():
    registered = {e.name: e.spec for e in SHIPPED}
    recipes = {r.name: r for r in SCRIPT.RECIPES}
    assert set(registered) == set(recipes)
    total = 0
    for name, spec in registered.items():
        directory = spec.directory()  # pyright: ignore[reportAttributeAccessIssue]
        assert directory == recipes[name].directory
        total += sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
    assert total < BUDGET


@pytest.mark.parametrize("name", [e.name for e in SHIPPED])
def test_a_shipped_card_says_what_the_issue_asks(name):
    recipe = SCRIPT.BY_NAME[name]
    directory = recipe.directory
    pretrained.verify(directory)
    card = pretrained.read_card(directory)
    assert card["name"] == name and card["preset"] == recipe.preset
    assert card["seed"] == recipe.seed and card["not"] == recipe.not_
    assert card["paper"] and card["paper"].startswith(("Schug", "Lake", "Madan"))
    for field in ("task", "model", "algorithm", "commit", "host_kind", "cpu", "size", "licence"):
        assert card[field], field
    config = json.loads((directory / "config.json").read_text())
    assert card["steps"] == config["run"]["steps"]  # the run finished
    assert any(not k.startswith("train/") for k in card["metrics"])  # an evaluation
    assert card["check"]["eval"] == recipe.check and card["check"]["metrics"]
    assert card["commands"]["check"] == f"python scripts/train_pretrained.py --check {name}"
    assert not (directory / "model" / "train_state").exists()  # no optimizer state


@pytest.mark.parametrize("name", [e.name for e in SHIPPED])
def test_a_shipped_model_re_evaluates_to_its_card(name):
    directory = SCRIPT.BY_NAME[name].directory
    card = pretrained.read_card(directory)
    recorded, measured = pretrained.recheck(f"pretrained:{name}")
    assert set(measured) == set(recorded)
    if card["cpu"] == provenance()["cpu"] and card["host_kind"] == "cpu":
        assert measured == recorded
    else:
        for key, value in recorded.items():
            assert abs(measured[key] - value) <= SCRIPT.TOLERANCE, key


def test_zoo_eval_of_a_shipped_agent_prints_its_cards_check(capsys):
    """What the README shows: `zoo eval pretrained:NAME --tasks N` prints the card's check."""
    import runs.cli

    name = "madan2021-rims-doorkey-5x5"
    card = pretrained.read_card(SCRIPT.BY_NAME[name].directory)
    tasks = card["check"]["eval"]["tasks"]
    assert card["commands"]["evaluate"] == f"zoo eval pretrained:{name} --tasks {tasks}"
    assert (
        runs.cli.main(["eval", f"pretrained:{name}", "--tasks", str(tasks), "--no-progress"]) == 0
    )
    header, row = capsys.readouterr().out.splitlines()[:2]
    printed = dict(zip(header.split()[1:-2], map(float, row.split()[1:]), strict=True))
    for metric, value in printed.items():
        assert value == pytest.approx(card["check"]["metrics"][f"eval/{metric}"], abs=5e-5)
