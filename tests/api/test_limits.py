"""service/api/limits.py: the per-request limits that answer 413 before any model runs."""
from __future__ import annotations

import pytest

from service.api import limits
from service.config import load_settings
from service.errors import TooLarge

SETTINGS = load_settings({}, environ={})


def test_a_dialogue_over_the_turn_and_character_limits_is_413() -> None:
    """A dialogue model's `turns` obey the same limits as a context (max_turns, max_chars)."""
    turns = [{"speaker": "user" if j % 2 else "bot", "text": "hi"} for j in range(SETTINGS.max_turns + 1)]
    with pytest.raises(TooLarge) as caught:
        limits.check_items([{"turns": turns}], SETTINGS)
    assert "items.0.turns" in caught.value.details
    long = [{"speaker": "bot", "text": "x" * (SETTINGS.max_chars + 1)}]
    with pytest.raises(TooLarge) as caught:
        limits.check_items([{"turns": long}], SETTINGS)
    assert "items.0.turns.0" in caught.value.details


def test_a_rerank_context_one_turn_over_the_limit_is_413_and_at_it_is_not() -> None:
    body = {"context": ["hi"] * SETTINGS.max_turns, "candidates": ["a"], "reference": None}
    assert limits.check_rerank(body, SETTINGS) == {}
    with pytest.raises(TooLarge) as caught:
        limits.check_rerank({**body, "context": ["hi"] * (SETTINGS.max_turns + 1)}, SETTINGS)
    assert "context" in caught.value.details
