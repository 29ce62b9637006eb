"""Next-turn pre-training of the context-reply bilinear form c^T M r on unrated dialogue (in-batch
softmax over the DailyDialog and Chit-Chat train splits); the ratings fit then starts from this M and is
pulled towards it."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

from training.data.negatives import NEXT_TURN_SOURCES as SOURCES
from training.data.negatives import corpus_pairs


class VectorCache(Protocol):
    """What the heads on turn vectors read of an embedding cache (training.encoders.minilm.embed.EmbeddingCache)."""

    folder: Path
    dim: int

    def add(self, texts: list[str], chunk: int = 2048, log: bool | None = None) -> None: ...

    def get(self, texts: list[str]) -> np.ndarray: ...


# The heads whose M scores a reply against its context (ADEM: c^T M r_hat; AutoJudge: c^T M r;
# RUBER: the quadratic feature of its unreferenced part, which then learns by negative sampling).
NEXT_TURN_MODELS = ("adem-minilm", "autojudge-minilm", "ruber-minilm")


@dataclass(frozen=True)
class NextTurnConfig:
    # The bare c^T M r's dev Pearson on the DailyDialog sets peaks at 4-6 epochs; on dstc7 (Reddit)
    # it falls from the first epoch on, which the ratings fit then makes up for.
    epochs: int = 5
    batch: int = 512  # in-batch negatives per pair
    lr: float = 1e-3
    max_pairs: int | None = None  # tests: a handful
    sources: tuple[str, ...] = SOURCES


# One pre-training per (cache, settings, seed) in a process: `train-minilm --search` trains a head
# for every context encoding, and each starts from the same M.
_TRAINED: dict[tuple[str, NextTurnConfig, int], torch.Tensor] = {}


def pretrain_bilinear(cache: VectorCache, config: NextTurnConfig, seed: int = 0,
                      log: Callable[[str], Any] = print) -> torch.Tensor:
    """M (dim x dim, the cache's vectors' width), started at the identity, trained to pick each context's own
    next turn."""
    key = (str(cache.folder), config, seed)
    if key not in _TRAINED:
        _TRAINED[key] = _pretrain(cache, config, seed, log)
    return _TRAINED[key].clone()


def _pretrain(cache: VectorCache, config: NextTurnConfig, seed: int, log) -> torch.Tensor:
    queries, replies = corpus_pairs(config.sources, config.max_pairs)
    # Large chunks: the cache rewrites its whole file after each one (~180k texts on a first run).
    cache.add(queries + replies, chunk=8192, log=len(queries) > 10_000)
    contexts = torch.from_numpy(cache.get(queries))
    answers = torch.from_numpy(cache.get(replies))
    matrix = torch.nn.Parameter(torch.eye(contexts.shape[1]))
    log_scale = torch.nn.Parameter(torch.tensor(3.0))  # a learned temperature, e^3 = 20 to start
    optimiser = torch.optim.Adam([matrix, log_scale], lr=config.lr)
    generator = torch.Generator().manual_seed(seed)
    batch = max(2, min(config.batch, len(queries)))
    steps = max(1, len(queries) // batch)
    started = time.time()
    for epoch in range(config.epochs):
        order = torch.randperm(len(queries), generator=generator)
        total = 0.0
        for step in range(steps):
            index = order[step * batch:(step + 1) * batch]
            logits = log_scale.exp() * (contexts[index] @ matrix) @ answers[index].T
            target = torch.arange(len(index))
            loss = (torch.nn.functional.cross_entropy(logits, target)
                    + torch.nn.functional.cross_entropy(logits.T, target)) / 2
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += loss.item()
        log(f"next-turn pre-training of M: {len(queries)} pairs, epoch {epoch + 1}/{config.epochs} "
            f"loss {total / steps:.4f} (chance {np.log(batch):.2f}; {time.time() - started:.0f} s)")
    return matrix.detach().clone()
