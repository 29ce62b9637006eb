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
    "finetune-minilm": "training.minilm.finetune",
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        if argv and argv[0] not in ("-h", "--help"):
            print(f"error: unknown command {argv[0]!r}", file=sys.stderr)
        print("usage: python -m training <command> [options]\n\ncommands:")
        for name, module in sorted(COMMANDS.items()):
            print(f"  {name:16s} ({module})")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    module = importlib.import_module(COMMANDS[argv[0]])
    try:
        return int(module.main(argv[1:]) or 0)
    except (FileNotFoundError, PermissionError, NotADirectoryError, IsADirectoryError, FileExistsError) as exc:
        # A path given on the command line (or its default) that is not there or not writable:
        # a set-up error to fix, not a bug to read a traceback for.
        print(f"error: {argv[0]}: {exc.strerror or exc}: {exc.filename}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
