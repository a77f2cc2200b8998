"""Checks of a run's plugins that answer a plugin author's mistakes before anything compiles.

`runs.run` calls them while it loads and builds a run's task and model (`_factory`, `build`,
`prepare`); each raises `runs.RunError` with a short message naming what is wrong and the fix:

- `check_classes`: a class of the plugin (the one its factory is annotated to return, else
  those of the factory's module) that does not implement an abstract member of its kind:
  typically a plugin written against an older release of the plugin API (a task without `io`, a model without `labels`);
- `check_instantiation`: the same, found only when the factory tried to instantiate the class
  (Python's `TypeError: Can't instantiate abstract class ...`);
- `check_episode`: a task whose sampled episodes do not have the shapes its `io` declares (an
  input of another width, a target without its feature axis);
- `check_predictions`: a model whose predictions do not have the shape the task's `loss`
  takes (`[n, ..., io.out_features]`).
"""

import importlib.metadata
import inspect
import re
import sys
from typing import Any, NoReturn

import plugins

API_CHANGES = "0.2.0"
"""The CHANGELOG section that lists the changes of the plugin API a message points at."""

_FIXES = {
    "io": (
        "implement `io` as a property returning a `zoo.IOSpec` (e.g. "
        "`zoo.IOSpec.vectors(in_features, out_features)`); it replaces the properties "
        "`in_features` and `out_features`"
    ),
    "labels": (
        "implement `labels()` returning a pytree shaped like the model with a label "
        '("fast", "meta", "fixed" or "slow") at every leaf (see `zoo.array_labels`); it '
        "replaces overriding `fast_filter`"
    ),
}
"""How to implement the abstract members added to the plugin API since a release, where a
member's own docstring does not say it."""

_ABSTRACT_INSTANCE = re.compile(r"Can't instantiate abstract class (\w+)")


def _fail(message: str) -> NoReturn:
    from .run import RunError  # here: runs.run imports this module

    raise RunError(message)


def _bases(kind: str) -> tuple[type, ...]:
    if kind == "task":
        from tasks import AbstractEnvironment, AbstractTask

        return (AbstractTask, AbstractEnvironment)
    from zoo import AbstractLearner

    return (AbstractLearner,)


def zoo_version() -> str:
    """The installed version of this distribution (`plugins.own_distribution()`)."""
    try:
        return importlib.metadata.version(plugins.own_distribution())
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"


def _plugin(entry: plugins.Entry, kind: str) -> str:
    version = f" {entry.version}" if entry.version else ""
    return f"The {kind} plugin {entry.name!r} ({entry.dist}{version})"


def _is_abstract_name(name: str) -> bool:
    # Equinox's abstract-or-final convention: abstract classes are named `Abstract...`.
    return name.lstrip("_").startswith("Abstract")


def _declared_by(cls: type, member: str) -> type | None:
    """The base class of `tasks` or `zoo` among `cls`'s ancestors that declares `member`
    abstract."""
    for base in cls.__mro__:
        declared = getattr(base.__dict__.get(member), "__isabstractmethod__", False)
        if declared and base.__module__.partition(".")[0] in ("tasks", "zoo"):
            return base
    return None


def _public_name(cls: type) -> str:
    return f"{cls.__module__.partition('.')[0]}.{cls.__name__}"


def _fix(member: str, base: type | None) -> str:
    if member in _FIXES:
        return _FIXES[member]
    doc = inspect.getdoc(getattr(base, member, None)) if base is not None else None
    what = f" ({doc.splitlines()[0].rstrip('.')})" if doc else ""
    return f"implement `{member}`{what}"


def _problems(cls: type, members: list[str]) -> list[str]:
    lines = []
    for member in sorted(members):
        base = _declared_by(cls, member)
        of = f", an abstract member of {_public_name(base)}" if base is not None else ""
        lines.append(
            f"- {cls.__name__} ({cls.__module__}) does not implement `{member}`{of}: "
            f"{_fix(member, base)}."
        )
    return lines


def _message(entry: plugins.Entry, kind: str, problems: list[str]) -> str:
    return "\n".join(
        [
            f"{_plugin(entry, kind)} was written for an older plugin API: compgen-zoo "
            f"{zoo_version()} cannot build it.",
            *problems[:6],
            *([f"- and {len(problems) - 6} more."] if len(problems) > 6 else []),
            f"See the CHANGELOG, {API_CHANGES}, for what changed in the plugin API.",
        ]
    )


def _returned(module: Any, attr: str, bases: tuple[type, ...]) -> type | None:
    """The class of the plugin's kind that the factory `module.attr` is annotated to return."""
    factory = module
    for part in attr.split("."):
        factory = getattr(factory, part, None)
    try:
        annotation = inspect.signature(factory, eval_str=True).return_annotation  # type: ignore[arg-type]
    except Exception:  # no signature, or an annotation that does not evaluate
        return None
    return annotation if inspect.isclass(annotation) and issubclass(annotation, bases) else None


def _candidates(entry: plugins.Entry, kind: str) -> list[type]:
    """The concrete-looking classes of the plugin's kind that its factory may build: the one
    its factory is annotated to return, else those of the factory's module (defined there, or
    imported there from the same top-level package)."""
    module_name, _, attr = entry.spec.factory.partition(":")
    module = sys.modules.get(module_name)
    if module is None:  # not imported (it failed to): nothing to look at
        return []
    top = module_name.partition(".")[0]
    bases = _bases(kind)
    returned = _returned(module, attr, bases)
    found = []
    for obj in [returned] if returned is not None else list(vars(module).values()):
        if (
            inspect.isclass(obj)
            and issubclass(obj, bases)
            and obj not in bases
            and obj.__module__.partition(".")[0] == top
            and not _is_abstract_name(obj.__name__)
            and getattr(obj, "__abstractmethods__", None)
        ):
            found.append(obj)
    return sorted(found, key=lambda c: c.__name__)


