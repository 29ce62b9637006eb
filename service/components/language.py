"""What a reply is written in, as far as the models can read it: English, another language, or no words.

Two tests, the surer first. A script test: where most letters belong to a script English is not written in
(Cyrillic, Han, Arabic...), the text is not English, however short ("прекрасно!"). Otherwise py3langid
(langid.py's model, shipped in its wheel, BSD-3-Clause) names a language with a length-calibrated
confidence; only a confident non-English answer counts, because short English replies ("ok.", "Sure.",
"no way!") get near-uniform, often non-English guesses. docs/api.md gives how the default confidence
was chosen on real English turns.
"""
from __future__ import annotations

import io
import logging
import lzma
import threading
import unicodedata
from array import array
from dataclasses import dataclass
from typing import Any

import numpy as np

from service.text import is_blank, memoised_for_short_texts

log = logging.getLogger(__name__)

# The Unicode name's first word of a letter -> the script it is written in, for scripts English never uses.
_FOREIGN_SCRIPTS = {"CYRILLIC": "Cyrillic", "CJK": "Han", "HIRAGANA": "Japanese", "KATAKANA": "Japanese",
                    "HANGUL": "Korean", "ARABIC": "Arabic", "HEBREW": "Hebrew", "GREEK": "Greek",
                    "DEVANAGARI": "Devanagari", "THAI": "Thai", "BENGALI": "Bengali", "TAMIL": "Tamil",
                    "GEORGIAN": "Georgian", "ARMENIAN": "Armenian", "ETHIOPIC": "Ethiopic"}


@dataclass(frozen=True)
class Reading:
    """What a text is, for the models: `english` (nothing says otherwise: short foreign replies in the Latin
    script often read so), `not_english` (with the language or script, and how it was found), `no_words`
    (no letter or digit: emoji, punctuation) or `empty` (blank)."""

    code: str
    language: str = ""
    how: str = ""


def foreign_script(text: str) -> str | None:
    """The script most of the text's letters are in, where that is one English is not written in."""
    if text.isascii():
        return None
    counts: dict[str, int] = {}
    letters = 0
    for ch in text:
        if not ch.isalpha():
            continue
        letters += 1
        name = unicodedata.name(ch, "")
        script = _FOREIGN_SCRIPTS.get(name.split(" ", 1)[0])
        if script is not None:
            counts[script] = counts.get(script, 0) + 1
    if not counts:
        return None
    script, count = max(counts.items(), key=lambda kv: kv[1])
    return script if 2 * count > letters else None


class _Identifier:
    """py3langid's identifier, loaded once per process (its model is decompressed at load)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._identifier: Any = None
        self._failed = False

    def get(self) -> Any:
        with self._lock:
            if self._identifier is None and not self._failed:
                try:
                    self._identifier = _load_in_memory()
                except Exception:  # noqa: BLE001 - without it the script test still warns
                    log.exception("the language identifier did not load; only the script test warns")
                    self._failed = True
            return self._identifier


IDENTIFIER = _Identifier()


def _load_in_memory() -> Any:
    """py3langid's identifier with its model decompressed in memory. Its own loader writes the 65 MB
    decompressed model to a temporary file first, which a pod's /tmp (a 64 MiB emptyDir, shared by the
    workers) cannot hold; the arrays are the ones that loader gives (py3langid.modelio.load_model)."""
    from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

    with lzma.open(MODEL_DIR / MODEL_FILE) as packed, np.load(io.BytesIO(packed.read()), allow_pickle=False) as data:
        def flat(name: str) -> array:
            values = np.ascontiguousarray(data[name])
            out = array({2: "H", 4: "I", 8: "L"}[values.dtype.itemsize])
            out.frombytes(memoryview(values).cast("B"))
            return out

        return LanguageIdentifier(np.asarray(data["ptc"]), np.asarray(data["pc"]), data["classes"].tolist(),
                                  flat("nextmove"), data["out_feat"].tolist(), norm_probs=True,
                                  tk_row=flat("nextmove_row"))


@memoised_for_short_texts
def _identified(text: str) -> tuple[str, float] | None:
    """The identifier's language and confidence for `text` (None without an identifier); a bot's generic
    candidates recur across requests, so short texts are looked up once."""
    identifier = IDENTIFIER.get()
    if identifier is None:
        return None
    language, probability = identifier.classify(text)
    return str(language), float(probability)


def preload() -> None:
    """Load the identifier now (the model store's loading thread), not in a request."""
    IDENTIFIER.get()


def read(text: str, confidence: float) -> Reading:
    """What `text` is; a language the identifier names at `confidence` or more counts as not English."""
    if is_blank(text):
        return Reading("empty")
    if not any(ch.isalnum() for ch in text):
        return Reading("no_words")
    script = foreign_script(text)
    if script is not None:
        return Reading("not_english", script, "script")
    identified = _identified(text)
    if identified is None:
        return Reading("english")
    language, probability = identified
    if language != "en" and probability >= confidence:
        return Reading("not_english", language, f"language identifier, confidence {probability:.2f}")
    return Reading("english")
