"""`zoo pretrained`: the pretrained models installed (entry-point group `zoo.pretrained`)."""


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.1f} kB"


def main(argv: list[str]) -> int:
    """Run `zoo pretrained`; the exit status."""
    import sys

    if argv and argv[0] in ("-h", "--help"):
        print(
            "usage: zoo pretrained\n\nList the installed pretrained models (entry-point group "
            "zoo.pretrained): name, paper, task, metric, size, distribution. Load one with "
            'runs.load("pretrained:NAME"), evaluate it with zoo eval pretrained:NAME.'
        )
        return 0
    if argv:
        print(f"zoo pretrained: takes no arguments, got {' '.join(argv)}", file=sys.stderr)
        return 2
    from ..pretrained import listing

    rows = listing()
    if not rows:
        print(
            "no pretrained models: none is registered (entry-point group zoo.pretrained); "
            "zoo export RUN_DIR --to DIR writes one from a run, runs.load(DIR) reads it"
        )
        return 0
    table = [("name", "paper", "task", "metric", "size", "distribution")]
    for row in rows:
        size = "-" if row.size is None else _size(row.size)
        table.append((row.name, row.paper, row.task, row.metric, size, row.dist))
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for r in table:
        print("  ".join(f"{c:<{w}}" for c, w in zip(r, widths, strict=True)).rstrip())
    return 0
