"""Rewrite one marked section of a Markdown file (docs/evaluation.md, a model card), leaving the rest alone.

Several commands write the same file; each owns the text between its own begin/end markers,
so rerunning one command never clobbers another's results.
"""
from __future__ import annotations

from pathlib import Path


def with_section(text: str, section: str, begin: str, end: str, before: str | None = None) -> str:
    """`text` with the part from `begin` to `end` replaced by `section` (which holds both markers); without them,
    `section` goes in front of the line `before` where the text has it (a model card's next heading), else at the end."""
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        return head + section.rstrip("\n") + rest.split(end, 1)[1]
    if before is not None and f"\n{before}\n" in text:
        head, rest = text.split(f"\n{before}\n", 1)
        return head.rstrip("\n") + "\n\n" + section.rstrip("\n") + f"\n\n{before}\n" + rest
    return text.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"


def write_section(path: Path, section: str, begin: str, end: str, before: str | None = None) -> None:
    """with_section on the file at `path` (a missing file starts as an empty "# Evaluation" page)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8") if path.exists() else "# Evaluation\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(with_section(text, section, begin, end, before), encoding="utf-8")
