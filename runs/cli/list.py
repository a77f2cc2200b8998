"""`zoo list`: the installed plugins of every kind, with their distributions."""

import plugins


def main(argv: list[str]) -> int:
    """Run `zoo list`; the exit status."""
    del argv
    print(plugins.format_listing())
    return 0
