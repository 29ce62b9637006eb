"""The M_H proxies: each formula on hand-made conversations with known answers."""
from __future__ import annotations

import math

import numpy as np
import pytest

from service.scorers.mh import proxies
from service.scorers.mh.proxies import Roles, assign_roles, compute, is_question, laughter_count, minmax_slope, vader

# A tiny, real embedding table: words map to fixed vectors; unknown words are dropped like GloVe's.
TABLE = {
    "cat": np.array([1.0, 0.0, 0.0]), "dog": np.array([0.9, 0.1, 0.0]), "car": np.array([0.0, 0.0, 1.0]),
    "i": np.array([0.2, 0.2, 0.2]), "like": np.array([0.0, 1.0, 0.0]),
}


def embed_words(words: list[str]) -> np.ndarray:
    rows = [TABLE[w] for w in words if w in TABLE]
    return np.array(rows) if rows else np.zeros((0, 3))


def encode(texts: list[str]) -> np.ndarray:
    """Unit bag-of-letters vectors: deterministic sentence vectors, equal for equal texts."""
    out = np.zeros((len(texts), 26))
    for row, text in enumerate(texts):
        for ch in text.lower():
            if "a" <= ch <= "z":
                out[row, ord(ch) - 97] += 1
        norm = np.linalg.norm(out[row])
        out[row] /= norm if norm else 1.0
    return out


def conversation(*turns: tuple[str, str]) -> Roles:
    return assign_roles([s for s, _ in turns], [t for _, t in turns], "human-bot")


@pytest.mark.parametrize("text, count", [("haha that was good", 2), ("hahaha", 3), ("ha!", 1), ("hahah", 2),
                                         ("that has chat in it", 0), ("hehe", 0), ("Ha ha HA", 3), ("", 0)])
def test_laughter_counts_ha_in_laughter_words_only(text: str, count: int) -> None:
    assert laughter_count(text) == count


@pytest.mark.parametrize("text, expected", [("how are you", True), ("you ok?", True), ("Which one", True),
                                            ("i like cats.", False), ("somehow fine", False)])
def test_question_mark_or_question_word(text: str, expected: bool) -> None:
    assert is_question(text) is expected


def test_minmax_slope_is_signed_by_order() -> None:
    assert minmax_slope([-0.5, 0.0, 0.5]) == pytest.approx(0.5)   # warms up: min at 0, max at 2
    assert minmax_slope([0.5, 0.0, -0.5]) == pytest.approx(-0.5)  # cools down
    assert minmax_slope([0.2, 0.2]) == 0.0
    assert minmax_slope([0.7]) == 0.0


def test_pairs_and_transitions_follow_turn_order() -> None:
    c = conversation(("bot", "hello"), ("user", "u1"), ("bot", "b1"), ("bot", "b2"), ("user", "u2"),
                     ("bot", "b3"), ("user", "u3"))
    assert c.pairs() == [("u1", "b1"), ("u2", "b3")]
    assert c.transitions() == [("u2", "u3")]
    assert c.of("user") == ["u1", "u2", "u3"]


def test_variants_assign_roles() -> None:
    speakers, texts = ["user", "bot", "user", "bot"], ["u1", "b1", "u2", "b2"]
    assert assign_roles(speakers, texts, "human-bot").roles == ["user", "bot", "user", "bot"]
    bot_only = assign_roles(speakers, texts, "bot-only")
    assert bot_only.texts == ["b1", "b2"] and bot_only.pairs() == [("b1", "b2")]
    # The paper's -B/B: between consecutive bot utterances, every one of them (not only the pairs
    # (1st, 2nd), (3rd, 4th), ..., whose scores would move when utterances shifted by one).
    selfplay = assign_roles(["bot"] * 3, ["a", "b", "c"], "self-play")
    assert selfplay.pairs() == [("a", "b"), ("b", "c")] and selfplay.transitions() == [("a", "c")]
    assert selfplay.of("user") == selfplay.of("bot") == ["a", "b", "c"]
    with pytest.raises(ValueError):
        assign_roles(speakers, texts, "nonsense")


