"""Which class implements a manifest's `scorer` key: one table of scorers, one of components.

The tables are written out (sacrebleu's `METRICS` dict): the store depends on the implementations,
never the other way round, and a new metric is one line here.
"""
from __future__ import annotations

from typing import Generic, TypeVar

from service.components.base import Component
from service.components.glove import GloveTable
from service.components.hred import HREDEncoder
from service.components.sentence_encoder import SentenceEncoder
from service.scorers.adem.hred import ADEM
from service.scorers.adem.minilm import AdemMiniLM
from service.scorers.autojudge.hred import AutoJudge
from service.scorers.autojudge.minilm import AutoJudgeMiniLM
from service.scorers.base import Scorer
from service.scorers.baselines.cosine import MiniLMCosine
from service.scorers.baselines.embedding import EmbeddingAverage, EmbeddingExtrema, EmbeddingGreedy
from service.scorers.baselines.length import ReplyLength
from service.scorers.baselines.overlap import Bleu4, RougeL
from service.scorers.mh.scorer import HybridMetric
from service.scorers.ruber.glove import Ruber
from service.scorers.ruber.minilm import RuberMiniLM
from service.scorers.unref.combination import StackedUnreferenced

T = TypeVar("T")


class Registry(Generic[T]):
    """Implementations by the key a manifest names; KeyError naming the key for any other."""

    def __init__(self, what: str, classes: dict[str, type[T]]) -> None:
        self.what = what
        self.classes = dict(classes)

    def __getitem__(self, key: str) -> type[T]:
        try:
            return self.classes[key]
        except KeyError:
            raise KeyError(f"no {self.what} implementation named {key!r}") from None

    def __contains__(self, key: object) -> bool:
        return key in self.classes


SCORERS: Registry[Scorer] = Registry("scorer", {
    "adem": ADEM, "adem-minilm": AdemMiniLM,
    "autojudge": AutoJudge, "autojudge-minilm": AutoJudgeMiniLM,
    "ruber": Ruber, "ruber-minilm": RuberMiniLM,
    "unref-combination": StackedUnreferenced,
    "mh": HybridMetric,
    "bleu4": Bleu4, "rouge-l": RougeL,
    "emb-average": EmbeddingAverage, "emb-extrema": EmbeddingExtrema, "emb-greedy": EmbeddingGreedy,
    "length": ReplyLength, "minilm-cosine": MiniLMCosine,
})
COMPONENTS: Registry[Component] = Registry("component", {
    "glove": GloveTable, "hred-encoder": HREDEncoder, "sentence-encoder": SentenceEncoder,
})


def scorer_class(key: str) -> type[Scorer]:
    return SCORERS[key]


def component_class(key: str) -> type[Component]:
    return COMPONENTS[key]
