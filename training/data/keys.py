"""The loose text key that matches one sentence across the sources' spellings.

The corpora and judgement sets space and tokenise differently (DailyDialog's "don ’ t",
holistic_eval's "don't", xDial's NLTK-style "do n't"; xDial also drops some symbols, so
DailyDialog's "dial - up", "r & b", "$ 12 , 000" are its "dial up", "r b", "12 , 000"), and only
the letters and digits survive all of them. Reference recovery and the dev hold-out both match
text by this key; the split key (`judgements.normalise`) is stricter and keeps those variants apart.
"""
from __future__ import annotations


def match_key(text: str) -> str:
    """Normalised form for matching: lower-case letters and digits only (no spaces, no punctuation)."""
    return "".join(ch for ch in str(text).lower() if ch.isalnum())
