"""Optimizers built from configs: learning-rate schedules as data, and one optax transformation
per parameter label (`optax.multi_transform`), so that each algorithm says which labels it
updates and how."""

import functools
from collections.abc import Mapping
from typing import Any

import jax.tree_util as jtu
import optax
from jaxtyping import PyTree

from .config import InnerConfig, OuterConfig


def schedule(config: OuterConfig, total_steps: int) -> optax.Schedule | float:
    """The learning rate of `config` over a run of `total_steps` steps: a linear warm-up of
    `config.warmup` steps, then constant, a cosine decay to `lr_end` over the run, or piecewise
    constant (multiplied by `decay_factor` at each fraction `decay_at` of the run)."""
    if config.schedule == "cosine":
        return optax.warmup_cosine_decay_schedule(
            init_value=0.0 if config.warmup else config.lr,
            peak_value=config.lr,
            warmup_steps=config.warmup,
            decay_steps=max(total_steps, config.warmup + 1),
            end_value=config.lr_end,
        )
    if config.schedule == "piecewise":
        boundaries = {max(int(total_steps * f), 1): config.decay_factor for f in config.decay_at}
        return optax.piecewise_constant_schedule(config.lr, boundaries)
    if config.warmup:
        return optax.linear_schedule(0.0, config.lr, config.warmup)
    return config.lr


@functools.cache
def _update_rule(config: OuterConfig, total_steps: int) -> optax.GradientTransformation:
    return optax.adamw(schedule(config, total_steps), weight_decay=config.weight_decay)


@functools.cache
def _labelled(
    config: OuterConfig,
    total_steps: int,
    rules: tuple[tuple[str, str], ...],
    labels_flat: tuple[tuple, Any],
) -> optax.GradientTransformation:
    leaves, treedef = labels_flat
    labels = jtu.tree_unflatten(treedef, leaves)
    transforms = {
        "update": _update_rule(config, total_steps),
        "freeze": optax.set_to_zero(),
    }
    rule_of = dict(rules)
    used = {rule_of[label] for label in leaves}
    label_to_rule = jtu.tree_map(lambda label: rule_of[label], labels)
    chain = [optax.clip_by_global_norm(config.clip)] if config.clip > 0 else []
    # A callable: a labels tree shaped like an Equinox model is itself callable, and optax
    # would call it.
    chain.append(
        optax.multi_transform(
            {k: v for k, v in transforms.items() if k in used}, lambda _: label_to_rule
        )
    )
    return optax.apply_if_finite(optax.chain(*chain), max_consecutive_errors=config.max_nonfinite)


def outer_optimizer(
    config: OuterConfig,
    total_steps: int,
    labels: PyTree[str | None],
    rules: Mapping[str, str],
) -> optax.GradientTransformation:
    """AdamW with the schedule of `config` on the leaves whose label `rules` maps to `"update"`,
    nothing on those it maps to `"freeze"` (`optax.multi_transform` over the labels), after
    global-norm clipping of the whole gradient; steps whose gradient is not finite are skipped
    (`optax.apply_if_finite`).

    **Arguments:**

    - `config`, `total_steps`: the optimizer's settings and the length of the run (schedules).
    - `labels`: the label of every array leaf of the parameters, `None` elsewhere (the
        structure of `eqx.filter(model, eqx.is_array)`; see `zoo.array_labels`).
    - `rules`: `label -> "update" | "freeze"` for every label present.

    Cached: the same settings and labels give the same object, so runs in one process share
    compiled steps."""
    flat = jtu.tree_flatten(labels)
    missing = {label for label in flat[0] if label not in rules}
    if missing:
        raise ValueError(f"No optimizer rule for the labels {sorted(missing)}.")
    return _labelled(config, total_steps, tuple(sorted(rules.items())), (tuple(flat[0]), flat[1]))


@functools.cache
def inner_optimizer(config: InnerConfig) -> optax.GradientTransformation:
    """The inner optimizer: AdamW, as in the reference code for every learner."""
    return optax.adamw(config.lr, weight_decay=config.weight_decay, eps_root=config.eps_root)


def nonfinite_steps(opt_state: PyTree) -> int:
    """Steps skipped so far for a non-finite gradient (from `optax.apply_if_finite`'s state)."""
    return int(opt_state.total_notfinite)
