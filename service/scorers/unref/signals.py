"""The reference-free signals a stacked model combines, from unit sentence vectors and words.

Training computes them with these same functions (training/unref/signals.py), so a served signal is
the one its weight was fitted on. Contexts are the last MAX_TURNS turns at most; a context with no
turn is read as one empty turn, as the -minilm heads read it (service/scorers/heads.py).
"""
from __future__ import annotations

import numpy as np

from service.scorers.heads import MAX_TURNS
from service.text import word_count, words

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
    tokens = [w for w in words(text) if any(ch.isalnum() for ch in w)]
    return len(set(tokens)) / len(tokens) if tokens else 0.0


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
TEXT_SIGNALS = {"distinct_ratio": distinct_ratio, "log_length": log_length}
TRANSFORMS = ("identity", "logit")


def vector_signal(spec: dict, reply: np.ndarray, turns: np.ndarray) -> float:
    """One vector signal of one item, as its spec in the manifest's config.signals names it."""
    if spec["source"] == "cos_mean":
        return cos_mean(reply, turns, int(spec["turns"]))
    if spec["source"] == "copy_excess":
        return copy_excess(reply, turns[-int(spec["turns"]):], float(spec["threshold"]))
    raise ValueError(f"unknown vector signal {spec['source']!r}")


def text_signal(spec: dict, reply: str) -> float:
    return TEXT_SIGNALS[spec["source"]](reply)
