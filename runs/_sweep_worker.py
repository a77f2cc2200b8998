"""One run of a sweep in a process of its own (`zoo sweep --jobs N`).

    python -m runs._sweep_worker DIRECTORY {new,resume} < settings.json

reads the run's settings (`to_dict` of its `TrainConfig`) on stdin and trains it into
`DIRECTORY`. Exit status 0: finished; 3: the run failed (bad settings or a diverged loss; the
message is on stderr).
"""

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1] not in ("new", "resume"):
        print(__doc__, file=sys.stderr)
        return 2
    from .run import RunError, TrainingDiverged, config_from_dict, train

    config = config_from_dict(json.load(sys.stdin))
    try:
        train(config, Path(argv[0]), resume=argv[1] == "resume", progress=True)
    except (RunError, TrainingDiverged) as error:
        print(f"zoo sweep: {error}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
