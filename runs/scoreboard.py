"""The reproduction scoreboard: each experiment's claims, scored against the committed data.

An experiment states the claims of its paper as `runs.Claim`s (`runs.Experiment.claims`): the
claim in a few words, the paper's value(s), which label and metric of which committed sweep
export under `docs/figures/` holds ours, and the sweep that re-creates it. `zoo scoreboard`
scores every claim by the rule below and writes the pages, so that no verdict or number on them
is typed by hand:

- `docs/scoreboard.md`: every claim of every installed experiment, grouped by paper;
- between the markers `<!-- scoreboard:start -->` and `<!-- scoreboard:end -->` of
  `docs/papers/<experiment>.md`: that paper's rows;
- between `<!-- pretrained:start -->` and `<!-- pretrained:end -->` of docs/pretrained.md
  and README.md, the table of the shipped pretrained models, from their cards;
- between `<!-- scoreboard:summary:start -->` and `<!-- scoreboard:summary:end -->` of
  `docs/index.md`: the counts of each verdict per paper.

The rule (`Verdict`), with ours the mean and standard deviation over n seeds and the paper's
value p:

- **not run yet**: the data, the label or the metric is not committed.
- A claim with a paper value and no comparison: **reproduced within noise** when
  |mean - p| <= max(2 std, tolerance); else **not reproduced**.
- A comparison (`than`: "label beats than on metric"; the paper's direction is the sign of
  `paper - paper_than` where both are given, else `higher`): **reproduced within noise** when
  both sides are within noise of the paper's values; else **direction reproduced** when our
  difference has the paper's sign and exceeds twice its standard error
  (sqrt(std_a^2 / n_a + std_b^2 / n_b)); else **not reproduced** (the note says whether the
  sign agreed but the difference was within noise).

Nothing here names a paper: the claims come from the experiment plugins.
"""

from __future__ import annotations

import csv
import dataclasses
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Literal


@dataclasses.dataclass(frozen=True)
class Claim:
    """One claim or table cell of a paper, and where our number for it is committed.

    Ours is `metric` of the runs labelled `label` in the committed export `data` (a directory
    under `docs/figures/` holding `zoo report`'s `summary.csv`, or the stem `X` of a flat
    `X-summary.csv` there); with `at`, the value of `metric` at `at` frames (or updates: `axis`)
    in the export's `curves.csv`, per seed."""

    text: str
    """The claim in a few words, e.g. "linear hypernetwork, OOD accuracy (Fig. 3B)"."""
    data: str
    """The committed export under `docs/figures/`: a directory (`mypaper-table1-cpu`) or a
    file stem (`fig3b-cpu` for `fig3b-cpu-summary.csv` and `fig3b-cpu.png`)."""
    label: str
    """The sweep label whose runs give our value."""
    metric: str
    """`pool.metric` of the runs' final evaluation (or a column of `curves.csv`, with `at`)."""
    paper: float | None = None
    """The paper's value for `label` (None where the paper gives only a direction)."""
    than: str | None = None
    """A label the claim compares `label` with (a claim "label beats than")."""
    paper_than: float | None = None
    """The paper's value for `than`, where it gives one."""
    higher: bool = True
    """Whether the claim says `label` is higher than `than` (used when the paper values do not
    give the direction)."""
    tolerance: float = 0.02
    """The absolute distance from the paper's value that counts as within noise at least."""
    sweep: str = ""
    """The sweep (within the experiment) that re-creates the row: the row's command is
    `zoo sweep EXPERIMENT/SWEEP --out results/SWEEP && zoo report results/SWEEP`."""
    scale: str = ""
    """The scale it was run at against the paper's, e.g. "CPU, 2k steps, width 64 (paper 256)"."""
    at: int | None = None
    """Read ours at this many frames (or updates) from `curves.csv` rather than at the end."""
    axis: Literal["frames", "updates"] = "frames"
    """The axis of `at`."""
    figure: str | None = None
    """The figure to link, relative to `docs/figures/` (default: the export's own)."""

    def __post_init__(self):
        if self.paper_than is not None and self.than is None:
            raise ValueError(f"Claim {self.text!r} gives paper_than but no `than` label.")
        if self.paper is None and self.than is None:
            raise ValueError(
                f"Claim {self.text!r} has neither a paper value nor a comparison (`than`): "
                "give the paper's value, or the label it is compared with."
            )


