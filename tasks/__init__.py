"""Task generators: pure, jittable functions key -> episodes (see `tasks._base.AbstractTask`).

Deliberately light: importing `tasks` (or `tasks.config`) imports no JAX; import a generator's
module (e.g. `tasks.hyperteacher`) to build it.
"""
