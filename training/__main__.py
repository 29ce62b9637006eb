"""`python -m training <command> [args]`: every offline step, each a module with `main(argv)`.

Commands are looked up lazily so that `--help` does not import torch.
"""
from __future__ import annotations

import importlib
import sys

# command -> module with a `main(argv: list[str]) -> int`
COMMANDS: dict[str, str] = {
    "export-glove": "training.glove",
    "baselines": "training.baselines",
    "train-mh": "training.mh.train",
    "selfplay": "training.selfplay",
    "pretrain": "training.pretrain",
    "selftalk": "training.selftalk",
    "train": "training.train",
    "export": "training.export",
    "evaluate": "training.evaluate",
    "export-minilm": "training.minilm.export",
    "train-minilm": "training.minilm.train",
    "minilm-cosine": "training.minilm.cosine",
    "minilm-report": "training.minilm.report",
    "degenerate": "training.minilm.degenerate",
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print("usage: python -m training <command> [options]\n\ncommands:")
        for name, module in sorted(COMMANDS.items()):
            print(f"  {name:16s} ({module})")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    module = importlib.import_module(COMMANDS[argv[0]])
    return int(module.main(argv[1:]) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
