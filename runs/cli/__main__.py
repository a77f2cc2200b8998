"""`python -m runs.cli`: the `zoo` command."""

from . import main

raise SystemExit(main())
