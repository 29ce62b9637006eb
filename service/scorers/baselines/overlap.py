"""Word-overlap baselines every paper compares against: BLEU-4 and ROUGE-L against the reference.

BLEU-4 is sacrebleu's sentence BLEU with its default smoothing for sentences (exponential, Chen &
Cherry 2014 method 3), lower-cased, 13a tokenisation and effective order, divided by 100 so scores lie
in [0, 1]. ROUGE-L is the rouge-score package's F-measure of the longest common subsequence (no
stemming). Both run on the CPU whatever the device.
"""
from __future__ import annotations

from typing import Any

import sacrebleu
from rapidfuzz.distance import LCSseq
from rouge_score import scoring, tokenizers

from service.components.cache import EncodeCache
from service.scorers.base import Item, Scorer, ScoreBatch


class _Overlap(Scorer):
    """The reply's words against the reference's: no context turn read."""

    computes = "referenced"

    @property
    def context_turns(self) -> int | None:
        return 0


class Bleu4(_Overlap):
    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        scores = [
            sacrebleu.sentence_bleu(item.response, [item.reference or ""], smooth_method="exp",
                                    lowercase=True).score / 100.0
            for item in items
        ]
        return ScoreBatch(scores)


class RougeL(_Overlap):
    def _load(self) -> None:
        self._tokenizer = tokenizers.DefaultTokenizer(use_stemmer=False)  # RougeScorer's own default

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        return ScoreBatch([self.fmeasure(item.reference or "", item.response) for item in items])

    def fmeasure(self, reference: str, response: str) -> float:
        """rouge-score's ROUGE-L F-measure (`rouge_scorer._score_lcs`), the LCS length from rapidfuzz:
        rouge-score fills a Python table of len(reference) x len(reply) cells, rapidfuzz's bit-parallel
        LCS gives the same length in a small fraction of the time."""
        target = self._tokenizer.tokenize(reference)
        prediction = self._tokenizer.tokenize(response)
        if not target or not prediction:
            return 0.0
        ids: dict[str, int] = {}  # tokens as exact integers: rapidfuzz would compare strings by hash
        lcs = LCSseq.similarity([ids.setdefault(t, len(ids)) for t in target],
                                [ids.setdefault(t, len(ids)) for t in prediction])
        return float(scoring.fmeasure(lcs / len(prediction), lcs / len(target)))
