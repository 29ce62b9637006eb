"""(query, reply) pairs from the unlabelled corpora, as GloVe rows, prepared exactly as the service does.

The query and reply texts go through `service.scorers.ruber.glove.query_text` and `word_ids`, so the
trained encoders see the same words, truncation and empty-utterance handling as in serving.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

import torch

from service.components.glove import GloveTable
from service.scorers.ruber.glove import query_text, word_ids


@dataclass
class Pairs:
    """Parallel lists: the query's and the reply's GloVe rows, one entry per consecutive turn pair."""

    queries: list[list[int]]
    replies: list[list[int]]

    def __len__(self) -> int:
        return len(self.queries)


def make_pairs(dialogues: list[list[str]], glove: GloveTable, query_turns: int, max_words: int,
               limit: int | None = None) -> Pairs:
    """Every (context, next turn) of every dialogue; the query is the last `query_turns` turns."""
    queries: list[list[int]] = []
    replies: list[list[int]] = []
    for turns in dialogues:
        for i in range(1, len(turns)):
            reply = word_ids(glove, turns[i], max_words, "first")
            if not reply:
                continue  # a reply with no known word teaches nothing about relatedness
            queries.append(word_ids(glove, query_text(turns[:i], query_turns), max_words, "last"))
            replies.append(reply)
            if limit is not None and len(queries) >= limit:
                return Pairs(queries, replies)
    return Pairs(queries, replies)


def collate(rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded id matrix [N, L] and lengths [N]; an empty row becomes one pad (a zero vector)."""
    lengths = [max(1, len(r)) for r in rows]
    ids = torch.full((len(rows), max(lengths)), pad_id, dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
    return ids, torch.tensor(lengths, dtype=torch.long)


def sample_pairs(pairs, count: int, seed: int):
    """A fixed random subset (validation is evaluated in full each time, so it is kept small)."""
    if len(pairs) <= count:
        return pairs
    index = sorted(random.Random(seed).sample(range(len(pairs)), count))
    pairs.queries = [pairs.queries[i] for i in index]
    pairs.replies = [pairs.replies[i] for i in index]
    return pairs
