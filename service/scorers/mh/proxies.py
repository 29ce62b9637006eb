"""The conversation proxies of Ghandeharioun et al. 2019 (M_H), one number per whole dialogue.

Turns are taken in order. A *pair* is a bot turn with the user turn right before it (the user's
query and the bot's reply); a *transition* is a bot turn with a user turn right before and right
after it. Per-turn or per-pair values are averaged over the conversation; a proxy with nothing to be
computed from (no user turn, no pair) is NaN, which the scorer replaces by the training mean. Each
proxy's definition is beside its name in PROXIES.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from service.scorers.baselines.embedding import average_similarity, cosine, extrema_similarity, greedy_similarity
from service.text import content_words, is_blank, memoised_for_short_texts, word_count, words

# Sentiment reads the user (the paper's -U proxies), with VADER, a lexicon model, for DeepMoji (which
# cannot be installed here); c(u) is VADER's compound score in [-1, 1]. Semantic proxies compare the
# user's query with the bot's reply (-U/B); a pair where one side has no known word is left out.
PROXIES: tuple[str, ...] = (
    "sentiment",  # mean c(u) over user turns
    "sentiment_transition",  # mean over transitions of c(u_after) - c(u_before)
    # (c(u_j) - c(u_i)) / (j - i), i and j the positions among user turns of the lowest and highest
    # sentiment: positive when the user warms up; 0 with fewer than two user turns or a flat sentiment
    "sentiment_minmax",
    "laughter",  # mean over user turns of the "ha"s in laughter words ("hahaha" 3, "hehe" 0, "that" 0)
    "sentiment_coherence",  # mean over pairs of cos of VADER's (neg, neu, pos): the paper's emoji cosine
    "semantic_similarity",  # mean over pairs of the sentence encoder's cosine (MiniLM for InferSent)
    # mean over pairs of the embedding-average, vector-extrema and greedy-matching cosines (Liu et al.
    # 2016) over GloVe 6B 50-d (for word2vec), words only, unknown words skipped
    "average_word_coherence",
    "extrema_word_coherence",
    "greedy_word_coherence",
    "question",  # mean over bot turns of 1 for a "?" or a question word (who what when where why how ...) (-B)
    "words",  # mean over user turns of their words (text.word_count) (-U)
)

USER, BOT = "user", "bot"
VARIANTS: tuple[str, ...] = ("human-bot", "bot-only", "self-play")
QUESTION_WORDS = frozenset({"who", "what", "when", "where", "why", "how", "which", "whose", "whom"})
_LAUGH = re.compile(r"(?:ha)+h?")

# Word vectors of a list of words, (n, d), unknown words dropped (GloveTable.embed).
EmbedWords = Callable[[list[str]], np.ndarray]
# Unit sentence vectors of texts, (n, d) (SentenceEncoder.encode with the request's cache).
EncodeTexts = Callable[[list[str]], np.ndarray]


@lru_cache(maxsize=1)
def _vader() -> SentimentIntensityAnalyzer:
    return SentimentIntensityAnalyzer()


# VADER's time grows with the square of the words it reads (its negation checks re-read the utterance
# for each sentiment word, and an emoji becomes its description, "cat face with tears of joy"), so an
# utterance is read up to this many words, scored exactly as VADER would below it. The longest turn of
# M_H's fitting and transfer data (ConvAI2, iEval, ConTurE) has 100 words, so no fitted figure changes.
MAX_SENTIMENT_WORDS = 128


def _with_emoji_described(text: str, emojis: dict[str, str]) -> str:
    """The text VADER reads: each emoji replaced by its description, as polarity_scores does it."""
    out: list[str] = []
    prev_space = True
    for char in text:
        description = emojis.get(char)
        if description is not None:
            if not prev_space:
                out.append(" ")
            out.append(description)
            prev_space = False
        else:
            out.append(char)
            prev_space = char == " "
    return "".join(out).strip()


@memoised_for_short_texts  # the memo's keys are the texts: long ones are not kept
def vader(text: str) -> tuple[float, float, float, float]:
    """VADER (neg, neu, pos, compound) of one utterance (its first MAX_SENTIMENT_WORDS words)."""
    analyzer = _vader()
    words_read = _with_emoji_described(text, analyzer.emojis).split()
    if len(words_read) > MAX_SENTIMENT_WORDS:
        text = " ".join(words_read[:MAX_SENTIMENT_WORDS])
    s = analyzer.polarity_scores(text)
    return s["neg"], s["neu"], s["pos"], s["compound"]


def laughter_count(text: str) -> int:
    """The number of "ha"s in words made only of them ("haha", "hahah"): the paper's laughter."""
    return sum(w.count("ha") for w in words(text) if _LAUGH.fullmatch(w))


def is_question(text: str) -> bool:
    """A question mark or a question word anywhere in the utterance."""
    return "?" in text or any(w in QUESTION_WORDS for w in words(text))


def minmax_slope(values: Sequence[float]) -> float:
    """Slope from the minimum to the maximum of a sequence, signed by which comes first."""
    if len(values) < 2:
        return 0.0
    low, high = int(np.argmin(values)), int(np.argmax(values))
    if low == high:
        return 0.0
    return float((values[high] - values[low]) / (high - low))


