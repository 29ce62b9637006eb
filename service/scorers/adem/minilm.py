"""adem-minilm: ADEM's terms c^T M r_hat + r^T N r_hat on MiniLM vectors (Lowe et al. 2017), scored as
alpha + beta (terms - copy penalty) with alpha and beta trained (the card says where it leaves the paper)."""
from __future__ import annotations

from typing import Any

from service.components.cache import EncodeCache
from service.scorers.base import Item, ScoreBatch, term_details
from service.scorers.heads import SentenceHeadScorer


class AdemMiniLM(SentenceHeadScorer):
    computes = "referenced"
    bounded_by_squashing = True
    terms = ("s_unref", "s_ref", "copy_penalty")  # graph outputs given in `details` (model card: details)

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        out = self._run(items, cache)
        return ScoreBatch([float(s) for s in out["score"]], term_details(out, self.terms))
