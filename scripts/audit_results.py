"""Check the numbers in the tables of the result pages (docs/papers/*.md) against the committed
data.

Every decimal number in a table row of a result page should be a value found in a CSV or
JSON(L) file under `docs/figures/`, as written at its own precision (a fraction, or a
percentage of one, with or without `%`): a run's metric, a mean or a standard deviation over
seeds (`zoo report`'s summary, or computed here from a results table), or a paper's value that
a sweep records. Where a section's text names data files or directories under
`docs/figures/`, its numbers are looked up only in those (a file also brings its siblings of the
same stem: `fig3b-cpu.png` brings `fig3b-cpu-summary.csv`); elsewhere in all of it.

This prints, per section, how many of its table numbers were found, and the line and text of
each number that was not, for a person to check. A number can be found by coincidence (a
three-decimal value among thousands), so a hit is necessary, not sufficient; a miss is worth
reading: a hand-made mean, a stale number, or a benchmark figure that no file keeps.

    python scripts/audit_results.py [--doc docs/papers/*.md] [--data docs/figures] [--all]

The rows that `zoo scoreboard` writes between a page's `<!-- scoreboard:start -->` and
`<!-- scoreboard:end -->` markers are not checked here: they are generated from the data (and
`tests/test_scoreboard.py` checks that they are as generated).

The exit status is 1 when a number outside the sections named by `--allow` (default: those
whose heading starts with "Speed") was not found, else 0.
"""

from __future__ import annotations

import argparse
import bisect
import csv
import functools
import json
import math
import re
import statistics
import sys
from collections.abc import Iterable, Iterator
from decimal import Decimal
from pathlib import Path

NUMBER = re.compile(r"(?<![\w.])-?\d+\.\d+%?")
DATA_PATH = re.compile(r"docs/figures/[\w./-]+")
DATA_SUFFIXES = (".csv", ".json", ".jsonl")
# Sections whose misses are expected: benchmark printouts, which no file keeps.
ALLOWED = ("Speed",)


class Values:
    """The numbers of some data files, to ask whether a written number is one of them rounded:
    `"0.540" in values` holds when a value v has v, |v|, 100 v or 100 |v| within half a unit
    of the last written digit (either way of rounding a half)."""

    def __init__(self, values: Iterable[float]):
        finite = [v for v in values if math.isfinite(v)]
        self._sorted = sorted({x for v in finite for x in (v, abs(v), 100 * v, 100 * abs(v))})
        self._percent = sorted({100 * v for v in finite})

    def __contains__(self, text: str) -> bool:
        percent = text.endswith("%")
        number = Decimal(text.rstrip("%"))
        exponent = number.as_tuple().exponent
        assert isinstance(exponent, int)
        half = float(Decimal(5) * Decimal(10) ** (exponent - 1)) * (1 + 1e-9)
        values = self._percent if percent else self._sorted
        i = bisect.bisect_left(values, float(number) - half)
        return i < len(values) and values[i] <= float(number) + half


def data_values(root: Path) -> list[float]:
    """Every number in the CSV and JSON(L) files under `root` (or in `root`, a file), with the
    mean and standard deviation over seeds of each column of a results table."""
    paths = [root] if root.is_file() else sorted(root.rglob("*"))
    return [v for path in paths if path.suffix in DATA_SUFFIXES for v in _file_values(path)]


@functools.cache
def _file_values(path: Path) -> tuple[float, ...]:
    """The numbers of one data file (read once, though several sections name it)."""
    values: list[float] = []

    def add(x: object) -> None:
        if isinstance(x, bool):
            return
        if isinstance(x, int | float):
            values.append(float(x))
        elif isinstance(x, str):
            try:
                values.append(float(x))
            except ValueError:
                return
        elif isinstance(x, dict):
            for v in x.values():
                add(v)
        elif isinstance(x, list):
            for v in x:
                add(v)

    if path.suffix == ".csv":
        with path.open(newline="") as f:
            rows = list(csv.reader(f))
        add(rows)
        values.extend(_seed_statistics(rows))
    else:
        text = path.read_text(errors="replace")
        for document in text.splitlines() if path.suffix == ".jsonl" else [text]:
            try:
                add(json.loads(document))
            except json.JSONDecodeError:
                continue
    return tuple(values)


