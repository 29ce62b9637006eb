"""Scorer implementations found by name: the manifest's `scorer` key picks the class."""
from __future__ import annotations

import importlib
import pkgutil
from typing import Callable

import service.scorers as scorers
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
    """Import every module under service.scorers (a metric's folder too) so their @register decorators run."""
    for info in pkgutil.walk_packages(scorers.__path__, f"{scorers.__name__}."):
        if not info.ispkg and info.name.rpartition(".")[2] not in ("base", "registry"):
            importlib.import_module(info.name)
