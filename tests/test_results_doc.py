"""`scripts/audit_results.py`: the numbers in the result pages' tables (docs/papers/*.md) come
from the committed data under docs/figures/ (issue 20, item 9)."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]
_spec = importlib.util.spec_from_file_location(
    "audit_results", ROOT / "scripts" / "audit_results.py"
)
assert _spec is not None and _spec.loader is not None
audit_results = importlib.util.module_from_spec(_spec)
sys.modules["audit_results"] = audit_results
_spec.loader.exec_module(audit_results)


def _write(tmp_path: Path, doc: str) -> Path:
    figures = tmp_path / "docs" / "figures"
    (figures / "sweep").mkdir(parents=True)
    (figures / "sweep" / "results.csv").write_text(
        "label,seed,step,test.accuracy\na,0,100,0.5395\na,1,100,0.6\nb,0,100,0.25\n"
    )
    (figures / "other.json").write_text('{"paper": 0.123, "rate": [0.9871]}')
    path = tmp_path / "docs" / "results.md"
    path.write_text(doc)
    return path


def _misses(tmp_path: Path, doc: str) -> list[str]:
    path = _write(tmp_path, doc)
    report = audit_results.audit(path, tmp_path / "docs" / "figures", root=tmp_path)
    return [text for _, _, numbers in report for _, text, ok in numbers if not ok]


def test_values_as_written_are_found_and_others_not(tmp_path):
    # 0.5395 rounds to 0.540 or 0.539 (a half either way); 98.71% is 0.9871 as a percentage,
    # with or without the sign; the mean over seeds of label a is 0.56975, its std 0.0428...
    doc = (
        "# A\n\n| x | y |\n|---|---|\n"
        "| 0.540 | 0.539 |\n| 98.71% | 98.71 |\n| 0.570 ± 0.043 | 0.25 |\n| 0.541 | 0.571 |\n"
    )
    assert _misses(tmp_path, doc) == ["0.541", "0.571"]


def test_a_section_naming_its_data_is_checked_against_that_data_only(tmp_path):
    # 0.123 is in other.json, not in the sweep the section names.
    doc = (
        "# A\n\nData: `docs/figures/sweep`.\n\n| x |\n|---|\n| 0.123 |\n| 0.25 |\n"
        "# B\n\n| x |\n|---|\n| 0.123 |\n"
    )
    assert _misses(tmp_path, doc) == ["0.123"]
    report = audit_results.audit(
        tmp_path / "docs" / "results.md", tmp_path / "docs" / "figures", root=tmp_path
    )
    assert [(heading, named) for heading, named, _ in report] == [("A", 1), ("B", 0)]


def test_every_table_number_of_the_results_doc_is_in_the_committed_data():
    """Outside the speed sections (benchmark printouts, which no file keeps), every decimal
    number in a table of a result page is a value of the data its section names."""
    pages = sorted((ROOT / "docs" / "papers").glob("*.md"))
    assert {p.stem for p in pages} >= {"schug2024", "lake2019", "madan2021", "engineering"}
    report = [
        (page.name, heading, numbers)
        for page in pages
        for heading, _, numbers in audit_results.audit(page, ROOT / "docs" / "figures", ROOT)
    ]
    missing = [
        f"{page} line {line} ({heading}): {text}"
        for page, heading, numbers in report
        if not heading.startswith(audit_results.ALLOWED)
        for line, text, ok in numbers
        if not ok
    ]
    assert sum(len(numbers) for *_, numbers in report) > 2000
    assert not missing, "\n".join(missing)
