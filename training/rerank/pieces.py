"""How a (context, reply) pair becomes the cross-encoder's input, from the packed word-piece ids of its texts.

Only numpy: the device imports this module with nothing of the service. The layout is BERT's pair form,
[CLS] context [SEP] reply [SEP], context turns oldest first joined by [SEP], token type 1 on the reply;
the reply keeps its start and the context its end when the pair is cut to `max_length`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CLS, SEP, PAD = 101, 102, 0  # all-MiniLM-L6-v2's tokenizer.json (checked when packing)


@dataclass(frozen=True)
class Texts:
    """Distinct texts' word-piece ids (no special tokens), flat, text i at ids[offsets[i]:offsets[i + 1]]."""

    ids: np.ndarray  # uint16: the vocabulary has 30,522 pieces
    offsets: np.ndarray  # int64, one more than the texts

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def get(self, index: int) -> np.ndarray:
        return self.ids[self.offsets[index]:self.offsets[index + 1]]


def pair_ids(texts: Texts, context: np.ndarray, reply: int, max_length: int, max_reply: int,
             ) -> tuple[np.ndarray, np.ndarray]:
    """(ids, token types) of one pair; `context` holds text indices, -1 where a slot is empty."""
    answer = texts.get(reply)[:max_reply]
    turns = [texts.get(int(t)) for t in context if t >= 0]
    joined: list[np.ndarray] = []
    for i, turn in enumerate(turns):
        joined.append(turn)
        if i < len(turns) - 1:
            joined.append(np.array([SEP], np.uint16))
    flat = np.concatenate(joined) if joined else np.zeros(0, np.uint16)
    room = max(0, max_length - 3 - len(answer))
    flat = flat[len(flat) - room:] if room else flat[:0]
    ids = np.concatenate([[CLS], flat, [SEP], answer, [SEP]]).astype(np.int64)
    types = np.zeros(len(ids), np.int64)
    types[len(flat) + 2:] = 1
    return ids, types


def batch(texts: Texts, contexts: np.ndarray, replies: np.ndarray, max_length: int, max_reply: int,
          ) -> dict[str, np.ndarray]:
    """Padded input_ids, attention_mask and token_type_ids of rows (contexts[i], replies[i])."""
    pairs = [pair_ids(texts, c, int(r), max_length, max_reply) for c, r in zip(contexts, replies)]
    width = max(len(ids) for ids, _ in pairs)
    out = {"input_ids": np.full((len(pairs), width), PAD, np.int64),
           "attention_mask": np.zeros((len(pairs), width), np.int64),
           "token_type_ids": np.zeros((len(pairs), width), np.int64)}
    for i, (ids, types) in enumerate(pairs):
        out["input_ids"][i, :len(ids)] = ids
        out["attention_mask"][i, :len(ids)] = 1
        out["token_type_ids"][i, :len(ids)] = types
    return out