class Verdict(StrEnum):
    """The outcome of a claim (see the module's rule)."""

    REPRODUCED = "reproduced within noise"
    DIRECTION = "direction reproduced"
    NOT_REPRODUCED = "not reproduced"
    NOT_RUN = "not run yet"


VERDICT_ORDER = (Verdict.REPRODUCED, Verdict.DIRECTION, Verdict.NOT_REPRODUCED, Verdict.NOT_RUN)


@dataclasses.dataclass(frozen=True)
class Stat:
    """Mean and standard deviation over `n` seeds (sample std, as `zoo report` writes)."""

    mean: float
    std: float
    n: int

    def __str__(self) -> str:
        return f"{_fmt(self.mean)} ± {_fmt(self.std)} (n={self.n})"


@dataclasses.dataclass(frozen=True)
class Row:
    """A claim scored."""

    claim: Claim
    verdict: Verdict
    ours: Stat | None
    ours_than: Stat | None
    note: str
    figure: Path | None


def _fmt(x: float) -> str:
    return f"{x:.3f}"


# ------------------------------------------------------------------------------ data


def _summary_path(root: Path, data: str) -> tuple[Path, Path | None]:
    """The summary CSV of an export and its figure (None if it has none)."""
    directory = root / data
    if directory.is_dir():
        figure = next(
            (directory / f for f in ("figure.png", "curves.png") if (directory / f).is_file()),
            None,
        )
        return directory / "summary.csv", figure
    png = root / f"{data}.png"
    return root / f"{data}-summary.csv", png if png.is_file() else None


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def mean_std(values: Sequence[float]) -> Stat:
    """The mean and sample standard deviation of `values` (0 for one value)."""
    mean = sum(values) / len(values)
    if len(values) < 2:
        return Stat(mean, 0.0, len(values))
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
    return Stat(mean, std, len(values))


def _ours(root: Path, claim: Claim, label: str) -> Stat | None:
    """Our value for `label` in the claim's export, or None where it is not committed."""
    summary, _ = _summary_path(root, claim.data)
    if claim.at is not None:
        curves = summary.with_name("curves.csv")
        if not curves.is_file():
            return None
        values = [
            float(r[claim.metric])
            for r in _read_csv(curves)
            if r.get("label") == label
            and r.get(claim.axis) not in (None, "")
            and int(float(r[claim.axis])) == claim.at
            and r.get(claim.metric) not in (None, "")
        ]
        return mean_std(values) if values else None
    if not summary.is_file():
        return None
    for r in _read_csv(summary):
        if r.get("label") == label and r.get("metric") == claim.metric and r.get("mean"):
            return Stat(float(r["mean"]), float(r["std"] or 0.0), int(r["n"]))
    return None


def score(claim: Claim, root: Path) -> Row:
    """Score one claim against the exports under `root` (`docs/figures/`)."""
    _, figure = _summary_path(root, claim.data)
    if claim.figure is not None:
        figure = root / claim.figure if (root / claim.figure).is_file() else None
    ours = _ours(root, claim, claim.label)
    ours_than = _ours(root, claim, claim.than) if claim.than is not None else None
    sides = (
        ((claim.label, ours),)
        if claim.than is None
        else ((claim.label, ours), (claim.than, ours_than))
    )
    missing = [name for name, stat in sides if stat is None]
    if missing:
        where = f"{claim.data}" + (f" at {claim.at} {claim.axis}" if claim.at else "")
        note = f"no committed {claim.metric} of {', '.join(map(str, missing))} in {where}"
        return Row(claim, Verdict.NOT_RUN, ours, ours_than, note, figure)
    assert ours is not None

    def near(stat: Stat, value: float | None) -> bool:
        return value is not None and abs(stat.mean - value) <= max(2 * stat.std, claim.tolerance)

    if claim.than is None:
        verdict = Verdict.REPRODUCED if near(ours, claim.paper) else Verdict.NOT_REPRODUCED
        note = ""
        return Row(claim, verdict, ours, None, note, figure)
    assert ours_than is not None
    if claim.paper is not None and claim.paper_than is not None:
        sign = float(claim.paper > claim.paper_than) - float(claim.paper < claim.paper_than)
    else:
        sign = 1.0 if claim.higher else -1.0
    difference = ours.mean - ours_than.mean
    error = math.sqrt(ours.std**2 / ours.n + ours_than.std**2 / ours_than.n)
    note = f"difference {difference:+.3f} ± {error:.3f} (standard error)"
    if min(ours.n, ours_than.n) < 2:
        note += "; one seed on a side, so no spread there"
    if near(ours, claim.paper) and near(ours_than, claim.paper_than):
        verdict = Verdict.REPRODUCED
    elif sign == 0:  # the paper's values tie: its direction is "no difference"
        tie = abs(difference) <= max(2 * error, claim.tolerance)
        verdict = Verdict.DIRECTION if tie else Verdict.NOT_REPRODUCED
    elif sign * difference > 2 * error and sign * difference > 0:
        verdict = Verdict.DIRECTION
    else:
        verdict = Verdict.NOT_REPRODUCED
        if sign * difference > 0:
            note += "; the sign agrees, within noise"
    return Row(claim, verdict, ours, ours_than, note, figure)


