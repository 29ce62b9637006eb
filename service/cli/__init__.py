"""`dialscore COMMAND ...`, the console command `pip install` puts on PATH (pyproject.toml).

A dispatcher: each command is the module a `python -m service...` command line runs, with the same
options (their `--help` says so), so the two never drift. Only `score` is its own (score.py).
"""
from __future__ import annotations

import importlib
import sys

from service.version import VERSION

# command: (module with main(argv), arguments put first, what it does)
COMMANDS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "serve": ("service.__main__", (), "serve the model store over HTTP under gunicorn (python -m service)"),
    "score": ("service.cli.score", (), "a JSONL or CSV file through one or several models: per-line scores "
                                       "and each system's mean"),
    "bulk": ("service.bulk.cli", (), "a JSONL corpus through one model, resumable and shardable "
                                     "(python -m service.bulk)"),
    "correlate": ("service.analysis.__main__", ("correlate",), "how well metrics agree with human ratings, "
                                                                "from a file (python -m service.analysis)"),
    "human-eval": ("service.analysis.__main__", ("human-eval",), "Ji et al. 2022 reliable human assessment, "
                                                                  "from a file (python -m service.analysis)"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:{width}}  {help_}" for name, (_, _, help_) in COMMANDS.items()]
    return "\n".join(["usage: dialscore COMMAND [options]   (dialscore COMMAND --help for its options; "
                      "dialscore --version)", "",
                      "commands:", *lines])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] == "--version":
        print(f"dialscore {VERSION}")
        return 0
    if argv[0] not in COMMANDS:
        print(f"dialscore: no command {argv[0]!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module, first, _ = COMMANDS[argv[0]]
    # the usage names what the user typed; a module whose first argument is the subcommand adds it itself
    prog = "dialscore" if first else f"dialscore {argv[0]}"
    return importlib.import_module(module).main([*first, *argv[1:]], prog=prog)
