"""The documentation: every code block of README.md and of the site's pages (docs/) runs as
written, or says why not; and the site builds with `mkdocs build --strict`.

What runs is decided by the page itself. A fenced block of `bash` or `python` runs unless the
line right above its fence is an HTML comment (invisible on GitHub and on the site)

    <!-- docs-test: skip (REASON) -->

saying why not here (it needs a GPU or a cluster, trains for minutes, ...; a reason that
names a test, `tests/test_x.py::test_y`, is checked to name one that exists). A block under

    <!-- docs-test: file PATH -->

is a file of the tutorial: its text is written to PATH before the commands that follow run.
Blocks of other languages (`text`, `toml`, none: listings, diagrams, output) are not code and
are never run; a `toml` or `python` block a tutorial needs is a `file` block.

The blocks of one page run in order in a fresh directory of their own (`tmp_path`): a `bash`
block is parsed into commands (a line, with its `\\` continuations; compound commands such as
`for ...; done` are one line), each run by bash there; a `python` block is written to a file
and run by this interpreter. The commands run as written with the repository on `PYTHONPATH`
and one rewrite, so that nothing is installed into the environment running the tests:
`pip install [-e] PATH` of a folder becomes `pip install --target SITE PATH` (offline, no
dependencies), and SITE joins `PYTHONPATH`. Pages are written at sizes that run in seconds
(`--steps 4`, tiny widths); the pages run in parallel, and a page whose command fails reports
the command and its output.
"""

import concurrent.futures
import dataclasses
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
NOT_CHECKED = ("docs/papers/", "docs/figures/", "docs/scoreboard.md")
"""Generated pages (results, written by scripts) and the results page the scoreboard replaces:
their code blocks are another test's business (tests/test_results_doc.py)."""
RUNNABLE = ("bash", "python")
NOT_CODE = ("", "text", "toml", "console")
TIMEOUT = 300
"""Seconds one command may take."""

_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+)(?P<lang>[\w+-]*)[^\n]*$")
_MARK = re.compile(r"^\s*<!--\s*docs-test:\s*(?P<what>skip|file)\s*(?P<arg>.*?)\s*-->\s*$")


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str
    line: int
    lang: str
    text: str
    mark: str | None  # None, "skip" or "file"
    arg: str  # the skip's reason or the file's path

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[str]:
    """The pages whose blocks are checked, relative to the repository."""
    found = ["README.md"]
    for path in sorted(DOCS.rglob("*.md")):
        name = path.relative_to(REPO).as_posix()
        if not any(name == n or name.startswith(n) for n in NOT_CHECKED):
            found.append(name)
    return found


def blocks(page: str) -> list[Block]:
    """The fenced code blocks of a page, with the docs-test mark right above each."""
    lines = (REPO / page).read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            j += 1
        body = "\n".join(line.removeprefix(indent) for line in lines[i + 1 : j]) + "\n"
        above = lines[i - 1] if i > 0 else ""
        mark = _MARK.match(above)
        found.append(
            Block(
                page=page,
                line=i + 1,
                lang=opening["lang"],
                text=body,
                mark=mark["what"] if mark else None,
                arg=mark["arg"].strip("()").strip() if mark else "",
            )
        )
        i = j + 1
    return found


def commands(text: str) -> list[str]:
    """The commands of a bash block: its lines, `\\` continuations joined, comments and blank
    lines dropped."""
    joined, parts = [], []
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            parts.append(line.rstrip()[:-1].strip())
            continue
        command = " ".join([*parts, line.strip()])
        parts = []
        if command and not command.startswith("#"):
            joined.append(command)
    return joined


def _pip_rewrite(command: str, site: pathlib.Path) -> str | None:
    """`pip install [-e] PATH`, as the offline install into SITE it is run as (None for any
    other command)."""
    words = shlex.split(command, comments=True)
    if words[:2] not in (["pip", "install"], ["python", "-m"]) or "install" not in words[:4]:
        return None
    paths = [w for w in words[words.index("install") + 1 :] if not w.startswith("-")]
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    offline = ["--root-user-action=ignore", "--no-deps", "--no-build-isolation", "--no-index"]
    return shlex.join([*pip, *offline, "--upgrade", "--target", str(site), *paths])


@dataclasses.dataclass
class Outcome:
    """What running a page gave: the commands run, and the first failure if any."""

    ran: list[str] = dataclasses.field(default_factory=list)
    failure: str | None = None


