"""Specs of the built-in training algorithms. `pyproject.toml` registers each of them under the
`zoo.algorithms` entry point, exactly as a third-party package registers its own. Only config
modules are imported here (no JAX).

Which algorithm `zoo train TASK MODEL` uses: among those whose class accepts the kinds of task
and model, the one of highest `preference`. The built-ins accept disjoint kinds (bilevel: an
`AbstractMetaLearner` on an `AbstractTask`; in-context: an `AbstractInContextLearner`; PPO: an
`AbstractActorCritic` in an `AbstractEnvironment`), so their preference 0 never ties."""

from runs.algorithms.config import BilevelConfig, InContextConfig, PPOConfig

from ._spec import AlgorithmSpec

bilevel = AlgorithmSpec(
    name="bilevel",
    config=BilevelConfig,
    factory="runs.algorithms.bilevel:make",
    algorithm="runs.algorithms.bilevel:Bilevel",
    description="inner loop on the support set, outer step on the query loss (MAML-style)",
)

in_context = AlgorithmSpec(
    name="in-context",
    config=InContextConfig,
    factory="runs.algorithms.in_context:make",
    algorithm="runs.algorithms.in_context:InContext",
    description="the model reads the support set beside the queries",
)

ppo = AlgorithmSpec(
    name="ppo",
    config=PPOConfig,
    factory="runs.algorithms.ppo:make",
    algorithm="runs.algorithms.ppo:PPO",
    description="recurrent PPO over a batch of environments (BabyAI's settings)",
    split="algorithm.envs",
)