def check_classes(entry: plugins.Entry, kind: str, also: str | None = None) -> None:
    """Refuse the plugin if a class of its kind in the module of its factory does not
    implement every abstract member of its base class (`kind`: `"task"` or `"model"`).

    `also`: another problem of the plugin (e.g. a factory of an older signature), added to the
    message if there is one to give.

    **Raises:** `RunError` naming each class, member, the installed version and the fix."""
    problems = [
        line
        for cls in _candidates(entry, kind)
        for line in _problems(cls, list(cls.__abstractmethods__))
    ]
    if problems:
        _fail(_message(entry, kind, [*problems, *([f"- {also}"] if also else [])]))


def check_instantiation(entry: plugins.Entry, kind: str, error: TypeError) -> None:
    """Turn the `TypeError` of a factory that instantiated an abstract class (one that does not
    implement an abstract member of its kind) into a short `RunError`; return (for the caller
    to re-raise `error`) if it was another error."""
    match = _ABSTRACT_INSTANCE.search(str(error))
    if match is None:
        return
    name = match.group(1)
    cls = next(
        (
            c
            for c in _all_subclasses(_bases(kind))
            if c.__name__ == name and getattr(c, "__abstractmethods__", None)
        ),
        None,
    )
    if cls is None:
        return
    _fail(_message(entry, kind, _problems(cls, list(cls.__abstractmethods__))))


def _all_subclasses(bases: tuple[type, ...]) -> list[type]:
    seen: list[type] = []
    todo = list(bases)
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.append(sub)
                todo.append(sub)
    return seen


def _shape(x: Any) -> tuple[int, ...] | None:
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None else None


def check_episode(entry: plugins.Entry, task: Any) -> None:
    """Refuse a task (`tasks.AbstractTask`, concrete or abstract) whose sampled episode's
    splits do not hold `x: [n, *io.x_shape]` and `y: [n, *io.y_shape]`: a model is built from
    `io`, and would fail on the data deep in a compiled step (or, worse, broadcast them).
    Computes nothing: the episode is sampled abstractly. Inputs that are not one array (a dict
    of arrays) are not checked."""
    import equinox as eqx
    import jax.random as jr

    from tasks import AbstractTask

    if not isinstance(task, AbstractTask):
        return
    io = task.io
    episode = eqx.filter_eval_shape(lambda t, k: t.sample(k), task, jr.key(0))
    for split_name in ("support", "query"):
        split = getattr(episode, split_name)
        for field, declared in (("x", io.x_shape), ("y", io.y_shape)):
            shape = _shape(getattr(split, field))
            if shape is None or shape[1:] == declared:
                continue
            n = shape[0] if shape else "n"
            hint = ""
            if field == "y" and shape[1:] == declared[:-1] and declared[-1:] == (1,):
                hint = (
                    f" The targets lack their feature axis: return them as {(n, *declared)} "
                    "(e.g. `y[:, None]`), as the task's `loss` and the model expect."
                )
            elif len(shape) == len(declared) + 1:
                hint = f" Make `sample` and `io` agree: {field} should be {(n, *declared)}."
            else:
                hint = (
                    f" A split holds `{field}: [n, *io.{field}_shape]`; {field} should be "
                    f"{(n, *declared)}."
                )
            _fail(
                f"{_plugin(entry, 'task')} samples {split_name}.{field} of shape {shape}, but "
                f"its `io` declares {field}_shape={declared}.{hint}"
            )


def check_predictions(
    task_entry: plugins.Entry, model_entry: plugins.Entry, task: Any, model: Any
) -> None:
    """Refuse a model whose predictions for a sampled episode's queries are not
    `[n, ..., io.out_features]`, the shape the task's `loss` and `metrics` take: a loss of
    other shapes broadcasts (e.g. to `[n, n]`) and trains, silently, on nonsense. Computes
    nothing (abstract shapes only). Models that are neither `zoo.AbstractMetaLearner` nor
    `zoo.AbstractInContextLearner`, and tasks that are no `tasks.AbstractTask`, are not checked.
    """
    import equinox as eqx
    import jax.random as jr

    from tasks import AbstractTask
    from zoo import AbstractInContextLearner, AbstractMetaLearner

    if not isinstance(task, AbstractTask):
        return
    episode = eqx.filter_eval_shape(lambda t, k: t.sample(k), task, jr.key(0))
    support, query = episode.support, episode.query
    if isinstance(model, AbstractMetaLearner):
        pred = eqx.filter_eval_shape(lambda m, x: m(x), model, query.x)
    elif isinstance(model, AbstractInContextLearner):
        pred = eqx.filter_eval_shape(
            lambda m, sx, sy, qx, qy: m(sx, sy, qx, qy, inference=True),
            model,
            support.x,
            support.y,
            query.x,
            query.y,
        )
    else:
        return
    shape, x_shape = _shape(pred), _shape(query.x)
    if shape is None or x_shape is None:
        return
    n, out = x_shape[0] if x_shape else None, task.io.out_features
    if shape and shape[0] == n and shape[-1] == out:
        return
    _fail(
        f"{_plugin(model_entry, 'model')} predicts shape {shape} for the {n} queries of the "
        f"task {task_entry.name!r}, but its `io` declares out_features={out}: the task's `loss` "
        f"and `metrics` take predictions [n, ..., {out}] ({(n, out)} for one vector each). "
        "Build the model's output layer from `io.out_features`, and map a batch of inputs "
        "to a batch of predictions (the first axis is the examples')."
    )
