"""`zoo sweeps`: the sweeps of every installed experiment plugin."""


def main(argv: list[str]) -> int:
    """Run `zoo sweeps`; the exit status."""
    del argv
    from ..experiments import sweeps

    found = sweeps()
    if not found:
        print("no sweeps: no experiment plugin (zoo.experiments) is installed")
        return 0
    width = max(map(len, found))
    for name, sweep in found.items():
        runs = f"{len(sweep.runs)} run{'s' * (len(sweep.runs) > 1)}"
        print(f"{name:<{width}}  {runs} x {len(sweep.seeds)} seeds  {sweep.description}")
    return 0
