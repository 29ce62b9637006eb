"""ADEM (Lowe et al. 2017): (c^T M r_hat + r^T N r_hat - alpha) / beta on the shared VHRED encoder.

c is the context's vector, r_hat the reply's, r the reference's, all from the `hred-encoder`
component; the PCA projection, M, N, alpha and beta are inside `adem_head.onnx`, which also returns
the two terms, given per item in `details` as s_unref (c^T M r_hat) and s_ref (r^T N r_hat).
"""
from __future__ import annotations

from typing import Any

from service.components.cache import EncodeCache
from service.scorers.base import Item, ScoreBatch, term_details
from service.scorers.heads import HREDHeadScorer


class ADEM(HREDHeadScorer):
    computes = "referenced"
    head_file = "adem_head.onnx"
    # graph outputs given in `details` (the contract's adem example); a head without them gives none
    terms = ("s_unref", "s_ref")

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        c = self.encoder.encode_contexts([item.context for item in items], cache)
        r_hat = self.encoder.encode_responses([item.response for item in items], cache)
        r = self.encoder.encode_responses([item.reference or "" for item in items], cache)
        out = self._run_head({"c": c, "r_hat": r_hat, "r": r})
        return ScoreBatch(out["score"], term_details(out, self.terms))
