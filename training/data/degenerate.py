"""Degenerate replies, one of each kind per context (empty, near-empty, repeated, generic, a copy of the
last turn, a reply from another conversation), from phrase lists that training and the check do not share."""
from __future__ import annotations

import random

KINDS = ("empty", "near-empty", "repeated", "generic", "copy-last-turn", "other-conversation")

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
