"""Shared sample data: a human score and two metrics of known quality, drawn from one seeded generator."""
from __future__ import annotations

import json

import numpy as np
from scipy import stats as sps

from service.stats.designs import by_content

RNG = np.random.default_rng(20260522)
HUMAN = RNG.normal(size=40)
GOOD = HUMAN + RNG.normal(scale=0.5, size=40)
POOR = HUMAN + RNG.normal(scale=2.0, size=40)
SCIPY = {"pearson": sps.pearsonr, "spearman": sps.spearmanr, "kendall": sps.kendalltau}


def no_nan(body: dict) -> None:
    json.dumps(body, allow_nan=False)  # raises on NaN or infinity anywhere


def drawn_groups(systems: np.ndarray, human: np.ndarray, *metrics: np.ndarray) -> tuple[int, np.ndarray]:
    """(systems, each item's system id) as /correlate draws them, for items already in canonical order and
    `metrics` in name order: the ids are the systems' places by content (designs.by_content)."""
    labels, labelled = np.unique(systems, return_inverse=True)
    return labels.size, by_content(labelled, labels.size, list(zip(human.tolist(), *(m.tolist() for m in metrics))))[0]
