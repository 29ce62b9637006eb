"""How a head on turn vectors is trained: its configuration, the loop over cached sentence vectors, and the
tensors the loop and every measurement feed it (Batchify, predict)."""
from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from service.scorers.heads import context_texts
from training.core.next_turn import SOURCES as NEXT_TURN_SOURCES
from training.core.next_turn import NextTurnConfig, VectorCache, pretrain_bilinear
from training.data.negatives import judged_rows, negative_samples


@dataclass
class Config:
    model: str = "autojudge-minilm"
    encoding: str = "last"  # how a context becomes text: last | joinedK | turns
    pooling: str = "last"  # how the head pools context vectors: last | gru | attn
    epochs: int = 12
    batch: int = 256
    lr: float = 1e-3
    l1: float = 10.0  # weight of the pull of M (and N) towards the identity (or M's next-turn start)
    rank_weight: float = 0.3  # weight of the negative-sample margin term (heads that learn from ratings)
    margin: float = 1.0  # margin in score units (1-5 scale); ruber's s_unref uses 0.5
    negatives_contexts: int = 3000  # DailyDialog++ contexts sampled for negative samples
    ruber_degenerate: float = 1.0  # ruber: share of pairs that also get a degenerate negative
    ruber_pairs: int = 40000  # positive pairs for ruber's negative sampling
    max_judged: int | None = None  # judged train items per set (None: all; tests use a handful)
    reddit_positives: bool = False  # ruber: DSTC7 train contexts' human replies as extra positives
    zscore: bool = False  # per-set standardised targets (the served heads use the raw 1-5 scores)
    balance: bool = False  # items drawn evenly from the sets (set with zscore)
    # adem-, autojudge- and ruber-minilm (their context-reply M): epochs of next-turn pre-training of M on
    # DailyDialog + Chit-Chat train (training/core/next_turn.py) before the head's own training;
    # 0 starts M at the identity.
    next_turn_epochs: int = 5
    next_turn_max_pairs: int | None = None  # tests: a handful of pairs
    next_turn_sources: tuple[str, ...] = NEXT_TURN_SOURCES  # negatives.NEGATIVE_SAMPLING for a slow encoder's heads
    left_out: tuple[str, ...] = ()  # judged sets left out of the ratings fit (training/unref: out-of-fold heads)
    seed: int = 0
    recover_references: bool = True  # dev figures on the DailyDialog-based sets too, as `evaluate` measures
    blend: str = "arithmetic"  # ruber: served default blend, set by evaluate_dev to the best on dev data
    blend_dev: dict | None = None  # ruber: dev Pearson of every blend (filled by evaluate_dev)


