"""`length`: the reply's length in words, the trivial baseline every learned metric must beat.

On several public benchmarks reply length alone correlates with human judgements about as well
as published learned metrics, so it is served like any model and reported in every evaluation.
"""
from __future__ import annotations

from typing import Any

from service.components.cache import EncodeCache
from service.scorers.base import Item, Scorer, ScoreBatch
from service.text import word_count


class ReplyLength(Scorer):
    computes = "unreferenced"

    @property
    def context_turns(self) -> int | None:
        return 0

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        return ScoreBatch([float(word_count(item.response)) for item in items])
