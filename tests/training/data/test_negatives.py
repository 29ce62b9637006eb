"""Negative samples of commercially usable text: DSTC7 train-partition contexts, a human reference against a copy."""
from __future__ import annotations

import random

import pytest

from service.scorers.heads import MAX_TURNS
from service.text import sentences
from training.data import judgements, negatives


@pytest.mark.data
def test_dstc7_copies_set_a_train_reference_against_a_copy_of_its_own_context() -> None:
    ranked = negatives.dstc7_copies(40, random.Random(0))
    assert 30 <= len(ranked.good) <= 40
    assert len(ranked.contexts) == len(ranked.bad) == len(ranked.references) == len(ranked.good)
    train: dict[tuple[str, ...], set[str]] = {}
    for item in judgements.load_set("dstc7", "train"):
        train.setdefault(tuple(item.context[-MAX_TURNS:]), set()).update(item.references)
    dev = {tuple(i.context[-MAX_TURNS:]) for i in judgements.load_set("dstc7", "dev")}
    for context, good, bad in zip(ranked.contexts, ranked.good, ranked.bad):
        assert 1 <= len(context) <= MAX_TURNS and tuple(context) not in dev
        assert good in train[tuple(context)]  # a human reply to a train-partition context
        assert bad in context and bad != good
    assert negatives.dstc7_copies(40, random.Random(0)) == ranked  # seeded


@pytest.mark.data
def test_dstc7_repetitions_add_each_repetition_kind_of_the_same_train_context() -> None:
    copies = negatives.dstc7_copies(40, random.Random(0))
    ranked = negatives.dstc7_copies(40, random.Random(0), repetitions=True)
    assert set(copies.kinds) == {"copy"} and set(ranked.kinds) == {"copy", "near-copy-x2", "near-copy-x3", "topic-word"}
    assert ranked.kinds.count("copy") == len(copies.good)
    for context, bad, kind in zip(ranked.contexts, ranked.bad, ranked.kinds):
        if kind == "near-copy-x3":
            third = len(bad) // 3
            assert bad[:third].strip() in context[-1]  # one sentence of the last turn, said three times
        if kind == "topic-word":
            word = bad.split()[0]
            assert bad == " ".join([word] * 5) and word in context[-1].lower()


@pytest.mark.data
def test_dstc7_shuffled_copies_add_the_words_of_a_last_turn_sentence_in_another_order() -> None:
    ranked = negatives.dstc7_copies(40, random.Random(0), repetitions=True, shuffled=True)
    shuffled = [(c, b) for c, b, kind in zip(ranked.contexts, ranked.bad, ranked.kinds) if kind == "shuffled-copy"]
    assert len(shuffled) >= 30 and set(ranked.kinds) == {"copy", "near-copy-x2", "near-copy-x3", "topic-word",
                                                         "shuffled-copy"}
    for context, bad in shuffled:
        assert any(sorted(bad.split()) == sorted(s.split()) for s in sentences(context[-1]))


def test_joined_samples_keep_both_parts_and_name_the_unnamed_ones_as_one_kind() -> None:
    samples = negatives.Ranked([["hi"], ["yo"]], ["hello", "hey"], ["", "hi"], ["hello", "hey"])
    copies = negatives.Ranked([["how are you?"]], ["fine"], ["how are you? how are you?"], ["fine"], ["near-copy-x2"])
    joined = samples.joined(copies, "samples")
    assert joined.bad == ["", "hi", "how are you? how are you?"]
    assert joined.contexts == [["hi"], ["yo"], ["how are you?"]] and joined.good == ["hello", "hey", "fine"]
    assert joined.kinds == ["samples", "samples", "near-copy-x2"]
    assert samples.kinds == [] and len(samples.bad) == 2  # neither part changed


@pytest.mark.data
def test_the_cards_count_the_negative_sample_contexts_as_the_code_draws_them() -> None:
    """The shared card phrase names how many contexts negative_samples draws and which file each comes from."""
    from training.core.turn_cards import shared_phrases
    from training.core.turn_training import Config

    config = Config()
    drawn = {tuple(c) for c in negatives.negative_samples(config, random.Random(0), for_ruber=False).contexts}

    def contexts(name: str, limit: int) -> set[tuple[str, ...]]:
        return {tuple(" ".join(t.split()) for t in r["context"])[-MAX_TURNS:]
                for r in negatives.dd_plusplus(name)[:limit]}

    positives = contexts("data_positives.json", negatives.DD_PLUSPLUS_POSITIVE_CONTEXTS)
    adversarial = (contexts("dev.json", negatives.DD_PLUSPLUS_ADVERSARIAL_CONTEXTS)
                   | contexts("test.json", negatives.DD_PLUSPLUS_ADVERSARIAL_CONTEXTS))
    from_positives, from_adversarial = len(drawn & positives), len(drawn & adversarial)
    phrase = shared_phrases()["negative_samples"]
    assert len(drawn) < config.negatives_contexts and f"up to {config.negatives_contexts:,}" in phrase
    assert (f"all {len(drawn):,} there are, {from_positives:,} from DailyDialog++'s data_positives.json, "
            f"{from_adversarial:,} from its dev.json and test.json and "
            f"{len(drawn) - from_positives - from_adversarial:,} from DailyDialog train") in phrase


@pytest.mark.data
def test_the_stacks_cards_count_the_dstc7_degenerate_negatives_as_the_code_draws_them() -> None:
    """dstc7_copies keys DSTC7 train items by conversation; several conversations share one context."""
    from training.unref.card import TEMPLATES

    drawn = negatives.dstc7_copies(10**6, random.Random(0), repetitions=True, shuffled=True)
    conversations = drawn.kinds.count("copy")
    distinct = len({tuple(c) for c in drawn.contexts})
    assert f"{conversations} DSTC7 train conversations, {distinct} distinct contexts" in TEMPLATES.phrase(
        "negatives.shuffled")
