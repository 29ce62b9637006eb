"""The command a generated page names, as a reader can run it on another machine."""
from __future__ import annotations

import shlex
from collections.abc import Sequence
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
