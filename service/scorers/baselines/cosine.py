"""minilm-cosine: the zero-training baseline on the shared MiniLM encoder."""
from __future__ import annotations

from typing import Any, ClassVar

from service.components.cache import EncodeCache
from service.scorers.base import REFERENCE_FREE, REFERENCE_FREE_OPTION, Item, ScoreBatch
from service.scorers.heads import SentenceEncoderScorer, context_texts


class MiniLMCosine(SentenceEncoderScorer):
    """Mean of cos(reply, reference) and cos(last context turn, reply); its reference-free part is the
    second cosine alone."""

    computes = "referenced"
    default_options: ClassVar[dict[str, dict[str, Any]]] = {REFERENCE_FREE: REFERENCE_FREE_OPTION}

    @property
    def context_turns(self) -> int | None:
        return 1  # the last turn

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        texts = [t for item in items for t in (item.response, item.reference or "", context_texts(item.context, "last")[0])]
        vectors = self._vectors(texts, cache)
        scores, details = [], []
        for item in items:
            reply = vectors[item.response]
            s_ref = float(reply @ vectors[item.reference or ""])
            s_ctx = float(reply @ vectors[context_texts(item.context, "last")[0]])
            scores.append((s_ref + s_ctx) / 2.0)
            details.append({"s_ref": s_ref, "s_context": s_ctx})
        return ScoreBatch(scores, details)

    def _score_reference_free(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        lasts = [context_texts(item.context, "last")[0] for item in items]
        vectors = self._vectors([t for item, last in zip(items, lasts) for t in (item.response, last)], cache)
        scores = [float(vectors[item.response] @ vectors[last]) for item, last in zip(items, lasts)]
        return ScoreBatch(scores, [{"s_context": s} for s in scores])
