"""The `meta-rims` algorithm's spec (entry point `zoo.algorithms`): light, imports no JAX."""

from plugins import AlgorithmSpec

from .config import MetaRIMsConfig

meta_rims = AlgorithmSpec(
    name="meta-rims",
    config=MetaRIMsConfig,
    factory="plugins.madan2021.meta_rims:make",
    algorithm="plugins.madan2021.meta_rims:MetaRIMs",
    description="fast and slow PPO loops over an agent's fast and slow leaves (Madan et al. 2021)",
    # A variant of PPO that a user asks for by name: below PPO, so that it never ties with it.
    preference=-10,
    split="algorithm.envs",
)
