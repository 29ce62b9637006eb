"""The command a generated page names, as a reader can run it on another machine."""
from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def portable(arg: str) -> str:
    """An absolute path inside the repository as a relative one; one outside it as `$DIR/<name>`,
    since this machine's folders mean nothing elsewhere."""
    if not arg.startswith("/"):
        return arg
    path = Path(arg)
    try:
        return str(path.resolve().relative_to(REPO)) or "."
    except ValueError:
        return f"$DIR/{path.name}"


def command_line(prefix: str, argv: Sequence[str]) -> str:
    """`prefix` and the arguments as portable() shows them, quoted for a shell (but `$DIR`)."""
    shown = (portable(arg) for arg in argv)
    return " ".join([prefix, *(a if a.startswith("$DIR/") else shlex.quote(a) for a in shown)])


def with_environment(command: str, names: Sequence[str], environ: Mapping[str, str]) -> str:
    """`command` after `NAME=value` for each of `names` set in `environ`: settings its output depends on
    (the encoders' provider and precision), which a rerun needs as much as the arguments."""
    settings = [f"{name}={shlex.quote(environ[name])}" for name in names if environ.get(name)]
    return " ".join([*settings, command])
