"""M_H (Ghandeharioun et al. 2019): a linear regression of the conversation proxies (proxies.py),
fitted to human ratings of whole human-bot conversations (ConvAI2, 1-5), leave-bot-out (training/mh).

Each proxy is held to its range in the fitting data before the regression, so that one extreme
turn cannot set the score alone, and the prediction is clipped to the rating scale [1, 5].
"""
from __future__ import annotations

import json
import logging
import math
from functools import lru_cache
from typing import Any

import numpy as np

from service.components.cache import EncodeCache
from service.scorers.base import Dialogue, Scorer, ScoreBatch
from service.scorers.mh import proxies
from service.text import is_blank
from service.artifacts.manifest import ManifestError, encoder_drift

log = logging.getLogger(__name__)

GLOVE = "glove-50d"
ENCODER = "minilm-l6"
REGRESSION_FILE = "regression.json"
REGRESSION_KEYS = ("mean", "scale", "coefficients", "intercept", "low", "high")


class HybridMetric(Scorer):
    """Options: `variant` is "human-bot" (the default, the setting the regression was fitted in),
    "bot-only" (the paper's -B: the bot's turns alone) or "self-play" (the paper's -B/B: a conversation
    the bot held with itself, speaker labels ignored); in the last two every utterance plays both
    roles (proxies.Roles). `proxies: true` adds every proxy value (null where none) to `details`."""

    computes = "dialogue"
    default_options = {
        "variant": {"type": "string", "choices": list(proxies.VARIANTS), "default": "human-bot"},
        "proxies": {"type": "boolean", "default": False},
    }

    def _load(self) -> None:
        self.glove = self.components[GLOVE]
        self.encoder = self.components[ENCODER]
        raw = json.loads(self.manifest.path(REGRESSION_FILE).read_text(encoding="utf-8"))
        if tuple(raw.get("proxies", ())) != proxies.PROXIES:
            raise ManifestError(f"{self.name}: {REGRESSION_FILE} was fitted on proxies {raw.get('proxies')}, "
                                f"this code computes {list(proxies.PROXIES)}")
        missing = [key for key in REGRESSION_KEYS if key not in raw]
        if missing:
            raise ManifestError(f"{self.name}: {REGRESSION_FILE} lacks {missing} (re-run `python -m training train-mh`)")
        self.mean = np.asarray(raw["mean"], dtype=np.float64)
        self.scale = np.asarray(raw["scale"], dtype=np.float64)
        self.coefficients = np.asarray(raw["coefficients"], dtype=np.float64)
        self.intercept = float(raw["intercept"])
        width = len(proxies.PROXIES)
        # The proxies' range in the fitting data (training/mh/model.py)
        self.low = np.asarray(raw["low"], dtype=np.float64)
        self.high = np.asarray(raw["high"], dtype=np.float64)
        if not (self.mean.shape == self.scale.shape == self.coefficients.shape == self.low.shape == self.high.shape
                == (width,)) or not np.all(np.isfinite(np.concatenate([self.mean, self.scale, self.coefficients]))) \
                or not np.all(self.scale > 0) or np.any(np.isnan(self.low)) or not np.all(self.low <= self.high):
            raise ManifestError(f"{self.name}: {REGRESSION_FILE} needs {width} finite means, positive scales, "
                                "coefficients and ordered ranges")
        self.score_low, self.score_high = self.manifest.score_range
        drift = encoder_drift(self.manifest, self.encoder.manifest)
        if drift:  # still served: only semantic_similarity reads the encoder
            log.warning("%s: fitted on sentence-encoder files %s, the store has %s; semantic_similarity may be "
                        "off its training scale (re-run `python -m training train-mh`)", self.name,
                        sorted(drift), {n: h and h[:12] for n, h in drift.items()})

    def item_problem(self, item: Any, options: dict[str, Any]) -> tuple[str, str] | None:
        """A conversation with no user turn under "human-bot": the proxies that read the user's turns are all
        missing and take their training means, so the score would be about the regression's intercept."""
        if options["variant"] == "human-bot" and not any(t.speaker == proxies.USER and not is_blank(t.text)
                                                         for t in item.turns):
            return "turns", ('The variant "human-bot" (the default) reads the user\'s turns, and this dialogue '
                             'has none with text; send options.variant "bot-only" to score the bot\'s turns alone.')
        return None

    def predict(self, values: np.ndarray) -> float:
        """The regression output for one proxy vector, before the clip to the rating scale: NaN proxies
        take the training mean, and each proxy is held to its range in the fitting data (as
        training/mh/model.py's Linear, whose predictions the card reports)."""
        filled = np.clip(np.where(np.isnan(values), self.mean, values), self.low, self.high)
        return float(((filled - self.mean) / self.scale) @ self.coefficients + self.intercept)

    def _score(self, items: list[Dialogue], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        variant = options["variant"]
        conversations = [proxies.assign_roles([t.speaker for t in d.turns], [t.text for t in d.turns], variant)
                         for d in items]
        texts = proxies.pair_texts(conversations)
        if texts:
            self.encoder.encode(texts, cache)  # one batched call; the per-conversation calls hit the cache

        def encode(batch: list[str]) -> np.ndarray:
            return self.encoder.encode(batch, cache)

        # VADER of each distinct utterance once per request (in self-play a turn is read up to five
        # times); the memo lives as long as the request, so it holds at most the request's own texts.
        sentiment = lru_cache(maxsize=None)(proxies.vader)
        scores: list[float] = []
        details: list[dict[str, Any]] = []
        for conversation in conversations:
            values = proxies.compute(conversation, self.glove.embed, encode, sentiment)
            raw = self.predict(proxies.vector(values))
            scores.append(min(self.score_high, max(self.score_low, raw)))
            details.append({"unclipped": raw,
                            "proxies": {k: (None if math.isnan(v) else v) for k, v in values.items()}})
        return ScoreBatch(scores, details if options["proxies"] else None)