def fit(head: torch.nn.Module, config: Config, cache: VectorCache, log: Callable[[str], Any] = print) -> torch.nn.Module:
    """Train `head` (made right after torch.manual_seed(config.seed)) on the cache's vectors; returns it in eval mode.

    A head that learns from ratings fits the judged train partitions (squared error) plus the margin term on
    negative samples; one that does not (RUBER's s_U) learns by the margin term on its negative samples alone.
    M starts from next-turn pre-training unless `next_turn_epochs` is 0; the l1 term pulls it there."""
    rng = random.Random(config.seed)
    referenced = head.referenced
    is_ruber = not head.learns_from_ratings
    batchify = Batchify(cache, config.encoding)
    if config.next_turn_epochs > 0:
        head.start_from(pretrain_bilinear(cache, NextTurnConfig(epochs=config.next_turn_epochs,
                                                                max_pairs=config.next_turn_max_pairs,
                                                                sources=tuple(config.next_turn_sources)),
                                          seed=config.seed, log=log))
    ranked = negative_samples(config, rng, for_ruber=is_ruber)
    # The margin terms never read a reference (RUBER's ranks s_unref only): not embedded, not batched.
    ranks_with_reference = referenced and not is_ruber
    cache.add(ranked.bad + ranked.good + (ranked.references if ranks_with_reference else []))
    regression = [] if is_ruber else [rows for name, rows in judged_rows("train", referenced, config.max_judged).items()
                                      if name not in config.left_out]
    reg_contexts = [c for rows in regression for c in rows[0]]
    reg_responses = [r for rows in regression for r in rows[1]]
    reg_references = [r for rows in regression for r in rows[2]] if referenced and regression else None
    reg_scores = np.concatenate([rows[3] for rows in regression]) if regression else np.zeros(0, np.float32)
    raw_scores = reg_scores.copy()
    if config.zscore and regression:
        reg_scores = np.concatenate([(r[3] - r[3].mean()) / (r[3].std() + 1e-6) for r in regression]).astype(np.float32)
    if config.zscore and regression:
        # z-scored targets centre on 0: alpha starts there, or the fit pushes c^T M r down to meet them and M
        # loses the cosine's ranking (docs/notes/2026-11-27-training-layout.md)
        head.alpha.data.zero_()
    weights = None
    if config.balance and regression:
        weights = np.concatenate([np.full(len(r[3]), 1.0 / len(r[3])) for r in regression])
        weights /= weights.sum()
    optimiser = torch.optim.Adam(head.parameters(), lr=config.lr)
    margin = 0.5 if is_ruber else config.margin
    n_rank, n_reg = len(ranked.good), len(reg_scores)
    steps = max(1, max(n_rank, n_reg) // config.batch)
    started = time.time()
    for epoch in range(config.epochs):
        rank_order = np.random.default_rng(config.seed + epoch).permutation(n_rank)
        reg_rng = np.random.default_rng(config.seed + 100 + epoch)
        reg_order = (reg_rng.choice(n_reg, size=n_reg, p=weights) if weights is not None
                     else reg_rng.permutation(n_reg)) if n_reg else None
        total = 0.0
        head.train()
        for step in range(steps):
            loss = config.l1 * head.regulariser()
            idx = rank_order[(step * config.batch) % n_rank:][: config.batch]
            ctx = [ranked.contexts[i] for i in idx]
            refs = [ranked.references[i] for i in idx] if ranks_with_reference else None
            good = batchify(ctx, [ranked.good[i] for i in idx], refs)
            bad = batchify(ctx, [ranked.bad[i] for i in idx], refs)
            if is_ruber:
                s_good = head.unreferenced(*good[:3])
                s_bad = head.unreferenced(*bad[:3])
                loss = loss + torch.relu(margin - (s_good - s_bad)).mean()
            else:
                s_good, s_bad = head(*good)["score"], head(*bad)["score"]
                loss = loss + config.rank_weight * torch.relu(margin - (s_good - s_bad)).mean()
                ridx = reg_order[(step * config.batch) % n_reg:][: config.batch]
                tensors = batchify([reg_contexts[i] for i in ridx], [reg_responses[i] for i in ridx],
                                   [reg_references[i] for i in ridx] if reg_references else None)
                predicted = head(*tensors)["score"]
                loss = loss + ((predicted - torch.from_numpy(reg_scores[ridx])) ** 2).mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += loss.item()
        log(f"{config.model} {config.encoding}/{config.pooling} epoch {epoch + 1}/{config.epochs} "
            f"loss {total / steps:.4f} ({time.time() - started:.0f} s)")
    head.eval()
    if config.zscore and regression:
        calibrate(head, batchify, reg_contexts, reg_responses, reg_references, raw_scores)
    return head


def calibrate(head: torch.nn.Module, batchify: "Batchify", contexts: list[list[str]], responses: list[str],
              references: list[str] | None, scores: np.ndarray) -> None:
    """Map the z-score-trained output back to the 1-5 scale: least-squares alpha, beta (ranking unchanged)."""
    with torch.no_grad():
        predicted = []
        for start in range(0, len(responses), 512):
            sl = slice(start, start + 512)
            predicted.append(head(*batchify(contexts[sl], responses[sl], references[sl] if references else None))
                             ["score"].numpy())
        z = np.concatenate(predicted)
        slope, intercept = np.polyfit(z, scores, 1)
        slope = max(float(slope), 1e-3)  # keep the order the model learned
        head.beta.mul_(slope)
        head.alpha.mul_(slope).add_(float(intercept))



class Batchify:
    """Turns (context, response, reference) texts into padded tensors from the cache."""

    def __init__(self, cache: VectorCache, encoding: str) -> None:
        self.cache = cache
        self.encoding = encoding

    def __call__(self, contexts: list[list[str]], responses: list[str], references: list[str] | None):
        per_item = [context_texts(c, self.encoding) for c in contexts]
        width = max(len(t) for t in per_item)
        flat = [t for texts in per_item for t in texts]
        vectors = self.cache.get(flat)
        context = np.zeros((len(per_item), width, self.cache.dim), np.float32)
        mask = np.zeros((len(per_item), width), np.float32)
        row = 0
        for i, texts in enumerate(per_item):
            context[i, : len(texts)] = vectors[row:row + len(texts)]
            mask[i, : len(texts)] = 1
            row += len(texts)
        out = [torch.from_numpy(context), torch.from_numpy(mask), torch.from_numpy(self.cache.get(responses))]
        if references is not None:
            out.append(torch.from_numpy(self.cache.get(references)))
        return out


def predict(head: torch.nn.Module, cache: VectorCache, encoding: str, contexts: list[list[str]], responses: list[str],
            references: list[str] | None) -> dict[str, np.ndarray]:
    batchify = Batchify(cache, encoding)
    outs: dict[str, list[np.ndarray]] = {}
    with torch.no_grad():
        for start in range(0, len(responses), 512):
            sl = slice(start, start + 512)
            tensors = batchify(contexts[sl], responses[sl], references[sl] if references is not None else None)
            for key, value in head(*tensors).items():
                outs.setdefault(key, []).append(value.numpy())
    return {k: np.concatenate(v) for k, v in outs.items()}