def run_page(page: str, directory: pathlib.Path) -> Outcome:
    """Run the blocks of a page in order in `directory`; stop at the first failure."""
    site = directory / ".site-packages"
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO)])
    env["NO_COLOR"] = "1"
    env["COLUMNS"] = "100"
    outcome = Outcome()
    for number, block in enumerate(blocks(page)):
        if block.mark == "file":
            path = directory / block.arg
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.text)
            outcome.ran.append(f"(file {block.arg})")
            continue
        if block.mark == "skip" or block.lang not in RUNNABLE:
            continue
        if block.lang == "python":
            script = directory / f".block-{number}.py"
            script.write_text(block.text)
            todo = [shlex.join([sys.executable, str(script)])]
        else:
            todo = [_pip_rewrite(c, site) or c for c in commands(block.text)]
        for command in todo:
            result = subprocess.run(
                ["bash", "-o", "pipefail", "-c", command],
                cwd=directory,
                env=env,
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
            )
            outcome.ran.append(command)
            if result.returncode != 0:
                outcome.failure = (
                    f"{block.where}: `{command}` exited with {result.returncode}\n"
                    f"--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}"
                )
                return outcome
    return outcome


def _runnable(page: str) -> bool:
    return any(b.lang in RUNNABLE and b.mark != "skip" for b in blocks(page))


@pytest.fixture(scope="module")
def page_runs(tmp_path_factory: pytest.TempPathFactory):
    """Every page with a block to run, started at once (a few at a time) in its own directory;
    `page_runs[page].result()` waits for it."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=3)
    futures = {
        page: pool.submit(run_page, page, tmp_path_factory.mktemp(re.sub(r"\W", "-", page)))
        for page in pages()
        if _runnable(page)
    }
    yield futures
    pool.shutdown(wait=True, cancel_futures=True)


def test_every_block_is_run_or_says_why_not():
    """Each block of a checked page is runnable code, a file, not code, or marked skipped with
    a reason; a reason naming a test names one that exists."""
    problems = []
    for page in pages():
        for block in blocks(page):
            if block.mark == "skip":
                if not block.arg:
                    problems.append(f"{block.where}: a skip without a reason")
                for test in re.findall(r"tests/[\w/]+\.py(?:::\w+)?", block.arg):
                    file, _, name = test.partition("::")
                    source = REPO / file
                    if not source.exists() or (name and f"def {name}(" not in source.read_text()):
                        problems.append(f"{block.where}: the skip names {test}, which is not there")
            elif block.mark == "file":
                if not block.arg or block.arg.startswith("/") or ".." in block.arg:
                    problems.append(f"{block.where}: a file block needs a relative path")
            elif block.lang not in RUNNABLE + NOT_CODE:
                problems.append(
                    f"{block.where}: a ```{block.lang} block: write it as bash or python, "
                    "or mark it skipped or a file"
                )
    assert not problems, "\n".join(problems)


def test_every_tutorial_runs_something():
    """Each tutorial is a sequence the test runs, not only prose and skipped blocks."""
    tutorials = [p for p in pages() if p.startswith("docs/tutorials/")]
    assert tutorials
    assert [p for p in tutorials if not _runnable(p)] == []


def test_the_block_parser():
    text = "zoo list   # a comment\n\n# a line of comment\nzoo train a b \\\n  --steps 4\n"
    assert commands(text) == ["zoo list   # a comment", "zoo train a b --steps 4"]
    site = pathlib.Path("/tmp/site")
    rewritten = _pip_rewrite('pip install -e "./my-plugin"', site)
    assert rewritten is not None and rewritten.endswith("--target /tmp/site ./my-plugin")
    assert "-e" not in shlex.split(rewritten)
    assert _pip_rewrite("zoo list", site) is None


@pytest.mark.parametrize("page", [p for p in pages() if _runnable(p)])
def test_page_runs_as_written(page: str, page_runs):
    outcome = page_runs[page].result(timeout=900)
    assert outcome.failure is None, outcome.failure
    assert outcome.ran


def test_the_site_builds_strictly(tmp_path: pathlib.Path):
    """`mkdocs build --strict` (broken links, missing anchors, docstrings mkdocstrings cannot
    read all fail it); the command-line reference is filled from the parsers, and the home
    page keeps the scoreboard's markers."""
    mkdocs = shutil.which("mkdocs")
    command = [mkdocs] if mkdocs else [sys.executable, "-m", "mkdocs"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [*command, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-5000:]
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    assert "cli-reference" not in cli
    for flag in ("--algorithm.inner.steps", "--algorithm.frames", "--preset", "--jobs"):
        assert flag in cli, flag
    home = (DOCS / "index.md").read_text()
    assert "<!-- scoreboard:summary:start -->" in home
    assert "<!-- scoreboard:summary:end -->" in home
