"""Rewrite one marked section of a Markdown file (docs/evaluation.md), leaving the rest alone.

Several commands write the same file; each owns the text between its own begin/end markers,
so rerunning one command never clobbers another's results.
"""
from __future__ import annotations

from pathlib import Path


def write_section(path: Path, section: str, begin: str, end: str, before: str | None = None) -> None:
    """Replace the text from `begin` to `end` with `section` (which holds both markers); without them,
    put it in front of the line `before` where the file has it (a model card's next heading), else at the end."""
    path = Path(path)
    text = path.read_text(encoding="utf-8") if path.exists() else "# Evaluation\n"
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + section.rstrip("\n") + rest.split(end, 1)[1]
    elif before is not None and f"\n{before}\n" in text:
        head, rest = text.split(f"\n{before}\n", 1)
        text = head.rstrip("\n") + "\n\n" + section.rstrip("\n") + f"\n\n{before}\n" + rest
    else:
        text = text.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
