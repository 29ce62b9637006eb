"""The judgement loaders on the real data: ranges, ids, and a partition that never shares a context."""
from __future__ import annotations

from collections import defaultdict
from itertools import combinations

import pytest

from training.data.judgements import (ALIASES, SETS, TRAINING_SETS, counted_once, load_set, rescale, split_key,
                                      split_of)
from training.data.keys import match_key

EXPECTED_SIZES = {
    "dstc7": 10000,
    "dailydialog_gupta_multiref": 500,
    "predictive_engagement": 600,
    "holistic_eval": 200,
    "xdial_dailydialog_zhao": 900,
    "xdial_persona_zhao": 900,
    "xdial_dailydialog_gupta": 500,
    "xdial_conture_turn": 1066,
    "conture": 1052,
    "convai2_turn": 1646,
    "topicalchat_turn": 22182,
}
# Sets split by conversation, not by query: two conversations may both open with "hi".
KEYED_BY_CONVERSATION = {"conture", "xdial_conture_turn", "convai2_turn", "topicalchat_turn"}


def test_every_listed_set_has_an_expected_size() -> None:
    assert set(SETS) == set(EXPECTED_SIZES)


@pytest.mark.data
@pytest.mark.parametrize("name", sorted(EXPECTED_SIZES))
def test_set_loads_rescaled_with_unique_ids(name: str) -> None:
    items = load_set(name)
    assert len(items) == EXPECTED_SIZES[name]
    assert len({i.item_id for i in items}) == len(items)
    assert all(1.0 <= i.score <= 5.0 for i in items)
    assert all(i.context and all(i.context) and i.response for i in items)
    assert all(i.set == name for i in items)
    with_refs = sum(bool(i.references) for i in items)
    assert (with_refs > 0.9 * len(items)) if SETS[name].has_references else with_refs == 0
    assert any(i.system is not None for i in items) == SETS[name].has_systems


@pytest.mark.data
@pytest.mark.parametrize("name", sorted(EXPECTED_SIZES))
def test_train_and_dev_partition_the_set_by_context(name: str) -> None:
    train, dev, every = load_set(name, "train"), load_set(name, "dev"), load_set(name)
    # "train" leaves out the few items that repeat dev text under another spelling (test_holdout.py)
    assert 0.9 * len(every) <= len(train) + len(dev) <= len(every)
    assert 0.15 * len(every) < len(dev) < 0.45 * len(every)
    assert not {split_key(i) for i in train} & {split_key(i) for i in dev}
    assert not {i.conversation for i in train} & {i.conversation for i in dev}
    if name not in KEYED_BY_CONVERSATION:
        assert not {tuple(i.context) for i in train} & {tuple(i.context) for i in dev}


@pytest.mark.data
def test_overlapping_sets_put_a_shared_context_in_the_same_split() -> None:
    splits: dict[str, set[str]] = defaultdict(set)
    for name in (n for n in SETS if n not in KEYED_BY_CONVERSATION):
        for item in load_set(name):
            splits[" ".join(item.context[-1].lower().split())].add(split_of(split_key(item)))
    # the same DailyDialog query appears in several sets; it must never straddle train and dev
    assert all(len(found) == 1 for found in splits.values())
    gupta = {i.context[-1].lower() for i in load_set("dailydialog_gupta_multiref", "dev")}
    xdial = {i.context[-1].lower() for i in load_set("xdial_dailydialog_gupta", "dev")}
    assert gupta and len(gupta & xdial) >= 0.9 * len(gupta)


@pytest.mark.data
def test_dstc7_merges_judges_and_drops_the_human_reply_from_references() -> None:
    items = load_set("dstc7")
    human = [i for i in items if i.system == "Human"]
    assert len(human) == 1000 and len({i.system for i in items}) == 10
    assert all(i.response.lower().replace(" ", "") not in {r.lower().replace(" ", "") for r in i.references}
               for i in human)


