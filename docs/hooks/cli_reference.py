"""MkDocs hook: fills `docs/reference/cli.md` with the `--help` of every `zoo` command.

The page holds the placeholder `<!-- cli-reference -->`; this hook replaces it with a section
per command of `runs.cli.COMMANDS` (and two `zoo train TASK MODEL` examples), each the text
that command prints for `--help`. The text is obtained in-process, by calling
`runs.cli.main([COMMAND, "--help"])` with stdout captured, so the reference is the parsers'
own output and never a copy that can go stale.
"""

import contextlib
import io
import os
import sys
from pathlib import Path

PLACEHOLDER = "<!-- cli-reference -->"
PAGE = "reference/cli.md"
WIDTH = "100"  # the terminal width tyro and rich lay the help out for
TRAIN_EXAMPLES = (
    ("hyperteacher", "linear-hypernet"),
    ("doorkey-5x5", "rims-agent"),
)
"""`zoo train TASK MODEL --help` for these pairs: a meta-learner and an agent."""


def help_text(argv: list[str]) -> str:
    """What `zoo ARGV` prints on stdout, run in this process; it must exit with status 0."""
    from runs.cli import main

    out = io.StringIO()
    code: object = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as error:
            code = error.code
    if code not in (0, None):
        raise RuntimeError(f"`zoo {' '.join(argv)}` exited with {code!r}:\n{out.getvalue()}")
    return out.getvalue().rstrip()


def commands() -> list[tuple[str, list[str]]]:
    """The sections of the reference: a title and the argv of each `--help`."""
    from runs.cli import COMMANDS

    sections = [("zoo", ["--help"])]
    for command in COMMANDS:
        sections.append((f"zoo {command}", [command, "--help"]))
        if command == "train":
            for task, model in TRAIN_EXAMPLES:
                sections.append((f"zoo train {task} {model}", ["train", task, model, "--help"]))
    return sections


def reference() -> str:
    """The Markdown that replaces the placeholder."""
    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:
        sys.path.insert(0, root)
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        parts = []
        for title, argv in commands():
            anchor = title.replace(" ", "-")
            parts.append(
                f"## `{title}` {{#{anchor}}}\n\n`{' '.join(['zoo', *argv])}`:\n\n"
                f"```text\n{help_text(argv)}\n```\n"
            )
        return "\n".join(parts)
    finally:
        if columns is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = columns


def on_page_markdown(markdown: str, page, config, files) -> str:
    """MkDocs event: the CLI page with its placeholder filled."""
    del config, files
    if page.file.src_uri != PAGE:
        return markdown
    if PLACEHOLDER not in markdown:
        raise ValueError(f"{PAGE} lost its placeholder {PLACEHOLDER}")
    return markdown.replace(PLACEHOLDER, reference())