def test_sentiment_proxies_read_the_user() -> None:
    happy = conversation(("user", "this is terrible, i hate it"), ("bot", "why?"),
                         ("user", "oh wait, i love it, wonderful!"))
    values = compute(happy, embed_words, encode)
    first, last = vader("this is terrible, i hate it")[3], vader("oh wait, i love it, wonderful!")[3]
    assert first < 0 < last
    assert values["sentiment"] == pytest.approx((first + last) / 2)
    assert values["sentiment_transition"] == pytest.approx(last - first)
    assert values["sentiment_minmax"] == pytest.approx(last - first)  # min at user turn 0, max at turn 1
    assert values["question"] == 1.0
    assert values["words"] == pytest.approx((6 + 6) / 2)


def test_semantic_and_word_coherence_between_query_and_reply() -> None:
    echo = compute(conversation(("user", "i like cat"), ("bot", "i like cat")), embed_words, encode)
    assert echo["semantic_similarity"] == pytest.approx(1.0)
    assert echo["average_word_coherence"] == pytest.approx(1.0)
    assert echo["extrema_word_coherence"] == pytest.approx(1.0)
    assert echo["greedy_word_coherence"] == pytest.approx(1.0)
    assert echo["sentiment_coherence"] == pytest.approx(1.0)
    off = compute(conversation(("user", "cat"), ("bot", "car")), embed_words, encode)
    assert off["average_word_coherence"] == pytest.approx(0.0)
    assert off["semantic_similarity"] < 1.0


def test_missing_proxies_are_nan_not_zero() -> None:
    only_bot = compute(conversation(("bot", "hi there, how are you?")), embed_words, encode)
    for name in ("sentiment", "sentiment_transition", "sentiment_minmax", "laughter", "semantic_similarity",
                 "average_word_coherence", "words"):
        assert math.isnan(only_bot[name]), name
    assert only_bot["question"] == 1.0
    unknown = compute(conversation(("user", "zzz qqq"), ("bot", "xxyy")), embed_words, encode)
    assert math.isnan(unknown["greedy_word_coherence"])  # no known word on either side
    assert not math.isnan(unknown["semantic_similarity"])


def test_vector_follows_proxy_order() -> None:
    values = {name: float(i) for i, name in enumerate(proxies.PROXIES)}
    assert proxies.vector(values).tolist() == list(range(len(proxies.PROXIES)))


def test_vader_is_vaders_own_score_up_to_the_word_cap_and_reads_the_first_words_beyond() -> None:
    analyzer = proxies._vader()
    for text in ("I love this! \U0001F602\U0001F602 great", "no, not good at all :(", "\U0001F600 x \U0001F621", ""):
        own = analyzer.polarity_scores(text)
        assert vader(text) == (own["neg"], own["neu"], own["pos"], own["compound"]), text
    # 2,000 emoji are over 9,000 words once described (a request of such turns took 244 s): the
    # score is that of the first MAX_SENTIMENT_WORDS of them.
    long = "".join(list(analyzer.emojis)[:2000])
    read = proxies._with_emoji_described(long, analyzer.emojis).split()
    assert len(read) > proxies.MAX_SENTIMENT_WORDS
    first = analyzer.polarity_scores(" ".join(read[:proxies.MAX_SENTIMENT_WORDS]))
    assert vader(long) == (first["neg"], first["neu"], first["pos"], first["compound"])


def test_self_play_does_not_depend_on_where_the_same_utterances_start() -> None:
    texts = ["what do you like to eat?", "i like pizza a lot", "how about movies?", "i love action movies",
             "where do you live?", "in paris"]
    swapped = [texts[i ^ 1] for i in range(len(texts))]  # each pair's utterances swapped
    values = [compute(assign_roles(["bot"] * 6, t, "self-play"), embed_words, encode) for t in (texts, swapped)]
    assert [v["question"] for v in values] == [0.5, 0.5]  # three of six ask, in either order (was 0.0 and 1.0)
    for name in ("sentiment", "words", "laughter"):  # read over every utterance: the same set either way
        assert values[0][name] == pytest.approx(values[1][name])


def test_empty_turns_are_left_out_as_training_left_them_out() -> None:
    with_empty = assign_roles(["user", "bot", "user", "bot"], ["hi there ", "", "  ", "hello!"], "human-bot")
    assert with_empty.texts == ["hi there", "hello!"] and with_empty.pairs() == [("hi there", "hello!")]
    assert assign_roles(["user", "bot"], ["", " "], "human-bot").texts == []
    assert assign_roles(["user", "bot", "bot"], ["hi", "\u200b", "yo"], "human-bot").texts == ["hi", "yo"]