# ------------------------------------------------------------------------------ pages


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _link(target: Path | None, page: Path) -> str:
    if target is None:
        return ""
    return f"[figure]({Path(os.path.relpath(target, page.parent)).as_posix()})"


def _paper_value(claim: Claim) -> str:
    parts = []
    if claim.paper is not None:
        parts.append(f"{claim.paper:.4g}")
    if claim.than is not None:
        vs = f"{claim.paper_than:.4g}" if claim.paper_than is not None else None
        relation = ">" if claim.higher else "<"
        if claim.paper is not None and claim.paper_than is not None:
            relation = "=" if claim.paper == claim.paper_than else relation
            relation = ">" if claim.paper > claim.paper_than else relation
            relation = "<" if claim.paper < claim.paper_than else relation
        parts.append(f"{relation} {claim.than}" + (f" ({vs})" if vs else ""))
    return " ".join(parts)


def _ours_value(row: Row) -> str:
    if row.ours is None and row.ours_than is None:
        return "—"
    text = str(row.ours) if row.ours is not None else "—"
    if row.claim.than is not None:
        than = str(row.ours_than) if row.ours_than is not None else "—"
        text += f" vs {than}"
    return text


def table(rows: Sequence[Row], experiment: str, page: Path) -> str:
    """The rows of one paper as a Markdown table (links relative to `page`), then the scales
    (S1, S2, ...) and commands (C1, C2, ...) the rows name, each written out once."""
    scales: dict[str, str] = {}
    commands: dict[str, str] = {}

    def key(found: dict[str, str], value: str, letter: str) -> str:
        if not value:
            return ""
        return found.setdefault(value, f"{letter}{len(found) + 1}")

    lines = [
        "| claim | paper | ours (mean ± std over n seeds) | verdict | scale | figure | command |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        c = row.claim
        command = (
            f"zoo sweep {experiment}/{c.sweep} --out results/{c.sweep}"
            f" && zoo report results/{c.sweep}"
            if c.sweep
            else ""
        )
        at = f" at {c.at:,} {c.axis}" if c.at is not None else ""
        verdict = f"**{row.verdict.value}**"
        if row.note:
            verdict += f" ({row.note})"
        lines.append(
            "| "
            + " | ".join(
                _cell(x)
                for x in (
                    f"{c.text} — `{c.label}` `{c.metric}`{at}",
                    _paper_value(c),
                    _ours_value(row),
                    verdict,
                    key(scales, c.scale, "S"),
                    _link(row.figure, page),
                    key(commands, command, "C"),
                )
            )
            + " |"
        )
    lines.append("")
    lines += [f"- **{k}**: {_cell(v)}" for v, k in scales.items()]
    lines += [f"- **{k}**: `{v}`" for v, k in commands.items()]
    return "\n".join(lines) + "\n"


def counts(rows: Iterable[Row]) -> dict[Verdict, int]:
    """How many rows have each verdict."""
    found = dict.fromkeys(VERDICT_ORDER, 0)
    for row in rows:
        found[row.verdict] += 1
    return found


def summary_table(scored: Mapping[str, tuple[str, Sequence[Row]]], page: Path) -> str:
    """One line per paper: its counts of each verdict, linking its page."""
    head = " | ".join(v.value for v in VERDICT_ORDER)
    lines = [f"| paper | {head} |", "|---|" + "---|" * len(VERDICT_ORDER)]
    for name, (paper, rows) in scored.items():
        link = Path(os.path.relpath(page.parent / "papers" / f"{name}.md", page.parent))
        found = counts(rows)
        cells = " | ".join(str(found[v]) for v in VERDICT_ORDER)
        lines.append(f"| [{_cell(paper or name)}]({link.as_posix()}) | {cells} |")
    return "\n".join(lines) + "\n"


RULE = (
    "Verdicts: **reproduced within noise** when ours is within max(2 std, the row's tolerance) "
    "of the paper's value (for a comparison: both sides); **direction reproduced** when a "
    "comparison's difference has the paper's sign and exceeds twice its standard error (where "
    "the paper's two values tie: is within it); "
    "**not reproduced** otherwise; **not run yet** when the data is not committed. "
    "Ours is the mean ± sample std over n seeds of the committed runs, at the scale stated, "
    "which is much smaller than the papers' unless the row says otherwise."
)


def _replace_block(text: str, start: str, end: str, block: str, path: Path) -> str:
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f"{path} lacks the markers {start} ... {end}; add them where the rows go.")
    return pattern.sub(lambda _: f"{start}\n{block}{end}", text, count=1)


