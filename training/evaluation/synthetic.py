"""The synthetic check scored: the share of synthetic_cases' pairs in which a model scores the true next turn
above the negative (a tie is wrong), per kind and per source; its figure is the mean over the kinds.

Every distinct (context, reply) is scored once, BATCH at a time, with progress logged. What it measures
is next-turn discrimination on many held-aside contexts, beside the small judged sets, not a stand-in for
people's ratings; docs/evaluation.md writes it up between this module's markers."""
from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from service.scorers.base import Item
from training.core.progress import Progress
from training.evaluation.synthetic_cases import AHEAD, KINDS, MIN_QUERY_WORDS, MIN_REPLY_WORDS, POOL, Case

log = logging.getLogger("training.evaluate")

BEGIN, END = "<!-- synthetic:begin -->", "<!-- synthetic:end -->"
BATCH = 256
SOURCE_NAMES = {"dailydialog": "DailyDialog", "chitchat": "Chit-Chat", "topicalchat": "Topical-Chat"}
Scores = Callable[[list[Item]], Sequence[float]]  # a batch of items -> their scores


@dataclass(frozen=True)
class Agreement:
    """A model's shares of pairs ordered right: per kind, per source (the mean over its kinds) and overall
    (the mean over the kinds, each kind weighted alike)."""

    mean: float
    kinds: dict[str, float]
    sources: dict[str, float]


def measure(cases: list[Case], score: Scores, label: str = "synthetic", batch: int = BATCH) -> Agreement:
    """The Agreement of the model `score` calls, every distinct item scored once."""
    keys = list(dict.fromkeys(key for c in cases for key in ((c.context, c.true), (c.context, c.negative))))
    progress = Progress(len(keys), label, log, every=batch * 8)
    values: list[float] = []
    for start in range(0, len(keys), batch):
        values.extend(score([Item(list(context), reply) for context, reply in keys[start:start + batch]]))
        progress.step(min(start + batch, len(keys)))
    scored = dict(zip(keys, values))
    return agreement(cases, [scored[(c.context, c.true)] > scored[(c.context, c.negative)] for c in cases])


def agreement(cases: list[Case], right: Sequence[bool]) -> Agreement:
    """Shares of `right` (per case: the true turn scored above the negative) by kind and by source."""
    right = np.asarray(right, bool)
    kinds = np.array([c.kind for c in cases])
    sources = np.array([c.source for c in cases])
    present = [k for k in KINDS if (kinds == k).any()]
    by_kind = {k: float(right[kinds == k].mean()) for k in present}
    by_source = {s: float(np.mean([right[(kinds == k) & (sources == s)].mean() for k in present
                                   if ((kinds == k) & (sources == s)).any()]))
                 for s in dict.fromkeys(sources.tolist())}
    return Agreement(float(np.mean(list(by_kind.values()))), by_kind, by_source)


def card_entry(result: Agreement) -> dict:
    """A card's `synthetic` entry: the figures rounded to four places."""
    return {"mean": round(result.mean, 4), "kinds": {k: round(v, 4) for k, v in result.kinds.items()},
            "sources": {s: round(v, 4) for s, v in result.sources.items()}}


def markdown(results: Mapping[str, Agreement], cases: list[Case], command: str) -> str:
    """The section: how the cases were drawn, and a row a model."""
    contexts = {s: len({c.context for c in cases if c.source == s}) for s in dict.fromkeys(c.source for c in cases)}
    sources = list(contexts)
    lines = [BEGIN, "", (
        f"Written by `{command}` for every reference-free model and part. "
        f"{sum(contexts.values()):,} contexts ("
        + ", ".join(f"{SOURCE_NAMES.get(s, s)} {n}" for s, n in contexts.items())
        + f"), {len(cases):,} pairs: one context per held-aside dialogue (`training/data/corpora.py: held_aside`), "
        f"its last 5 turns before a true next turn of {MIN_REPLY_WORDS}+ words (after a query of {MIN_QUERY_WORDS}+ "
        f"words, {AHEAD}+ turns before the end), seeded; DailyDialog contexts only where the query is in the "
        "judgement dev partition, and no case whose query and true turn a training stream holds "
        "(`training/evaluation/held_in.py`, the corpora's train dialogues read whole). The true turn against one "
        "negative of each kind: random (a turn of another dialogue of the source), out-of-place (a turn of the "
        f"same dialogue {AHEAD}+ turns later), copy (a turn of the context), generic (the degenerate check's "
        f"list), hard (the next turn of another dialogue whose query is the most like this one by TF-IDF over "
        f"{POOL:,} sampled turns: chosen by words, no encoder). A cell is the share of pairs whose true turn "
        "scores higher (a tie is wrong); mean: over the kinds; a source's cell: the mean over its kinds."), "",
        "| model | mean | " + " | ".join(f"{k} ({sum(c.kind == k for c in cases)})" for k in KINDS) + " | "
        + " | ".join(SOURCE_NAMES.get(s, s) for s in sources) + " |",
        "|---|---|" + "---|" * (len(KINDS) + len(sources))]
    for model, result in results.items():
        lines.append(f"| {model} | {result.mean:.3f} | " + " | ".join(_cell(result.kinds.get(k)) for k in KINDS)
                     + " | " + " | ".join(_cell(result.sources.get(s)) for s in sources) + " |")
    return "\n".join(lines + ["", END]) + "\n"


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"
