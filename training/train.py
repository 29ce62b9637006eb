"""`python -m training train <model> [options]`: dispatch to one model's trainer (`main(argv)`)."""
from __future__ import annotations

import importlib

TRAINERS: dict[str, str] = {
    "adem": "training.adem.train",
    "autojudge": "training.autojudge.train",
    "ruber": "training.ruber.train",
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in TRAINERS:
        print("usage: python -m training train {" + ",".join(sorted(TRAINERS)) + "} [options]")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    module = importlib.import_module(TRAINERS[argv[0]])
    return int(module.main(argv[1:]) or 0)
