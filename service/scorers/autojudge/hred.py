"""AutoJudge (Deriu & Cieliebak 2019): (c^T M r - alpha) / beta, no reference, on the VHRED encoder."""
from __future__ import annotations

from typing import Any

from service.components.cache import EncodeCache
from service.scorers.base import Item, ScoreBatch
from service.scorers.heads import HREDHeadScorer


class AutoJudge(HREDHeadScorer):
    computes = "unreferenced"
    head_file = "autojudge_head.onnx"

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        c = self.encoder.encode_contexts([item.context for item in items], cache)
        r = self.encoder.encode_responses([item.response for item in items], cache)
        return ScoreBatch(self._run_head({"c": c, "r": r})["score"])
