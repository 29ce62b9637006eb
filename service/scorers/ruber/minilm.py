"""ruber-minilm: RUBER (Tao et al. 2018) on MiniLM vectors: the referenced cosine and an unreferenced head,
min-max normalised and blended; its reference-free part is the head's s_U alone."""
from __future__ import annotations

from typing import Any, ClassVar

from service.components.cache import EncodeCache
from service.scorers.base import REFERENCE_FREE, REFERENCE_FREE_OPTION, Item, ScoreBatch
from service.scorers.heads import SentenceHeadScorer
from service.scorers.ruber.blending import BLENDS, blend, normalise_min_max


class RuberMiniLM(SentenceHeadScorer):
    computes = "referenced"
    default_options: ClassVar[dict[str, dict[str, Any]]] = {
        "blend": {"type": "string", "choices": list(BLENDS), "default": "arithmetic"},
        "components": {"type": "boolean", "default": False},
        REFERENCE_FREE: REFERENCE_FREE_OPTION,
    }

    def _score_reference_free(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        """s_U as the head returns it, in (0, 1) (the graph's `s_unref`, which does not read its reference
        input: given the reply there); unnormalised for the reason Ruber._score_reference_free gives."""
        out = self.head.run_reference_free(items, cache)
        return ScoreBatch([float(s) for s in out["s_unref"]])

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        out = self._run(items, cache)
        ranges = self.manifest.config["normalise"]
        s_ref = normalise_min_max(out["s_ref"], *ranges["s_ref"])
        s_unref = normalise_min_max(out["s_unref"], *ranges["s_unref"])
        scores = blend(s_ref, s_unref, options["blend"])
        details = None
        if options["components"]:
            details = [{"s_ref": float(a), "s_unref": float(b)} for a, b in zip(s_ref, s_unref)]
        return ScoreBatch([float(s) for s in scores], details)
