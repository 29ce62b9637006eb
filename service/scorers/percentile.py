"""`human_percentile`: the share of real next turns, in corpus contexts, that a reply's score beats.

A reference-free model's folder may ship `human_percentile.json` (listed in its manifest with its sha256):
the model's served scores of human next turns, a few a conversation, sorted (its `source` names the corpus). A score's
percentile is its mid-rank among them (ties count half), so it reads the same on every model and a bot can
threshold it without knowing the model's scale; training/calibration builds the file and measures it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from service.artifacts.manifest import Manifest, ManifestError

FILE = "human_percentile.json"
MIN_SCORES = 100  # fewer human turns than this cannot give a percentile to two decimals


@dataclass(frozen=True)
class HumanPercentile:
    """The sorted served scores of the held-out human next turns, and where they came from."""

    scores: np.ndarray
    source: str

    @classmethod
    def of(cls, manifest: Manifest) -> "HumanPercentile | None":
        """The folder's table, or None where it ships none."""
        if FILE not in manifest.files:
            return None
        with open(manifest.path(FILE), encoding="utf-8") as handle:
            saved = json.load(handle)
        scores = np.asarray(saved.get("scores", []), dtype=np.float64)
        if scores.ndim != 1 or len(scores) < MIN_SCORES or not np.all(np.isfinite(scores)):
            raise ManifestError(f"{manifest.name}: {FILE} needs {MIN_SCORES}+ finite scores",
                                f"manifest invalid: {FILE}")
        return cls(np.sort(scores), str(saved.get("source", "")))

    def __call__(self, scores: list[float]) -> list[float]:
        """Each score's share of the table below it, ties counted half, in [0, 1]."""
        values = np.asarray(scores, dtype=np.float64)
        below = np.searchsorted(self.scores, values, side="left")
        at_or_below = np.searchsorted(self.scores, values, side="right")
        return [float(p) for p in (below + at_or_below) / (2.0 * len(self.scores))]
