"""The signal matrix of a stacked model for rows of (context, reply), from the embedding caches and the
head scores, with the served signals' own functions (service/scorers/unref/signals.py)."""
from __future__ import annotations

import numpy as np

from service.scorers.unref.signals import (CONTEXT_TEXT_SIGNALS, TEXT_SIGNALS, logit, text_signal, turns_of,
                                          vector_signal)
from training.encoders.minilm.embed import EmbeddingCache


def matrix(specs: tuple[dict, ...], caches: dict[str, EmbeddingCache], contexts: list[list[str]], replies: list[str],
           heads: dict[str, dict[str, np.ndarray]]) -> np.ndarray:
    """(rows, signals): `heads` maps a head file to its outputs on these rows (the transform is applied here)."""
    X = np.zeros((len(replies), len(specs)))
    turns = [turns_of(c) for c in contexts]
    for j, spec in enumerate(specs):
        if spec["source"] == "head":
            values = heads[spec["head"]][spec["output"]]
            X[:, j] = logit(values) if spec.get("transform") == "logit" else values
        elif spec["source"] in TEXT_SIGNALS or spec["source"] in CONTEXT_TEXT_SIGNALS:
            X[:, j] = [text_signal(spec, reply, ts) for reply, ts in zip(replies, turns)]
        else:
            cache = caches[spec["encoder"]]
            reply_vectors = cache.get(replies)
            flat = cache.get([t for ts in turns for t in ts])
            starts = np.cumsum([0] + [len(ts) for ts in turns])
            X[:, j] = [vector_signal(spec, reply_vectors[i], flat[starts[i]:starts[i + 1]]) for i in range(len(replies))]
    return X
