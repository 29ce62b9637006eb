"""service.text: the word split the overlap and embedding metrics share, and its memo's bound."""
from __future__ import annotations

from service.scorers.mh import proxies
from service import text


def test_words_are_lower_cased_and_split_on_punctuation() -> None:
    assert text.words("Hi, THERE!") == ["hi", ",", "there", "!"]
    assert text.word_count("Hi, THERE!") == 2


def test_the_match_key_is_one_for_every_spelling_of_a_sentence() -> None:
    spellings = ["I didn't do it, it's late.", "i did n't do it , it 's late .", "I didn ’ t do it , it ’ s late ."]
    assert {text.match_key(s) for s in spellings} == {"ididntdoititslate"}
    assert text.match_key("?!") == ""


def test_long_texts_never_enter_the_process_wide_memos() -> None:
    """Distinct 2,000-character CJK texts grew a worker by 27 MB per request."""
    text._words_cached.short.cache_clear()
    proxies.vader.short.cache_clear()
    for i in range(50):
        long = f"{i} " + "字" * 1990
        assert len(text.words(long)) == 1991
        proxies.vader(long)
    assert text._words_cached.short.cache_info().currsize == 0
    assert proxies.vader.short.cache_info().currsize == 0
    text.words("short and memoised")
    proxies.vader("short and memoised")
    assert text._words_cached.short.cache_info().currsize == 1 and proxies.vader.short.cache_info().currsize == 1
    assert text._words_cached.short.cache_info().maxsize == text.CACHE_ENTRIES
    assert tuple(text.words("x" * (text.CACHED_CHARS + 1))) == text._split("x" * (text.CACHED_CHARS + 1))


def test_blank_means_nothing_visible_not_only_whitespace() -> None:
    for blank in ("", " \t\n", "\u3000", "\u200b", "\ufeff", "\u200c\u200d\u2060", "\u00ad ",
                  "\u0000", "\u0007\u001b ", "\u007f"):  # control characters too ("\u0000" matched itself)
        assert text.is_blank(blank), repr(blank)
    for visible in ("a", "\u200bhi", "😀", "\u0301", "字", "."):  # a lone combining mark is visible
        assert not text.is_blank(visible), repr(visible)


def test_canonical_is_nfc_and_keeps_text_already_in_it() -> None:
    import unicodedata

    from service.text import canonical

    composed = "crème brûlée at the café in zürich"
    assert canonical(unicodedata.normalize("NFD", composed)) == composed
    assert canonical(composed) is composed
    assert canonical("\u212b") == "\u00c5"  # the angstrom sign is canonically the letter


def test_the_match_key_is_one_for_either_spelling_of_an_accent() -> None:
    """A training item sent in NFD is still found: the combining accent, not a letter, was dropped."""
    import unicodedata

    from service.text import match_key

    text = "we had crème brûlée at the café."
    assert match_key(unicodedata.normalize("NFD", text)) == match_key(text) == "wehadcrèmebrûléeatthecafé"


def test_sentences_split_after_end_punctuation_and_whitespace() -> None:
    assert text.sentences("I moved. The winters are long! Why? ") == ["I moved.", "The winters are long!", "Why?"]
    assert text.sentences("yes , i do . do you ?") == ["yes , i do .", "do you ?"]  # DailyDialog's spacing
    assert text.sentences("3.5 stars") == ["3.5 stars"] and text.sentences("") == [""]
