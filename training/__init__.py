"""dialscore's offline training package (PyTorch). The service never imports this package."""
from __future__ import annotations

import importlib
from types import ModuleType

# Modules that moved into a family's subpackage, under the names that tests outside tests/training/
# (tests/hred_tiny.py, tests/scorers/test_hred_quotes.py) still import; remove with those imports.
_MOVED = {"pretrain": "training.hred.train", "export": "training.hred.export", "tokenizer": "training.hred.tokenizer"}


def __getattr__(name: str) -> ModuleType:
    if name in _MOVED:
        return importlib.import_module(_MOVED[name])
    raise AttributeError(f"module 'training' has no attribute {name!r}")
