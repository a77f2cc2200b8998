"""What several commands share: options popped before tyro parses the rest, the errors of
a command line, and the table of an evaluation."""

from pathlib import Path


def pop_option(argv: list[str], option: str) -> tuple[str | None, list[str]]:
    """The value of `--option NAME` (or `--option=NAME`) in `argv`, and `argv` without it."""
    for i, arg in enumerate(argv):
        if arg == option and i + 1 < len(argv):
            return argv[i + 1], argv[:i] + argv[i + 2 :]
        if arg.startswith(f"{option}="):
            return arg.split("=", 1)[1], argv[:i] + argv[i + 1 :]
    return None, argv


def pop_list(argv: list[str], option: str) -> tuple[list[str], list[str]]:
    """The values of `--option A B ...` (up to the next flag) in `argv`, and `argv` without
    them."""
    if option not in argv:
        return [], argv
    i = argv.index(option)
    j = i + 1
    while j < len(argv) and not argv[j].startswith("-"):
        j += 1
    return argv[i + 1 : j], argv[:i] + argv[j:]


class UsageError(Exception):
    """The command line names no task and model, or unknown ones."""


class HelpRequested(UsageError):
    """`zoo train --help` (with no task and model named): the message is the usage."""


def last_evaluation(directory: Path) -> tuple[int, dict, dict] | None:
    """The step, metrics per pool and identification metrics of the last evaluation in a run's
    metrics.jsonl (None if it holds none)."""
    from ..run import read_metrics

    rows = [row for row in read_metrics(directory) if row["pool"] != "train"]
    if not rows:
        return None
    step = max(row["step"] for row in rows)
    pools = {
        row["pool"]: {k: v for k, v in row.items() if k not in ("step", "pool")}
        for row in rows
        if row["step"] == step
    }
    return step, pools, pools.pop("identification", {})


def format_metrics(step: int, pools: dict[str, dict], found: dict[str, float]) -> str:
    """An evaluation as a table: a row per pool, a column per metric, then a row per
    identification metric (`zoo eval`, and `zoo train` at its end)."""
    names = sorted({k for values in pools.values() for k in values})
    first = max([10, *(len(n) + 2 for n in [*pools, *found])])
    widths = [max(12, len(n) + 2) for n in names]
    lines = [
        f"{'pool':<{first}}"
        + "".join(f"{n:>{w}}" for n, w in zip(names, widths, strict=True))
        + f"   (step {step})"
    ]
    for pool, values in pools.items():
        cells = (
            f"{values.get(n, float('nan')):>{w}.4f}" for n, w in zip(names, widths, strict=True)
        )
        lines.append(f"{pool:<{first}}" + "".join(cells))
    lines += [f"{name:<{first}}{value:>12.4f}" for name, value in found.items()]
    return "\n".join(lines)
