"""The dev hold-out: no training stream holds a development context or (query, reply) pair."""
from __future__ import annotations

import pytest

from training.data import corpora, judgements
from training.data.holdout import DevHoldout
from training.data.keys import match_key


def test_windows_match_across_spellings_and_skip_greetings() -> None:
    holdout = DevHoldout.of([
        (["How was the trip to Paris ?", "I don ’ t think I liked it much ."], "Why not, what went wrong?", True),
        (["hi"], "hello", False),
    ])
    assert holdout.touches(["hello", "how was the trip to paris?", "i do n't think i liked it much .", "ok"])
    assert holdout.touches(["I don't think I liked it much.", "why not , what went wrong ?"])
    assert not holdout.touches(["How was the trip to Paris ?", "It was lovely."])  # one dev turn alone
    assert not holdout.touches(["hi", "hello"])  # too short to say anything of a dev item
    assert holdout.holds_query(["I dont think I liked it much"])
    assert not holdout.holds_query(["hi"])  # a ConTurE-style item, keyed by dialogue, not by query
    kept, dropped = holdout.unseen([["a b c"], ["How was the trip to Paris?", "I don't think I liked it much."]])
    assert kept == [["a b c"]] and dropped == 1


@pytest.mark.data
def test_pretraining_corpora_hold_no_dev_context_of_zhao() -> None:
    """The audit's finding: zhao's dev contexts are DailyDialog train dialogues. Left out now."""
    dev_windows = {tuple(match_key(t) for t in item.context[-2:])
                   for item in judgements.load_set("xdial_dailydialog_zhao", "dev") if len(item.context) >= 2}
    train = corpora.load_dialogues("train")
    kept, dropped = judgements.dev_holdout().unseen(train)

    def windows(dialogues: list[list[str]]) -> set[tuple[str, ...]]:
        return {(match_key(a), match_key(b)) for d in dialogues for a, b in zip(d, d[1:])}

    assert dev_windows & windows(train), "the corpus should hold zhao dev contexts (the audit's finding)"
    assert not dev_windows & windows(kept)
    assert 0 < dropped < 0.01 * len(train)


@pytest.mark.data
def test_train_partitions_repeat_no_dev_query_or_pair() -> None:
    dev_pairs, dev_queries = set(), set()
    for name in judgements.SETS:
        for item in judgements.load_set(name, "dev"):
            dev_pairs.add((match_key(item.context[-1]), match_key(item.response)))
            if judgements.split_key(item).startswith("q:"):
                dev_queries.add(match_key(item.context[-1]))
    left_out = 0
    # A set outside the hold-out (SetInfo.held_out: measured only, from a corpus no stream reads) has a
    # train partition nothing reads; two Topical-Chat conversations open with the same two turns.
    for name in judgements.HELD_OUT_SETS:
        train = judgements.load_set(name, "train")
        everything = [i for i in judgements.load_set(name, "all")
                      if judgements.split_of(judgements.split_key(i)) == "train"]
        left_out += len(everything) - len(train)
        for item in train:
            pair = (match_key(item.context[-1]), match_key(item.response))
            assert pair not in dev_pairs or len(pair[0]) + len(pair[1]) < 24, (name, item.item_id)
            if judgements.split_key(item).startswith("q:"):
                assert pair[0] not in dev_queries, (name, item.item_id)
    assert 0 < left_out < 450  # straddlers and later turns of dev dialogues (about 3% of 11,000), no more
