"""Degenerate replies, one of each kind per context (empty, near-empty, repeated, generic, a copy of the
last turn, a reply from another conversation), from phrase lists that training and the check do not share;
and the repetition kinds a cosine with the context rewards (the last turn said two and three times, a
content word of it said five times) and the last turn's words shuffled, which the check adds to those and
the commercial re-rankers' negatives build from DSTC7 train contexts."""
from __future__ import annotations

import random

from service.text import sentences, words

KINDS = ("empty", "near-empty", "repeated", "generic", "copy-last-turn", "other-conversation")
REPETITION_KINDS = ("near-copy-x2", "near-copy-x3", "topic-word")
SHUFFLED_KIND = "shuffled-copy"  # the last turn's words in another order, which a copy counted on bigrams misses
CHECK_KINDS = KINDS + REPETITION_KINDS + (SHUFFLED_KIND,)  # what `python -m training degenerate` measures
TOPIC_WORD_TIMES = 5
# Words too common to be a turn's topic ("food", not "your", in "what's your favourite food?").
FUNCTION_WORDS = frozenset("""
a about after all also am an and any are as at be because been but by can could did do does doing don for
from had has have having he her here hers him his how i if in into is it its just let like me more most my no
nor not now of off on once only or other our out over own same she should so some such than that the their
them then there these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours ll re ve s t d m n
""".split())

# Generic replies for the check set (Li et al. 2016's "i don't know" family) ...
CHECK_GENERIC = ("i don't know.", "i'm not sure.", "ok.", "yes.", "i don't know what you mean.", "that's good.",
                 "me too.", "what?")
CHECK_NEAR_EMPTY = ("...", "?", "hmm", "uh")
# ... and different ones for training negatives.
TRAIN_GENERIC = ("i do not know.", "sure.", "no.", "okay.", "i see.", "thank you.", "really?", "good.",
                 "i have no idea.", "maybe.", "all right.", "yeah.")
TRAIN_NEAR_EMPTY = (".", "!", "oh", "um", "ah", "-")


def repeated(reply: str, times: int = 5) -> str:
    """The first three words of a reply said over and over (a degenerate decoder's loop)."""
    words = reply.split()[:3] or ["yes"]
    return " ".join(words * times)


def content_words(turn: str) -> list[str]:
    """The turn's words that could be its topic: alphabetic, not a function word, in order, each once."""
    found: list[str] = []
    for word in words(turn):
        if word.isalpha() and word not in FUNCTION_WORDS and word not in found:
            found.append(word)
    return found


def topic_word(turn: str, rng: random.Random | None = None) -> str:
    """One content word of the turn said TOPIC_WORD_TIMES times: the longest (the first of the longest) for
    the check, a random one with `rng` (training); the turn's first word where it has no content word."""
    candidates = content_words(turn) or words(turn)[:1] or ["yes"]
    word = rng.choice(candidates) if rng is not None else max(candidates, key=len)
    return " ".join([word] * TOPIC_WORD_TIMES)


def repetition_replies(context: list[str], rng: random.Random | None = None) -> dict[str, str]:
    """The repetition kinds for this context (REPETITION_KINDS), from its last turn: the whole turn said
    again for the check; with `rng` (training), one random sentence of it, so that a long Reddit turn
    gives the short repeated phrase a chat reply would, and a random content word."""
    last = context[-1] if context else ""
    phrase = rng.choice(sentences(last)) if rng is not None else last
    return {"near-copy-x2": " ".join([phrase] * 2), "near-copy-x3": " ".join([phrase] * 3),
            "topic-word": topic_word(last, rng)}


def shuffled_copy(context: list[str], rng: random.Random | None = None) -> str:
    """The last turn's words (as spaces part them) in another order: the whole turn, in an order seeded
    by its own text, for the check (so that it draws nothing from the check's generator and the other
    kinds' cases stay the same); with `rng` (training), one random sentence of it, as the repetition kinds."""
    last = context[-1] if context else ""
    if rng is None:
        tokens = last.split()
        random.Random(last).shuffle(tokens)
    else:
        tokens = rng.choice(sentences(last)).split()
        rng.shuffle(tokens)
    return " ".join(tokens)


def degenerate_replies(context: list[str], human: str, other: str, rng: random.Random,
                       generic: tuple[str, ...] = CHECK_GENERIC,
                       near_empty: tuple[str, ...] = CHECK_NEAR_EMPTY) -> dict[str, str]:
    """One degenerate reply of each kind for this context (`other`: a reply from another conversation)."""
    return {
        "empty": "",
        "near-empty": rng.choice(near_empty),
        "repeated": repeated(human),
        "generic": rng.choice(generic),
        "copy-last-turn": context[-1] if context else "",
        "other-conversation": other,
    }
