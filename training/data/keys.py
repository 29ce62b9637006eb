"""The loose text key that matches one sentence across the sources' spellings: letters and digits only
(DailyDialog's "don ’ t", holistic_eval's "don't" and xDial's "do n't" are one key)."""
from __future__ import annotations


def match_key(text: str) -> str:
    """Normalised form for matching: lower-case letters and digits only (no spaces, no punctuation)."""
    return "".join(ch for ch in str(text).lower() if ch.isalnum())
