"""Configs of the built-in algorithms: frozen dataclasses whose fields are the
`--algorithm.*` flags of `zoo train`. Imports no JAX."""

import dataclasses


@dataclasses.dataclass(frozen=True)
class BilevelConfig:
    """Bilevel meta-learning: the inner loop is set by `--inner.*`, the outer optimizer by
    `--outer.*`; nothing else to choose."""


@dataclasses.dataclass(frozen=True)
class InContextConfig:
    """In-context meta-learning: no inner loop; the outer optimizer is set by `--outer.*`."""
