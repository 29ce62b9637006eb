"""evaluate's tables for re-ranking: within-context pairwise agreement of every model, and each
reference-free model against the two bars a live bot's re-ranker must clear (autojudge-minilm, the
reference-free model served before, and minilm-cosine's context part, its untrained counterpart), with
its distance to minilm-cosine, which reads the reference, on the items whose reply is not its own.
Every mean and tally over sets counts each distinct set of items once (judgements.counted_once)."""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from service.components.cache import EncodeCache
from service.scorers.base import Item, Scorer
from training.data.judgements import ALIASES, JudgedItem, counted_once
from training.evaluation import parts
from training.evaluation.pairwise import MIN_GAP, MIN_PAIRS, context_groups, pairwise_agreement

CONTEXT_PART = "minilm-cosine (context part)"
BARS = ("autojudge-minilm", CONTEXT_PART)
REFERENCED_BAR = "minilm-cosine"
BATCH = 256


def pairwise(items: list[JudgedItem], human: np.ndarray, scores: np.ndarray) -> tuple[float | None, int]:
    """The model's within-context pairwise agreement on these items (evaluate's kept items)."""
    groups = context_groups([(item.conversation, tuple(item.context)) for item in items])
    return pairwise_agreement(groups, human, scores)


def context_part_scores(scorer: Scorer, items: Sequence[JudgedItem | Item], caches: Callable[[], EncodeCache],
                        ) -> np.ndarray:
    """minilm-cosine's s_context, cos(last turn, reply), per item (a judged one or one to score): its
    reference-free part's details."""
    values: list[float] = []
    for start in range(0, len(items), BATCH):
        chunk = [Item(list(i.context), i.response) for i in items[start:start + BATCH]]
        values.extend(d["s_context"] for d in scorer.score(chunk, parts.OPTIONS, caches()).details)
    return np.asarray(values)


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def aliases_note(sets: list[str]) -> str:
    """What a mean over `sets` leaves out: 'xdial_dailydialog_gupta (dailydialog_gupta_multiref's items
    again)' for each alias whose set is among them; empty where none is."""
    left = [f"{name} ({ALIASES[name]}'s items again)" for name in sets if name not in counted_once(sets)]
    return ", ".join(left)


def _counted(sets: list[str]) -> str:
    """A mean's column header: over how many distinct sets."""
    return f"{len(counted_once(sets))} distinct sets"


def _once(sets: list[str], subject: str = "A mean counts") -> str:
    """The sentence a table with means over `sets` carries: what they leave out, and where that is declared."""
    note = aliases_note(sets)
    return (f" {subject} each distinct set of items once, leaving out {note} "
            "(`training/data/judgements.py`: SetInfo.alias_of).") if note else ""


def pairwise_table(results: dict, sets: list[str], models: list[str]) -> list[str]:
    """Markdown lines: every model's pairwise agreement on the sets with MIN_PAIRS pairs or more, and its
    mean over the distinct ones."""
    shown = [s for s in sets if max((r.pairs for r in results[s].values()), default=0) >= MIN_PAIRS]
    if not shown:
        return []
    counted = counted_once(shown)
    lines = ["", (f"Within-context pairwise agreement (what re-ranking needs): on the sets where a context has "
                  f"several judged replies, the share of reply pairs to the same context whose human scores differ "
                  f"by at least {MIN_GAP} (1-5) that the model orders as people do; a model tie counts as wrong "
                  f"(`training/evaluation/pairwise.py`; sets with {MIN_PAIRS}+ pairs, their count in brackets: the most "
                  f"and the fewest a model was measured on where they differ, since a referenced model reads only "
                  f"the items with a reference)."
                  + _once(shown)), "",
             "| model | " + " | ".join(f"{s} ({_pair_counts(results[s])})" for s in shown)
             + f" | mean ({_counted(shown)}) |", "|---|" + "---|" * (len(shown) + 1)]
    for model in models:
        values = [getattr(results[s].get(model), "pairwise", None) for s in shown]
        mean = _mean([getattr(results[s].get(model), "pairwise", None) for s in counted])
        lines.append(f"| {model} | " + " | ".join(_cell(v) for v in values) + f" | {_cell(mean)} |")
    return lines


