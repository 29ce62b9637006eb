"""ADEM (Lowe et al. 2017): (c^T M r_hat + r^T N r_hat - alpha) / beta on the shared VHRED encoder.

c is the context's vector, r_hat the reply's, r the reference's, all from the `hred-encoder`
component; the PCA projection, M, N, alpha and beta are inside `adem_head.onnx`, which also returns
the two terms, given per item in `details` as s_unref (c^T M r_hat) and s_ref (r^T N r_hat).
"""
from __future__ import annotations

import logging
from typing import Any

import numpy as np

from service.components.cache import EncodeCache
from service.components.hred import HREDEncoder
from service.scorers.base import Item, ScoreBatch, Scorer, term_details
from service.scorers.registry import register
from service.artifacts.manifest import ManifestError, encoder_drift

log = logging.getLogger(__name__)

ENCODER = "hred-encoder"


class HREDHeadScorer(Scorer):
    """A small ONNX head over hred-encoder vectors, run one row at a time (Session.run_rows)."""

    head_file = ""  # the head's default file name (the manifest's config.head wins)
    bounded_by_squashing = True  # (c^T M r [+ r^T N r_hat] - alpha) / beta has no bound of its own

    def _load(self) -> None:
        uses = self.manifest.uses or [ENCODER]
        self.encoder: HREDEncoder = self.components[uses[0]]
        self._check_encoder(uses[0])
        self.head = self.runtime.session(self.manifest.path(self.manifest.config.get("head", self.head_file)))

    def _check_encoder(self, name: str) -> None:
        """Refuse to serve the head on another encoder than the one it was trained on (config.encoder_files,
        written by `python -m training export`): one of the same width would load and score, silently
        wrong."""
        if not self.manifest.config.get("encoder_files"):
            # an older export records none: served, since nothing says it is wrong, but the operator
            # should know the check could not be made
            log.warning("%s: its manifest records no config.encoder_files, so whether it was trained on this "
                        "store's %s cannot be checked; re-export it to record them", self.name, name)
            return
        drift = encoder_drift(self.manifest, self.encoder.manifest)
        if drift:
            recorded = self.manifest.config["encoder_files"]
            found = ", ".join(f"{n} {recorded[n][:12]} -> {h[:12] if h else 'missing'}" for n, h in drift.items())
            raise ManifestError(
                f"{self.name}: trained on other {name} files than the store has ({found}): re-export it with "
                f"its encoder (python -m training export --vhred RUN --{self.manifest.scorer} RUN)",
                f"trained on another {name}")

    def _run_head(self, feeds: dict[str, np.ndarray]) -> dict[str, list[float]]:
        """Every output of the head by name (`score` always; ADEM's terms where its graph has them)."""
        outputs = self.head.run_rows(feeds)
        return {name: [float(v) for v in np.asarray(values).reshape(-1)]
                for name, values in zip(self.head.outputs, outputs)}


@register("adem")
class ADEM(HREDHeadScorer):
    computes = "referenced"
    head_file = "adem_head.onnx"
    # graph outputs given in `details` (the contract's adem example); an older head returns the
    # score alone and gives none
    terms = ("s_unref", "s_ref")

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        c = self.encoder.encode_contexts([item.context for item in items], cache)
        r_hat = self.encoder.encode_responses([item.response for item in items], cache)
        r = self.encoder.encode_responses([item.reference or "" for item in items], cache)
        out = self._run_head({"c": c, "r_hat": r_hat, "r": r})
        return ScoreBatch(out["score"], term_details(out, self.terms))