def pages(
    claims: Mapping[str, tuple[str, Sequence[Claim]]], figures: Path, docs: Path
) -> dict[Path, str]:
    """The scoreboard's pages as they should read: `{path: text}`, from each experiment's
    `(paper, claims)` and the exports under `figures`. Paper pages and the home page must
    exist (their text outside the markers is kept)."""
    scored = {
        name: (paper, [score(c, figures) for c in found]) for name, (paper, found) in claims.items()
    }
    board = docs / "scoreboard.md"
    parts = [
        "# Scoreboard\n\n",
        "<!-- Generated by `zoo scoreboard` from the experiments' claims and docs/figures/; "
        "do not edit. -->\n\n",
        RULE + "\n\n",
        summary_table(scored, board) + "\n",
        "Trained models of these papers ship with the zoo: [pretrained models](pretrained.md).\n\n",
    ]
    out: dict[Path, str] = {}
    for name, (paper, rows) in scored.items():
        parts += [f"## {paper or name}\n\n", table(rows, name, board), "\n"]
        page = docs / "papers" / f"{name}.md"
        if page.is_file():
            block = RULE + "\n\n" + table(rows, name, page)
            out[page] = _replace_block(
                page.read_text(),
                "<!-- scoreboard:start -->",
                "<!-- scoreboard:end -->",
                block,
                page,
            )
    out[board] = "".join(parts).rstrip("\n") + "\n"
    home = docs / "index.md"
    if home.is_file():
        out[home] = _replace_block(
            home.read_text(),
            "<!-- scoreboard:summary:start -->",
            "<!-- scoreboard:summary:end -->",
            summary_table(scored, home) + "\nEvery row, its rule and its command: "
            "[the scoreboard](scoreboard.md).\n",
            home,
        )
    from .pretrained import shipped_table

    shipped = docs / "pretrained.md", docs.parent / "README.md"
    for page in (
        p for p in shipped if p.is_file() and "<!-- pretrained:start -->" in p.read_text()
    ):
        out[page] = _replace_block(
            page.read_text(),
            "<!-- pretrained:start -->",
            "<!-- pretrained:end -->",
            shipped_table(),
            page,
        )
    return out


def experiment_claims() -> dict[str, tuple[str, tuple[Claim, ...]]]:
    """Every installed experiment's `(paper, claims)`, by name."""
    import plugins

    from .experiments import experiments

    papers = {e.name: getattr(e.spec, "paper", "") for e in plugins.entries("experiments")}
    return {name: (papers.get(name, ""), e.claims) for name, e in experiments().items()}
