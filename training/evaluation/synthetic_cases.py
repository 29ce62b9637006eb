"""The synthetic check's cases: from held-aside dialogues, one context a dialogue (its last MAX_TURNS turns),
its true next turn against one negative of each of KINDS. Seeded: the same cases wherever the data is the same.

A case is left out where training holds its query and true reply (held_in.seen_in_training), and, for the
sources in PARTITIONED, where its query is not in the judgement dev partition."""
from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from service.scorers.heads import MAX_TURNS
from training.data.degenerate import CHECK_GENERIC
from training.data.holdout import DevHoldout
from training.data.judgements import query_key, split_of
from training.evaluation.held_in import seen_in_training

KINDS = ("random", "out-of-place", "copy", "generic", "hard")
CONTEXTS = {"dailydialog": 700, "chitchat": 400, "topicalchat": 400}  # at most, per source
PARTITIONED = ("dailydialog",)  # its sentences recur across its splits: dev-partition queries only
SEED = 44
MIN_REPLY_WORDS, MIN_QUERY_WORDS = 4, 3
AHEAD = 2  # an out-of-place turn comes this many turns or more after the query
POOL = 30000  # (turn, next turn) positions a hard negative is looked for among, per source
NEAREST = 50  # the most similar queries tried for a hard negative
TOKEN = re.compile(r"(?u)\b\w\w+\b")
CHUNK = 64  # queries compared with the pool at once


@dataclass(frozen=True)
class Case:
    """A context, its true next turn, and a negative of one kind in its place."""

    source: str
    context: tuple[str, ...]
    true: str
    kind: str
    negative: str


def build(dialogues: Mapping[str, list[list[str]]], held: DevHoldout, seed: int = SEED,
          contexts: Mapping[str, int] = CONTEXTS, partitioned: Sequence[str] = PARTITIONED) -> list[Case]:
    """The cases of every source of `dialogues` (held-aside dialogues by source, two or more each), in
    order; at most `contexts[source]` contexts a source (CONTEXTS' largest for a source it does not name).
    Each source draws from its own seeded generator: what one source keeps moves no other's cases."""
    cases: list[Case] = []
    for source, turns_of in dialogues.items():
        rng = random.Random(f"{seed}/{source}")
        limit = contexts.get(source, max(CONTEXTS.values()))
        chosen = _contexts(turns_of, held, rng, limit, source in partitioned)
        pool = [(d, j) for d, turns in enumerate(turns_of) for j in range(1, len(turns))]
        pool = rng.sample(pool, min(len(pool), POOL))
        hard = _hard(turns_of, pool, chosen)
        for (d, i, context), nearest in zip(chosen, hard):
            turns = turns_of[d]
            while (other := rng.randrange(len(turns_of))) == d:
                pass
            negatives = {"random": rng.choice(turns_of[other]),
                         "out-of-place": turns[rng.choice(range(i + AHEAD, len(turns)))],
                         "copy": rng.choice(context), "generic": rng.choice(CHECK_GENERIC), "hard": nearest}
            cases += [Case(source, tuple(context), turns[i], kind, negative) for kind, negative in negatives.items()
                      if negative is not None and negative != turns[i]]
    return cases


def _contexts(dialogues: list[list[str]], held: DevHoldout, rng: random.Random, limit: int, partitioned: bool,
              ) -> list[tuple[int, int, list[str]]]:
    """(dialogue, position of the true turn, context) of at most `limit` dialogues, in a seeded order."""
    order = list(range(len(dialogues)))
    rng.shuffle(order)
    chosen = []
    for d in order:
        turns = dialogues[d]
        positions = [i for i in range(1, len(turns) - AHEAD) if len(turns[i].split()) >= MIN_REPLY_WORDS
                     and len(turns[i - 1].split()) >= MIN_QUERY_WORDS]
        if not positions:
            continue
        i = rng.choice(positions)
        context = turns[max(0, i - MAX_TURNS):i]
        if partitioned and split_of(query_key(context)) != "dev":
            continue
        if seen_in_training(held, context, [turns[i]]):
            continue
        chosen.append((d, i, context))
        if len(chosen) >= limit:
            break
    return chosen


def _hard(dialogues: list[list[str]], pool: list[tuple[int, int]], chosen: list[tuple[int, int, list[str]]],
          ) -> list[str | None]:
    """For each chosen context, the next turn of another dialogue whose turn before it is the most like its
    query by TF-IDF cosine (words, not an encoder, choose it), and not its true turn; None where no pool
    query shares a word with it."""
    vectors = _TfIdf([dialogues[d][j - 1] for d, j in pool])
    queries = vectors.transform([context[-1] for _, _, context in chosen])
    keys = vectors.transform([dialogues[d][j - 1] for d, j in pool]).T.tocsc()
    found: list[str | None] = []
    for start in range(0, len(chosen), CHUNK):
        similar = (queries[start:start + CHUNK] @ keys).toarray()
        for row, (d, i, _) in zip(similar, chosen[start:start + CHUNK]):
            found.append(next((dialogues[d2][j2] for d2, j2 in (pool[k] for k in _nearest(row))
                               if d2 != d and dialogues[d2][j2] != dialogues[d][i]), None))
    return found


def _nearest(similar: np.ndarray) -> np.ndarray:
    """The NEAREST most similar positions with a word in common, most similar first (ties in pool order)."""
    order = np.argsort(-similar, kind="stable")[:NEAREST]
    return order[similar[order] > 0]


class _TfIdf:
    """TF-IDF of words of two letters or more: the words in two texts or more of those it is fitted on,
    idf ln((1 + n) / (1 + df)) + 1, tf 1 + ln(count), rows of unit length."""

    def __init__(self, texts: list[str]) -> None:
        documents = [set(TOKEN.findall(text.lower())) for text in texts]
        df: dict[str, int] = {}
        for words in documents:
            for word in words:
                df[word] = df.get(word, 0) + 1
        self.index = {word: k for k, word in enumerate(sorted(w for w, n in df.items() if n >= 2))}
        counts = np.array([df[word] for word in self.index], float)
        self.idf = np.log((1 + len(texts)) / (1 + counts)) + 1

    def transform(self, texts: list[str]) -> sparse.csr_matrix:
        rows, columns, values = [], [], []
        for row, text in enumerate(texts):
            words, count = np.unique([w for w in TOKEN.findall(text.lower()) if w in self.index], return_counts=True)
            rows += [row] * len(words)
            columns += [self.index[w] for w in words]
            values += list((1 + np.log(count)) * self.idf[[self.index[w] for w in words]])
        matrix = sparse.csr_matrix((values, (rows, columns)), shape=(len(texts), len(self.index)))
        norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1))).ravel()
        return sparse.diags(1 / np.where(norms > 0, norms, 1)) @ matrix