def _seed_statistics(rows: list[list[str]]) -> list[float]:
    """The mean and sample standard deviation over seeds of each numeric column of a runs
    table (`zoo report`'s results.csv: a `label` and a `seed` column), per label and, where the
    table has one, per step or frame count."""
    if not rows or not {"label", "seed"} <= set(rows[0]):
        return []
    header = rows[0]
    keys = [header.index(k) for k in ("label", "step", "frames") if k in header]
    groups: dict[tuple[str, ...], list[list[str]]] = {}
    for row in rows[1:]:
        groups.setdefault(tuple(row[k] for k in keys if k < len(row)), []).append(row)
    out: list[float] = []
    for group in groups.values():
        for column in range(len(header)):
            try:
                xs = [float(row[column]) for row in group if column < len(row)]
            except ValueError:
                continue
            if len(xs) > 1:
                out += [statistics.mean(xs), statistics.stdev(xs)]
    return out


def _siblings(path: Path) -> list[Path]:
    """`path` with the files it stands for: the text often names one file of a set and the rest
    as suffixes (`docs/figures/fig3b-cpu.png`, `-summary.csv` and `-results.csv`), so a file
    also brings those of its directory named like it (`fig3b-cpu*`). Empty if none exist."""
    if path.is_dir():
        return [path]
    if not path.parent.is_dir():
        return []
    stem = path.name.split(".")[0].removesuffix("-summary").removesuffix("-results")
    return [f for f in sorted(path.parent.glob(f"{stem}*")) if f.is_file()]


def sections(doc: Path) -> Iterator[tuple[str, list[str], list[tuple[int, str]]]]:
    """(heading, the data paths its text names, its table rows with their line numbers) of each
    section of `doc` that has a table; the separator rows of tables are left out."""
    heading, text, rows, fenced, generated = "", [], [], False, False
    for i, line in enumerate([*doc.read_text().splitlines(), "# end"], 1):
        if line.strip() in ("<!-- scoreboard:start -->", "<!-- scoreboard:end -->"):
            generated = line.strip() == "<!-- scoreboard:start -->"
            continue
        if generated:
            continue
        if line.startswith("```"):
            fenced = not fenced
        if fenced or line.startswith("```"):
            text.append(line)  # a `# comment` in a code block is not a heading
        elif line.startswith("#"):
            if rows:
                yield heading, sorted(set(DATA_PATH.findall("\n".join(text)))), rows
            heading, text, rows = line.lstrip("#").strip(), [], []
        elif line.startswith("|") and not set(line) <= set("|-: "):
            rows.append((i, line))
        else:
            text.append(line)


def audit(
    doc: Path, data: Path, root: Path = Path(".")
) -> list[tuple[str, int, list[tuple[int, str, bool]]]]:
    """(heading, how many data paths it names, [(line, number, found)]) per section of `doc`
    with a table; paths in the text are relative to `root`."""
    cache: dict[tuple[Path, ...], Values] = {}

    def values_of(paths: tuple[Path, ...]) -> Values:
        if paths not in cache:
            cache[paths] = Values(v for path in paths for v in data_values(path))
        return cache[paths]

    out = []
    for heading, named, rows in sections(doc):
        paths = tuple(sorted({f for p in named for f in _siblings(root / p.rstrip(".,;:)`"))}))
        values = values_of(paths or (data,))
        numbers = [(i, m.group(0)) for i, line in rows for m in NUMBER.finditer(line)]
        out.append((heading, len(paths), [(i, t, t in values) for i, t in numbers]))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--doc", type=Path, nargs="*", default=sorted(Path("docs/papers").glob("*.md"))
    )
    parser.add_argument("--data", type=Path, default=Path("docs/figures"))
    parser.add_argument("--all", action="store_true", help="list the numbers found too")
    parser.add_argument(
        "--allow", nargs="*", default=list(ALLOWED), help="headings (prefixes) allowed misses"
    )
    args = parser.parse_args()

    total = found = unexplained = 0
    report = [
        (f"{doc.stem}: {heading}", heading, named, numbers)
        for doc in args.doc
        for heading, named, numbers in audit(doc, args.data)
    ]
    for title, heading, named, numbers in report:
        hits = sum(ok for _, _, ok in numbers)
        total, found = total + len(numbers), found + hits
        allowed = heading.startswith(tuple(args.allow))
        unexplained += 0 if allowed else len(numbers) - hits
        scope = f"{named} data files named" if named else "all the data"
        print(f"{hits:4d}/{len(numbers):<4d} {title} ({scope})")
        for lineno, text, ok in numbers:
            if args.all or not ok:
                print(f"           line {lineno}: {text}{'' if ok else '   not in the data'}")
    print(f"{found}/{total} table numbers found; {unexplained} missing outside {args.allow}")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
