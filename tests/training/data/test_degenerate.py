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


def test_repetition_kinds_repeat_the_last_turn_and_its_longest_content_word() -> None:
    replies = degenerate.repetition_replies(["hi there", "what's your favourite food?"])
    assert set(replies) == set(degenerate.REPETITION_KINDS)
    assert replies["near-copy-x2"] == "what's your favourite food? what's your favourite food?"
    assert replies["near-copy-x3"] == " ".join(["what's your favourite food?"] * 3)
    assert replies["topic-word"] == "favourite favourite favourite favourite favourite"
    assert degenerate.topic_word("how was your weekend?") == " ".join(["weekend"] * 5)
    assert degenerate.topic_word("is it?") == " ".join(["is"] * 5)  # no content word: the first word


def test_training_repetitions_repeat_one_sentence_and_a_random_content_word() -> None:
    turn = "I moved to Berlin last year. The winters are long and grey!"
    replies = degenerate.repetition_replies(["hello", turn], random.Random(3))
    sentence = replies["near-copy-x2"][:len(replies["near-copy-x2"]) // 2].strip()
    assert sentence in degenerate.sentences(turn) and replies["near-copy-x3"] == " ".join([sentence] * 3)
    word = replies["topic-word"].split()[0]
    assert replies["topic-word"] == " ".join([word] * 5) and word in degenerate.content_words(turn)
    assert degenerate.sentences(turn) == ["I moved to Berlin last year.", "The winters are long and grey!"]


def test_a_shuffled_copy_says_the_last_turns_words_in_an_order_its_text_seeds() -> None:
    context = ["hi there", "oh nice, what breed is it?"]
    shuffled = degenerate.shuffled_copy(context)
    assert sorted(shuffled.split()) == sorted(context[-1].split()) and shuffled != context[-1]
    assert degenerate.shuffled_copy(list(context)) == shuffled  # the check's: the same every run, no draw
    assert degenerate.shuffled_copy([]) == "" and degenerate.SHUFFLED_KIND in degenerate.CHECK_KINDS


def test_a_training_shuffled_copy_reorders_one_sentence_of_the_last_turn() -> None:
    turn = "I moved to Berlin last year. The winters are long and grey!"
    shuffled = degenerate.shuffled_copy(["hello", turn], random.Random(3))
    assert any(sorted(shuffled.split()) == sorted(s.split()) for s in degenerate.sentences(turn))
