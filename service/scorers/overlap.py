"""Word-overlap baselines every paper compares against: BLEU-4 and ROUGE-L against the reference.

BLEU-4 is sacrebleu's sentence BLEU with its default for sentences, exponential smoothing
(Chen & Cherry 2014, method 3), lower-cased, 13a tokenisation and effective order, divided
by 100 so scores lie in [0, 1]. ROUGE-L is the rouge-score package's F-measure of the longest
common subsequence (no stemming). Both are pure Python: they run on CPU whatever the device.
"""
from __future__ import annotations

from typing import Any

import sacrebleu
from rouge_score import rouge_scorer

from service.scorers.base import EncodeCache, Item, Scorer, ScoreBatch
from service.scorers.registry import register


@register("bleu4")
class Bleu4(Scorer):
    computes = "referenced"

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        scores = [
            sacrebleu.sentence_bleu(item.response, [item.reference or ""], smooth_method="exp",
                                    lowercase=True).score / 100.0
            for item in items
        ]
        return ScoreBatch(scores)


@register("rouge-l")
class RougeL(Scorer):
    computes = "referenced"

    def _load(self) -> None:
        self._scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        scores = [self._scorer.score(item.reference or "", item.response)["rougeL"].fmeasure for item in items]
        return ScoreBatch(scores)
