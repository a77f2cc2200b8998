"""`zoo scoreboard`: score every experiment's claims against the committed data and write the
scoreboard pages (`runs.scoreboard`)."""

import dataclasses
import difflib
import sys
from pathlib import Path

import tyro


@dataclasses.dataclass(frozen=True)
class ScoreboardCommand:
    """Score the claims of every installed experiment (`runs.Experiment.claims`) against the
    committed sweep exports and write docs/scoreboard.md, the rows of each docs/papers/NAME.md
    and the summary of docs/index.md (between their scoreboard markers)."""

    figures: Path = Path("docs/figures")
    """Where the committed exports are (`zoo report --export` destinations)."""
    docs: Path = Path("docs")
    """The documentation sources the pages are written into."""
    show: str | None = None
    """Print the rows of this one experiment as a Markdown table and write nothing (a preview
    while writing its claims)."""
    check: bool = False
    """Write nothing; exit 1, showing the difference, if a page is not as it would be written
    (for CI: the committed pages match the committed data)."""


def main(argv: list[str]) -> int:
    """Run `zoo scoreboard`; the exit status."""
    from ..scoreboard import counts, experiment_claims, pages

    command = tyro.cli(ScoreboardCommand, args=argv, prog="zoo scoreboard")
    if not command.figures.is_dir():
        print(
            f"zoo scoreboard: {command.figures} is not a directory; pass --figures, the "
            "directory of the committed exports (docs/figures in the repository).",
            file=sys.stderr,
        )
        return 1
    claims = experiment_claims()
    if command.show is not None:
        from ..scoreboard import score, table

        if command.show not in claims:
            print(
                f"zoo scoreboard: no experiment {command.show!r}; installed: "
                f"{', '.join(claims) or 'none'}.",
                file=sys.stderr,
            )
            return 1
        rows = [score(c, command.figures) for c in claims[command.show][1]]
        print(table(rows, command.show, command.docs / "scoreboard.md"), end="")
        print(", ".join(f"{n} {v.value}" for v, n in counts(rows).items()))
        return 0
    try:
        wanted = pages(claims, command.figures, command.docs)
    except ValueError as error:
        print(f"zoo scoreboard: {error}", file=sys.stderr)
        return 1
    stale = [p for p, text in wanted.items() if not p.is_file() or p.read_text() != text]
    if command.check:
        for path in stale:
            old = path.read_text().splitlines(keepends=True) if path.is_file() else []
            new = wanted[path].splitlines(keepends=True)
            sys.stdout.writelines(difflib.unified_diff(old, new, str(path), f"{path} (wanted)"))
        if stale:
            print(
                f"zoo scoreboard: {len(stale)} page(s) differ from the committed data; run "
                "`zoo scoreboard` and commit them.",
                file=sys.stderr,
            )
            return 1
        print(f"zoo scoreboard: {len(wanted)} pages match the committed data")
        return 0
    for path in stale:
        path.write_text(wanted[path])
    from ..scoreboard import score

    for name, (_, found) in claims.items():
        verdicts = counts(score(c, command.figures) for c in found)
        line = ", ".join(f"{n} {v.value}" for v, n in verdicts.items())
        print(f"{name}: {len(found)} claims: {line}")
    print(f"wrote {len(stale)} of {len(wanted)} pages" + ("" if stale else " (all up to date)"))
    return 0
