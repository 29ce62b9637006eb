"""The one place training asks the service for a model's reference-free part (its `reference_free` option):
what evaluate's NAME:reference_free rows and the re-ranking bars read."""
from __future__ import annotations

from service.scorers.base import REFERENCE_FREE, Call, Scorer
from service.store.model_store import ModelStore

SUFFIX = f":{REFERENCE_FREE}"  # evaluate's row of a model's reference-free part: `ruber:reference_free`
OPTIONS = {REFERENCE_FREE: True}  # the request options that score the reference-free part alone


def part_of(scorer: Scorer) -> Call:
    """A model called for its reference-free part."""
    return Call(scorer, scorer.resolve_options(OPTIONS))


def has_part(scorer: Scorer) -> bool:
    return scorer.has_reference_free_part


def models_with_part(store: ModelStore) -> list[str]:
    """The served models that offer a reference-free part."""
    return list(store.with_reference_free_part())
