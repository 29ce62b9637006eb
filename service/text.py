"""Word-level tokenisation shared by the word-overlap and word-embedding metrics, what counts as blank,
and the one spelling (NFC) every scored text is read in.

Uses the `tokenizers` library's BERT normaliser and pre-tokeniser (lower-case, accents kept,
split on whitespace and punctuation) so that the service and training split text identically.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache, wraps
from typing import TypeVar

from tokenizers import normalizers, pre_tokenizers

_NORMALIZER = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                         strip_accents=False, lowercase=True)
_PRE_TOKENIZER = pre_tokenizers.BertPreTokenizer()


# Short texts (greetings, repeated context turns) are memoised across the models of a request and
# across requests; long ones are split each time, so the cache holds at most CACHE_ENTRIES x
# CACHED_CHARS (a 2,000-character CJK text is one token object per character, ~178 KB an entry).
CACHED_CHARS = 256
CACHE_ENTRIES = 4096
T = TypeVar("T")


def _split(text: str) -> tuple[str, ...]:
    normalised = _NORMALIZER.normalize_str(text)
    return tuple(piece for piece, _ in _PRE_TOKENIZER.pre_tokenize_str(normalised))


def memoised_for_short_texts(compute: Callable[[str], T]) -> Callable[[str], T]:
    """`compute` memoised for texts of at most CACHED_CHARS (CACHE_ENTRIES of them), called afresh
    for longer ones; the memo is the wrapper's `short` attribute."""
    short = lru_cache(maxsize=CACHE_ENTRIES)(compute)

    @wraps(compute)
    def call(text: str) -> T:
        return short(text) if len(text) <= CACHED_CHARS else compute(text)

    call.short = short  # type: ignore[attr-defined]
    return call


_words_cached = memoised_for_short_texts(_split)


def words(text: str) -> list[str]:
    """Lower-cased word and punctuation tokens of `text`."""
    return list(_words_cached(text))


def sentences(text: str) -> list[str]:
    """The text's sentences (split after . ! or ? and whitespace), stripped; the text itself where it has one."""
    return [part for part in re.split(r"(?<=[.!?])\s+", text.strip()) if part] or [text]


def match_key(text: str) -> str:
    """Lower-case letters and digits only (no spaces, no punctuation): one key for a sentence under
    every source's spelling (DailyDialog's "don ’ t", holistic_eval's "don't" and xDial's "do n't"),
    where `words` keeps them apart, and under either Unicode spelling of an accent (NFC first). Training
    matches dev text by it; the service, training items."""
    return "".join(ch for ch in canonical(str(text)).lower() if ch.isalnum())


def content_words(text: str) -> list[str]:
    """The lower-cased words of `text` with a letter or digit (punctuation left out)."""
    return [w for w in _words_cached(text) if any(ch.isalnum() for ch in w)]


def word_count(text: str) -> int:
    """Words only (punctuation excluded): the `length` baseline and M_H's length proxy."""
    return len(content_words(text))


def is_blank(text: str) -> bool:
    """Nothing a person could read: only whitespace, invisible format characters (Unicode
    category Cf: zero-width space and joiners, the byte order mark, soft hyphen) and control
    characters (Cc: NUL, BEL, escape). str.strip() keeps both, so a reference of "\u200b" would pass
    as present (ADEM scoring every reply against an empty token list), and one of "\u0000" would
    score a reply of "\u0000" as a perfect match."""
    return all(ch.isspace() or unicodedata.category(ch) in ("Cf", "Cc") for ch in text)


def canonical(text: str) -> str:
    """`text` in Unicode normal form C: canonically equivalent spellings ("é" as one code point, or
    "e" and a combining acute) are one text, so they score alike; tokenizers and vocabularies hold the
    composed form. The check is a fast scan; only text not already in NFC is copied."""
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)
