"""The trained models Schug et al. 2024's plugin ships (entry points `zoo.pretrained`): each a
directory `zoo export` wrote beside this module, made by `scripts/train_pretrained.py NAME`.
Light: `runs.load("pretrained:NAME")` reads the weights."""

from plugins import PretrainedSpec

_HERE = "plugins.schug2024.pretrained"

linear_hypernet_hyperteacher = PretrainedSpec(
    name="schug2024-linear-hypernet-hyperteacher",
    path=f"{_HERE}:schug2024-linear-hypernet-hyperteacher",
    description="linear hypernetwork, compositional hyperteacher (CPU scale), seed 0",
)
nonlinear_hypernet_hyperteacher = PretrainedSpec(
    name="schug2024-nonlinear-hypernet-hyperteacher",
    path=f"{_HERE}:schug2024-nonlinear-hypernet-hyperteacher",
    description="nonlinear hypernetwork, compositional hyperteacher (CPU scale), seed 0",
)
anil_hyperteacher = PretrainedSpec(
    name="schug2024-anil-hyperteacher",
    path=f"{_HERE}:schug2024-anil-hyperteacher",
    description="ANIL, compositional hyperteacher (CPU scale), seed 0",
)
linear_hypernet_preferences = PretrainedSpec(
    name="schug2024-linear-hypernet-preferences",
    path=f"{_HERE}:schug2024-linear-hypernet-preferences",
    description="linear hypernetwork, compositional preferences grid world, K=3 (CPU scale), seed 0",
)
