"""Equinox's abstract-or-final pattern: every Module class in `zoo/` and `tasks/` is either
abstract (named `Abstract*`, not instantiable: it has abstract methods or attributes) or final
(concrete, and never subclassed)."""

import abc
import importlib
import inspect
import pathlib
import pkgutil

import equinox as eqx
import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]


def _module_classes(package: str) -> list[type]:
    classes = []
    for info in pkgutil.iter_modules([str(REPO / package)]):
        module = importlib.import_module(f"{package}.{info.name}")
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, eqx.Module) and obj.__module__ == module.__name__:
                classes.append(obj)
    return classes


CLASSES = sorted(
    {c for package in ("zoo", "tasks") for c in _module_classes(package)},
    key=lambda c: f"{c.__module__}.{c.__qualname__}",
)


def _is_abstract(cls: type) -> bool:
    abstract_vars = any(
        isinstance(v, type) is False and "AbstractVar" in str(v)
        for v in getattr(cls, "__annotations__", {}).values()
    )
    return bool(getattr(cls, "__abstractmethods__", ())) or abstract_vars or inspect.isabstract(cls)


def test_there_are_classes_to_check():
    names = {c.__name__ for c in CLASSES}
    assert {"AbstractLearner", "LinearHypernet", "MetaSeq2Seq", "AbstractTask"} <= names


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_every_module_is_abstract_or_final(cls: type):
    subclasses = [c for c in CLASSES if c is not cls and issubclass(c, cls)]
    if cls.__name__.startswith("Abstract"):
        assert _is_abstract(cls), (
            f"{cls.__name__} is named Abstract* but has no abstract method or attribute"
        )
    else:
        assert not _is_abstract(cls), (
            f"{cls.__name__} is concrete by name but abstract: {sorted(cls.__abstractmethods__)}; "
            "name it Abstract* or implement them"
        )
        assert not subclasses, (
            f"{cls.__name__} is concrete and subclassed by {[c.__name__ for c in subclasses]}; "
            "concrete Modules are final: subclass an Abstract* class instead"
        )


def test_the_check_can_fail():
    """A concrete Module subclassed, and an Abstract* without abstract members, are caught."""

    class Concrete(eqx.Module):
        def __call__(self):
            return 0

    class AbstractHollow(eqx.Module):
        pass

    class AbstractReal(eqx.Module):
        @abc.abstractmethod
        def f(self): ...

    assert not _is_abstract(Concrete) and not _is_abstract(AbstractHollow)
    assert _is_abstract(AbstractReal)