@dataclass(frozen=True)
class Roles:
    """A conversation as the proxies see it: each utterance with the role it plays.

    With `every_role` (the bot's own conversation: self-play and bot-only) every utterance plays
    both roles: it answers the one before and is answered by the one after, so the -U and -B
    proxies read every utterance and the pair proxies every consecutive pair, the paper's -B/B
    ("between consecutive bot utterances")."""

    texts: list[str]
    roles: list[str]  # USER or BOT, same length as texts
    every_role: bool = False

    def of(self, role: str) -> list[str]:
        return list(self.texts) if self.every_role else [t for t, r in zip(self.texts, self.roles) if r == role]

    def _plays(self, i: int, role: str) -> bool:
        return self.every_role or self.roles[i] == role

    def pairs(self) -> list[tuple[str, str]]:
        """(user query, bot reply) for every bot turn right after a user turn."""
        return [(self.texts[i - 1], self.texts[i]) for i in range(1, len(self.texts))
                if self._plays(i, BOT) and self._plays(i - 1, USER)]

    def transitions(self) -> list[tuple[str, str]]:
        """(user before, user after) around every bot turn that has both."""
        return [(self.texts[i - 1], self.texts[i + 1]) for i in range(1, len(self.texts) - 1)
                if self._plays(i, BOT) and self._plays(i - 1, USER) and self._plays(i + 1, USER)]


def assign_roles(speakers: Sequence[str], texts: Sequence[str], variant: str) -> Roles:
    """Roles for a variant of M_H.

    "human-bot": the speakers as given (the setting the regression was fitted in).
    "self-play" (the paper's -B/B): every utterance is the bot's, whatever the speaker labels say,
    and plays both roles (Roles.every_role): the -U proxies read every utterance, question reads
    every utterance, and the -U/B proxies compare every consecutive pair (alternating roles would
    compare half the pairs, and a score would depend on where the same utterances started).
    "bot-only" (the paper's -B): the bot's turns of a human-bot conversation alone, then as
    "self-play"; the user's turns are not read.
    """
    # Turns with no text are dropped and texts stripped, as training read its conversations
    # (training/mh/data.py): an empty turn scored sentiment 0 and matched another empty one exactly.
    # Blank is text.is_blank (invisible characters too); no training conversation holds such a turn.
    spoken = [(s, t.strip()) for s, t in zip(speakers, texts) if not is_blank(t)]
    speakers, texts = [s for s, _ in spoken], [t for _, t in spoken]
    if variant == "human-bot":
        return Roles(list(texts), [USER if s == USER else BOT for s in speakers])
    if variant == "bot-only":
        texts = [t for s, t in zip(speakers, texts) if s == BOT]
        variant = "self-play"
    if variant == "self-play":
        return Roles(list(texts), [BOT] * len(texts), every_role=True)
    raise ValueError(f"unknown M_H variant {variant!r}")


def pair_texts(conversations: Sequence[Roles]) -> list[str]:
    """Every distinct utterance the semantic proxy will encode, to encode them in one batch first.

    The shared encoder's vectors do not depend on the batch beyond float32 rounding (its graph masks
    padding), so priming the request cache with one batched call moves a score by 3e-8 at most.
    """
    return list(dict.fromkeys(text for c in conversations for pair in c.pairs() for text in pair))


def _mean(values: Sequence[float]) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def word_coherences(pairs: list[tuple[str, str]], embed_words: EmbedWords) -> tuple[float, float, float]:
    """Mean average, extrema and greedy word-embedding cosines over the pairs with known words."""
    found: list[tuple[float, float, float]] = []
    for query, reply in pairs:
        a, b = embed_words(content_words(query)), embed_words(content_words(reply))
        if len(a) and len(b):
            found.append((average_similarity(a, b), extrema_similarity(a, b), greedy_similarity(a, b)))
    if not found:
        return float("nan"), float("nan"), float("nan")
    avg, ext, grd = np.mean(np.asarray(found), axis=0)
    return float(avg), float(ext), float(grd)


Sentiment = Callable[[str], tuple[float, float, float, float]]


def compute(conversation: Roles, embed_words: EmbedWords, encode: EncodeTexts,
            sentiment: Sentiment = vader) -> dict[str, float]:
    """Every proxy of one conversation, keyed as in PROXIES (NaN where there is nothing to compute).

    `sentiment`: VADER of one utterance; the scorer passes one memoised for its request, since a
    turn is read up to five times here and `vader`'s own memo keeps short texts only.
    """
    user = conversation.of(USER)
    bot = conversation.of(BOT)
    pairs = conversation.pairs()
    user_sentiment = [sentiment(t)[3] for t in user]

    if pairs:
        queries = encode([q for q, _ in pairs])
        replies = encode([r for _, r in pairs])
        semantic = _mean([float(q @ r) for q, r in zip(queries, replies)])
        sent_coh = _mean([cosine(np.asarray(sentiment(q)[:3]), np.asarray(sentiment(r)[:3])) for q, r in pairs])
    else:
        semantic = sent_coh = float("nan")
    average, extrema, greedy = word_coherences(pairs, embed_words)

    return {
        "sentiment": _mean(user_sentiment),
        "sentiment_transition": _mean([sentiment(after)[3] - sentiment(before)[3]
                                       for before, after in conversation.transitions()]),
        "sentiment_minmax": minmax_slope(user_sentiment) if user else float("nan"),
        "laughter": _mean([laughter_count(t) for t in user]),
        "sentiment_coherence": sent_coh,
        "semantic_similarity": semantic,
        "average_word_coherence": average,
        "extrema_word_coherence": extrema,
        "greedy_word_coherence": greedy,
        "question": _mean([1.0 if is_question(t) else 0.0 for t in bot]),
        "words": _mean([word_count(t) for t in user]),
    }


def vector(values: dict[str, float]) -> np.ndarray:
    """The proxies in PROXIES order, as the regression reads them."""
    return np.array([values[name] for name in PROXIES], dtype=np.float64)