@pytest.mark.data
def test_convai2_turn_likes_are_bot_turns_with_their_history_and_a_development_set_only() -> None:
    items = load_set("convai2_turn")
    assert {i.score for i in items} == {1.0, 5.0}  # dislike, like
    assert len({i.system for i in items}) == 10 and all(i.system.split("/")[0] in {"intermediate", "volunteers"}
                                                         for i in items)
    first = next(i for i in items if i.item_id == "convai2:intermediate/5:7")
    assert first.response == "good . no , my kids are in elementary school . no band ."
    assert first.score == 1.0 and first.context[0] == "Hi man!" and len(first.context) == 7
    # sparse, self-selected likes: measured, never fitted or chosen by
    assert not SETS["convai2_turn"].for_training and "convai2_turn" not in TRAINING_SETS
    assert set(TRAINING_SETS) == set(SETS) - {"convai2_turn", "topicalchat_turn"}


@pytest.mark.data
def test_topicalchat_turns_are_rated_human_turns_measured_only_and_outside_the_holdout() -> None:
    items = load_set("topicalchat_turn")
    assert {i.score for i in items} == {1.0, 2.0, 3.0, 4.0, 5.0}  # Poor .. Excellent
    assert all(i.system is None and i.conversation.startswith("topicalchat:t_") for i in items)
    first = items[0]
    assert first.item_id.endswith(":1") and len(first.context) == 1  # a turn with no history is not an item
    later = next(i for i in items if i.conversation == first.conversation and len(i.context) == 5)
    assert later.context[0] == first.context[0] and later.context[1] == first.response
    # no training stream reads Topical-Chat: measured only, and not searched for in the corpora
    assert not SETS["topicalchat_turn"].for_training and not SETS["topicalchat_turn"].held_out


def test_unknown_set_and_split_are_refused() -> None:
    with pytest.raises(KeyError):
        load_set("nope")
    with pytest.raises(ValueError):
        load_set("conture", "test")


def test_rescale_maps_the_ends_of_the_source_scale_to_1_and_5() -> None:
    assert rescale(1, 1, 5) == 1.0 and rescale(5, 1, 5) == 5.0 and rescale(3, 1, 5) == 3.0
    assert rescale(0, 0, 2) == 1.0 and rescale(2, 0, 2) == 5.0


def shared_items(a: set, b: set) -> float:
    """The share of the smaller set's items the other holds."""
    return len(a & b) / min(len(a), len(b))


@pytest.mark.data
def test_two_sets_that_share_most_of_their_items_are_declared_aliases() -> None:
    """A mean over the sets counts a set of items once, by the declared aliases alone: a set added as
    another copy of one already there must be declared, and a declared one must be a copy. An item is its
    last context turn and its reply, by the loose key (the copies give the context in another length)."""
    items = {name: {(match_key(i.context[-1]), match_key(i.response)) for i in load_set(name)} for name in SETS}
    shared = {frozenset(pair): shared_items(items[pair[0]], items[pair[1]]) for pair in combinations(SETS, 2)}
    declared = {frozenset(pair) for pair in ALIASES.items()}
    assert {pair for pair, share in shared.items() if share > 0.5} == declared
    assert all(shared[pair] > 0.95 for pair in declared)
    assert max(share for pair, share in shared.items() if pair not in declared) < 0.05


def test_a_mean_counts_an_alias_only_where_the_set_it_copies_is_not_counted() -> None:
    assert ALIASES == {"xdial_dailydialog_gupta": "dailydialog_gupta_multiref", "xdial_conture_turn": "conture"}
    assert len(counted_once(SETS)) == len(SETS) - 2
    assert counted_once(["xdial_dailydialog_gupta", "dstc7", "dailydialog_gupta_multiref"]) == [
        "dstc7", "dailydialog_gupta_multiref"]
    assert counted_once(["xdial_conture_turn", "dstc7", "dstc7"]) == ["xdial_conture_turn", "dstc7"]
