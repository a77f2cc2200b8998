"""Configuration dataclasses of the built-in models.

Imported by the plugin specs and the CLI, so it imports no JAX: listing models stays cheap.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class LinearHypernetConfig:
    """Linear hypernetwork (Schug et al. 2024, Appendix D.3, with the reference code's details)."""

    hidden: int = 128
    """Width of the base network's hidden layers."""
    num_hidden: int = 3
    """Number of hidden layers of the base network."""
    num_templates: int = 32
    """Embedding size T (number of weight templates per layer group); the reference uses 4M."""

    def __post_init__(self):
        if self.hidden < 1:
            raise ValueError(
                f"model.hidden must be >= 1, got {self.hidden}; pass e.g. --model.hidden 128."
            )
        if self.num_hidden < 1:
            raise ValueError(
                f"model.num_hidden must be >= 1, got {self.num_hidden}; pass e.g. --model.num-hidden 3."
            )
        if self.num_templates < 1:
            raise ValueError(
                f"model.num_templates must be >= 1, got {self.num_templates}; "
                "the reference uses 4x the number of teacher modules."
            )
