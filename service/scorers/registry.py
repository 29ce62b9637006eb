"""Scorer implementations found by name: the manifest's `scorer` key picks the class."""
from __future__ import annotations

from typing import Callable

from service.scorers.base import Scorer

_REGISTRY: dict[str, type[Scorer]] = {}


def register(key: str) -> Callable[[type[Scorer]], type[Scorer]]:
    def wrap(cls: type[Scorer]) -> type[Scorer]:
        _REGISTRY[key] = cls
        return cls

    return wrap


def scorer_class(key: str) -> type[Scorer]:
    _import_all()
    try:
        return _REGISTRY[key]
    except KeyError:
        raise KeyError(f"no scorer implementation named {key!r}") from None


def _import_all() -> None:
    """Import every module in service.scorers so their @register decorators run."""
    import importlib
    import pkgutil

    import service.scorers as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.name not in ("base", "registry"):
            importlib.import_module(f"service.scorers.{info.name}")