def _pair_counts(by_model: dict) -> str:
    """The pairs a set's models were measured on: one count, or the most and the fewest ("10896 / 10561")."""
    counts = {r.pairs for r in by_model.values() if r.pairs}
    return f"{max(counts)}" if len(counts) == 1 else f"{max(counts)} / {min(counts)}"


def _above(results: dict, sets: list[str], model: str, bar: str, field: str) -> tuple[int, int]:
    """(sets where the model's figure is higher than the bar's, sets where both have one)."""
    won = total = 0
    for s in sets:
        mine, theirs = results[s].get(model), results[s].get(bar)
        a, b = getattr(mine, field, None), getattr(theirs, field, None)
        if a is None or b is None or (field == "pairwise" and min(mine.pairs, theirs.pairs) < MIN_PAIRS):
            continue
        total += 1
        won += a > b
    return won, total


def reranking_table(results: dict, sets: list[str], models: list[str], kinds: dict[str, str],
                    distinct: dict[str, dict]) -> list[str]:
    """Markdown lines: each reference-free model against BARS, in Pearson (sets above) and pairwise
    agreement (sets above, mean), and its mean Pearson on the items whose reply is not its own reference
    against minilm-cosine's there (`distinct`: evaluate's restricted results per set and model)."""
    free = [m for m in models if kinds.get(m) == "unreferenced"] + [CONTEXT_PART]
    if not all(any(bar in results[s] for s in sets) for bar in BARS):
        return []
    every = counted_once(sets)
    shown = counted_once([s for s in sets if REFERENCED_BAR in distinct.get(s, {})])
    pair_sets = counted_once([s for s in sets if max((r.pairs for r in results[s].values()), default=0) >= MIN_PAIRS])
    lines = ["", ("Reference-free models against the re-ranking bars: sets where the model's Pearson r, "
                  "and its pairwise agreement, is above autojudge-minilm's and above minilm-cosine's context part "
                  "(cos(last turn, reply), the untrained reference-free counterpart); the mean Pearson over the "
                  f"{len(every)} distinct sets and the mean pairwise agreement over the {len(pair_sets)} distinct "
                  "sets of the table above; and the mean Pearson on the items whose judged reply is not "
                  f"its own reference ({', '.join(shown)}), with the difference to minilm-cosine, which reads the "
                  "reference, there." + _once(sets, "Means and tallies count")), "",
             f"| model | Pearson mean ({_counted(every)}) | Pearson > autojudge-minilm | Pearson > context part | "
             "pairwise > autojudge-minilm | pairwise > context part | "
             f"pairwise mean ({_counted(pair_sets)}) | reply not its reference: r (minus minilm-cosine's) |",
             "|---|---|---|---|---|---|---|---|"]
    bar_mean = _mean([distinct[s][REFERENCED_BAR].pearson for s in shown])
    for model in free:
        cells = [_cell(_mean([getattr(results[s].get(model), "pearson", None) for s in every]))]
        for field in ("pearson", "pairwise"):
            for bar in BARS:
                won, total = _above(results, every if field == "pearson" else pair_sets, model, bar, field)
                cells.append("–" if model == bar or not total else f"{won}/{total}")
        pairs = [getattr(results[s].get(model), "pairwise", None) for s in pair_sets]
        cells.append(_cell(_mean(pairs)))
        mine = _mean([getattr(distinct[s].get(model), "pearson", None) for s in shown])
        cells.append("–" if mine is None or bar_mean is None else f"{mine:.3f} ({mine - bar_mean:+.3f})")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    return lines


def _mean(values: list[float | None]) -> float | None:
    """The mean where every value is there, else None (a mean over fewer sets is another measure)."""
    return float(np.mean(values)) if values and all(v is not None for v in values) else None
