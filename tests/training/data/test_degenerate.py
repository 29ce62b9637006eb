"""Degenerate replies for negative sampling: one of each kind, from phrase lists the check does not use."""
from __future__ import annotations

import random

from training.data import degenerate


def test_degenerate_kinds_and_disjoint_phrase_lists() -> None:
    replies = degenerate.degenerate_replies(["how are you?", "fine, and you?"], "not bad at all, thanks",
                                            "the bus leaves at nine.", random.Random(0))
    assert set(replies) == set(degenerate.KINDS)
    assert replies["copy-last-turn"] == "fine, and you?"
    assert replies["repeated"] == " ".join(["not", "bad", "at"] * 5)
    assert replies["empty"] == ""
    assert not set(degenerate.CHECK_GENERIC) & set(degenerate.TRAIN_GENERIC)
    assert not set(degenerate.CHECK_NEAR_EMPTY) & set(degenerate.TRAIN_NEAR_EMPTY)
