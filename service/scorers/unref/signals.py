"""The reference-free signals a stacked model combines, from unit sentence vectors and words.

Training computes them with these same functions (training/unref/signals.py), so a served signal is
the one its weight was fitted on. Contexts are the last MAX_TURNS turns at most; a context with no
turn is read as one empty turn, as the -minilm heads read it (service/scorers/heads.py).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from service.scorers.heads import MAX_TURNS
from service.text import content_words, sentences, word_count

LOGIT_FLOOR = 1e-7  # a sigmoid output is clipped to [floor, 1 - floor] before its logit


def turns_of(context: list[str]) -> list[str]:
    """The context turns the vector signals read, oldest first: the last MAX_TURNS, or one empty turn."""
    return list(context[-MAX_TURNS:]) or [""]


def cos_mean(reply: np.ndarray, turns: np.ndarray, last: int) -> float:
    """cos(reply, the unit mean of the last `last` turn vectors): 1 turn is the cosine with the last turn."""
    mean = turns[-last:].astype(np.float64).mean(axis=0)
    return float(reply.astype(np.float64) @ mean / max(float(np.linalg.norm(mean)), 1e-12))


def copy_excess(reply: np.ndarray, turns: np.ndarray, threshold: float) -> float:
    """max(0, the largest cos(reply, turn) over the turns - threshold): a reply that repeats a turn."""
    return max(0.0, float((turns.astype(np.float64) @ reply.astype(np.float64)).max()) - threshold)


def distinct_ratio(text: str) -> float:
    """Distinct words over words (punctuation left out); 0 for a reply with no word. Low: a loop."""
    tokens = content_words(text)
    return len(set(tokens)) / len(tokens) if tokens else 0.0


TEXT_EDGE = ""  # the token before a text's first word and after its last (copied_bigrams)


def word_bigrams(text: str, edges: bool = False) -> list[tuple[str, str]]:
    """The text's word bigrams, in order, punctuation left out; with `edges`, also (edge, first word) and
    (last word, edge), so that a one-word text has bigrams and a text said twice breaks at the join."""
    tokens = content_words(text)
    if edges and tokens:
        tokens = [TEXT_EDGE, *tokens, TEXT_EDGE]
    return list(zip(tokens, tokens[1:]))


def repeated_bigrams(text: str) -> float:
    """Share of the reply's word bigrams that repeat an earlier bigram of the reply; 0 below two words.
    High: a phrase or a word said over and over, which a cosine with the context rewards."""
    bigrams = word_bigrams(text)
    return 1.0 - len(set(bigrams)) / len(bigrams) if bigrams else 0.0


def copied_bigrams(text: str, turns: list[str]) -> float:
    """The largest, over the turns and each of their sentences, of the smaller of two shares: of the reply's
    word bigrams found in that turn or sentence, and of its bigrams found in the reply (edges included:
    word_bigrams). High only where the reply is mostly one context turn or sentence and says most of it (a
    copy, or one said again and again); a reply that shares a few words with a turn stays low."""
    return _copied(tuple(word_bigrams(text, edges=True)), turns, bigrams=True)


def copied_words(text: str, turns: list[str]) -> float:
    """copied_bigrams on words, not bigrams: blind to word order, so that a turn's words said again in
    another order read as the copy they are."""
    return _copied(tuple(content_words(text)), turns, bigrams=False)


def _copied(units: tuple, turns: list[str], bigrams: bool) -> float:
    if not units:
        return 0.0
    reply = set(units)
    best = 0.0
    for turn in turns:
        for found, inside in _copy_targets(turn, bigrams):
            best = max(best, min(sum(u in inside for u in units) / len(units),
                                 sum(u in reply for u in found) / len(found)))
    return best


@lru_cache(maxsize=4096)
def _copy_targets(turn: str, bigrams: bool) -> tuple[tuple[tuple, frozenset], ...]:
    """The turn and each of its sentences as (its bigrams with edges, or its words; their set): a
    re-ranking's candidates all read the same context turns, so they are split once, not once a candidate."""
    parts = (word_bigrams(part, edges=True) if bigrams else content_words(part)
             for part in dict.fromkeys((turn, *sentences(turn))))
    return tuple((tuple(found), frozenset(found)) for found in parts if found)


def log_length(text: str) -> float:
    """log(1 + the reply's word count)."""
    return float(np.log1p(word_count(text)))


def logit(p: np.ndarray) -> np.ndarray:
    """log(p / (1 - p)) of a sigmoid output, clipped away from 0 and 1 first (float64)."""
    p = np.clip(np.asarray(p, dtype=np.float64), LOGIT_FLOOR, 1.0 - LOGIT_FLOOR)
    return np.log(p) - np.log1p(-p)


# A signal's `source` says what it reads: "head" (a trained graph's output over an encoder's vectors),
# a vector signal (unit vectors of the reply and the context turns) or a text signal (the reply's words).
VECTOR_SIGNALS = ("cos_mean", "copy_excess")
TEXT_SIGNALS = {"distinct_ratio": distinct_ratio, "log_length": log_length, "repeated_bigrams": repeated_bigrams}
# the reply's words against the last `turns` turns'
CONTEXT_TEXT_SIGNALS = {"copied_bigrams": copied_bigrams, "copied_words": copied_words}

TRANSFORMS = ("identity", "logit")


def vector_signal(spec: dict, reply: np.ndarray, turns: np.ndarray) -> float:
    """One vector signal of one item, as its spec in the manifest's config.signals names it."""
    if spec["source"] == "cos_mean":
        return cos_mean(reply, turns, int(spec["turns"]))
    if spec["source"] == "copy_excess":
        return copy_excess(reply, turns[-int(spec["turns"]):], float(spec["threshold"]))
    raise ValueError(f"unknown vector signal {spec['source']!r}")


def text_signal(spec: dict, reply: str, turns: list[str]) -> float:
    """One text signal of one reply (`turns`: its context's, turns_of); with a `threshold` in its spec,
    hinged: max(0, value - threshold)."""
    if spec["source"] in CONTEXT_TEXT_SIGNALS:
        value = CONTEXT_TEXT_SIGNALS[spec["source"]](reply, turns[-int(spec["turns"]):])
    else:
        value = TEXT_SIGNALS[spec["source"]](reply)
    return max(0.0, value - float(spec["threshold"])) if "threshold" in spec else value
