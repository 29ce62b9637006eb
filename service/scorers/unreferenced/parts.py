"""The papers' own reference-free parts, served alone as models of kind `unreferenced`: RUBER's
unreferenced metric s_U (Tao et al. 2018) of the classic `ruber` and of `ruber-minilm`.

Each folder holds copies of its referenced model's graphs (identical bytes and hashes; its
config.derived_from names the source, `python -m training unref-parts` writes it). The score is s_U
as the head returns it, a sigmoid in (0, 1): the min-max normalisation RUBER applies before blending
clips at 0 and 1, which would tie the candidates a re-ranking most needs to order.
"""
from __future__ import annotations

from typing import Any, ClassVar

from service.components.cache import EncodeCache
from service.scorers.base import Item, ScoreBatch
from service.scorers.minilm import _HeadScorer
from service.scorers.registry import register
from service.scorers.ruber import Ruber


@register("ruber-unref")
class RuberUnreferenced(Ruber):
    """s_U of the classic RUBER: the BiGRU encoders over GloVe and the MLP head, no reference read."""

    computes = "unreferenced"
    default_options: ClassVar[dict[str, dict[str, Any]]] = {}

    def _load(self) -> None:
        self._load_unreferenced()

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        return ScoreBatch([float(s) for s in self.unreferenced(items, cache)] if items else [])


@register("ruber-minilm-unref")
class RuberMiniLMUnreferenced(_HeadScorer):
    """s_U of ruber-minilm: its head's `s_unref`, which does not read the graph's `reference` input
    (given the reply there)."""

    computes = "unreferenced"

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        out = self._run([Item(item.context, item.response, item.response) for item in items], cache)
        return ScoreBatch([float(s) for s in out["s_unref"]])
