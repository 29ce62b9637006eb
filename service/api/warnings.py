"""The `warnings` of a /score or /rerank response: replies the models were not made to read (API.md).

Each is `{"index", "code", "message"}`, `index` pointing into `items` or `candidates`; the score is still
given. Codes: `not_english` (service/components/language.py), `no_words` (emoji or punctuation only), `empty`.
"""
from __future__ import annotations

from typing import Any

from service.observability import metrics
from service.components import language

_MESSAGES = {  # by code: also what /rerank's `exclude_warned` may name
    "empty": "The reply is empty or blank: its score says nothing about a reply; do not send it.",
    "no_words": "The reply has no letter or digit (emoji or punctuation only): the models read words, so such "
                "replies score alike and their order means little.",
    "not_english": "The reply {what}, not English: the models were trained on English only, so its score and "
                   "rank mean little.",
}
CODES = tuple(_MESSAGES)


def reply_warnings(replies: list[tuple[int, str]], confidence: float, endpoint: str,
                   counted: bool = True) -> list[dict[str, Any]]:
    """A warning for each (index, reply) the models cannot read, in the order given; each counted in metrics
    unless not `counted` (count_warnings then counts them once the answer is sure)."""
    out = []
    for index, text in replies:
        reading = language.read(text, confidence)
        if reading.code == "english":
            continue
        what = (f"is mostly in the {reading.language} script" if reading.how == "script" else
                f"looks like language {reading.language!r} ({reading.how})")
        out.append({"index": index, "code": reading.code, "message": _MESSAGES[reading.code].format(what=what)})
    if counted:
        count_warnings(out, endpoint)
    return out


def count_warnings(warnings: list[dict[str, Any]], endpoint: str) -> None:
    for warning in warnings:
        metrics.WARNINGS.labels(endpoint, warning["code"]).inc()
