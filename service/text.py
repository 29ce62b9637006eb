"""Word-level tokenisation shared by the word-overlap and word-embedding metrics.

Uses the `tokenizers` library's BERT normaliser and pre-tokeniser (lower-case, accents kept,
split on whitespace and punctuation) so that the service and training split text identically.
"""
from __future__ import annotations

from functools import lru_cache

from tokenizers import normalizers, pre_tokenizers

_NORMALIZER = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                         strip_accents=False, lowercase=True)
_PRE_TOKENIZER = pre_tokenizers.BertPreTokenizer()


@lru_cache(maxsize=65536)
def _words_cached(text: str) -> tuple[str, ...]:
    normalised = _NORMALIZER.normalize_str(text)
    return tuple(piece for piece, _ in _PRE_TOKENIZER.pre_tokenize_str(normalised))


def words(text: str) -> list[str]:
    """Lower-cased word and punctuation tokens of `text`."""
    return list(_words_cached(text))


def word_count(text: str) -> int:
    """Words only (punctuation excluded): the `length` baseline and M_H's length proxy."""
    return sum(1 for w in _words_cached(text) if any(ch.isalnum() for ch in w))
