"""`zoo presets`: the presets of every installed experiment plugin."""


def main(argv: list[str]) -> int:
    """Run `zoo presets`; the exit status."""
    del argv
    from ..experiments import presets

    found = presets()
    if not found:
        print("no presets: no experiment plugin (zoo.experiments) is installed")
        return 0
    width = max(map(len, found))
    for name, preset in found.items():
        print(f"{name:<{width}}  {preset.description}")
    return 0
