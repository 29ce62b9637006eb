"""Several references to one line (`"references": [...]` in place of `"reference"`) for `dialscore score`.

/score takes one `reference` an item (API.md). A file line may give a list instead: a model that reads a
reference scores the reply against each of the first `max_refs` (4 by default) and keeps the best score
(with that reference's details), the rule `python -m training evaluate --max-refs 4` measures every
referenced model by (docs/evaluation.md) and each referenced model's card states; the references past
them are left out and counted. A model that reads none scores the line once and ignores the list.
"""
from __future__ import annotations

import json
from typing import Any

from service.bulk.records import MAX_LINE_DEPTH
from service.json_body import parse_object
from service.text import is_blank

FIELD = "references"
# `training evaluate`'s default --max-refs: the published figures and the cards' rule use the first four.
DEFAULT_MAX_REFS = 4


def expand(raw: bytes, max_refs: int = DEFAULT_MAX_REFS) -> list[bytes] | None:
    """One line per reference among the first `max_refs` for a line holding a `references` list, else None
    (scored as it is); `left_out` counts the rest. ValueError with a message for a list that is empty, not
    of texts, with a blank one among those read, or given beside `reference`."""
    try:
        obj = parse_object(raw, max_depth=MAX_LINE_DEPTH, finite=True)
    except ValueError:  # json_body's refusals are ValueErrors
        return None  # scoring reports the line as it reads it
    if FIELD not in obj:
        return None
    references = obj.pop(FIELD)
    if "reference" in obj:
        raise ValueError("give one `reference` or a `references` list, not both")
    if not isinstance(references, list) or not references or not all(isinstance(r, str) for r in references):
        raise ValueError("references: a non-empty list of texts")
    if (blank := next((j for j, r in enumerate(references[:max_refs]) if is_blank(r)), None)) is not None:
        # one blank reference fails the line, as a blank `reference` does; said where it is
        raise ValueError(f"references.{blank} is blank: give every reference text, or leave the blank one out")
    return [json.dumps({**obj, "reference": r}, ensure_ascii=False).encode("utf-8") for r in references[:max_refs]]


def left_out(obj: dict[str, Any] | None, max_refs: int = DEFAULT_MAX_REFS) -> int:
    """How many of a parsed line's `references` lie past the first `max_refs` (0 without a list that expand
    takes)."""
    references = None if obj is None else obj.get(FIELD)
    if not isinstance(references, list) or "reference" in obj or not all(isinstance(r, str) for r in references):
        return 0
    return max(0, len(references) - max_refs)


def best(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The record of a line scored against each of its references: the best score, or the first error."""
    for record in records:
        if "error" in record:
            return record
    return max(records, key=lambda r: r["score"])
