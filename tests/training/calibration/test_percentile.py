"""human_percentile's check: several next turns a conversation, and an interval that resamples conversations."""
from __future__ import annotations

import numpy as np

from service.scorers.heads import MAX_TURNS
from training.calibration.percentile import ks_from_uniform, ks_interval, next_turns


def test_next_turns_takes_distinct_turns_of_each_conversation_with_its_context():
    dialogues = [[f"d{d} t{t}" for t in range(n)] for d, n in enumerate((2, 5, 12, 30))]
    turns = next_turns(dialogues, limit=10, per_conversation=4)
    counts = np.bincount(turns.conversation, minlength=len(dialogues))
    assert counts.tolist() == [1, 4, 4, 4]  # a two-turn conversation has one next turn
    for item, d in zip(turns.items, turns.conversation):
        t = int(item.response.split("t")[-1])
        assert item.response.startswith(f"d{d} ") and item.context == dialogues[d][max(0, t - MAX_TURNS):t]
    by_conversation = [[i.response for i, c in zip(turns.items, turns.conversation) if c == d] for d in range(4)]
    assert all(len(set(r)) == len(r) for r in by_conversation)
    assert next_turns(dialogues, 10, 4).items == turns.items  # seeded
    assert len(next_turns(dialogues, limit=2, per_conversation=1).items) <= 2


def test_ks_interval_is_wider_where_turns_of_a_conversation_move_together():
    rng = np.random.default_rng(3)
    conversations = np.repeat(np.arange(200), 4)
    independent = rng.uniform(size=800)
    clustered = np.repeat(rng.uniform(size=200), 4)  # four copies of each conversation's draw
    low, high = ks_interval(independent, conversations)
    assert low <= ks_from_uniform(independent) <= high and high < 0.08
    low_c, high_c = ks_interval(clustered, conversations)
    assert high_c - low_c > 1.5 * (high - low)
    assert ks_from_uniform(rng.uniform(0.0, 0.5, size=800)) > 0.4  # a table that rates every turn low fails
