"""RUBER measured on its exported graphs through the service's scorer: the min-max constants (on
DailyDialog++ dev, no human score), the query length and default blend (on the dev splits) and the dev figures."""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np

from service.stats.correlation import correlation
from service.components.glove import GloveTable
from service.artifacts.manifest import read_manifest, verify_files
from service.artifacts.runtime import Runtime, RuntimeSettings
from service.scorers.base import EncodeCache, Item
from service.scorers.ruber.blending import BLENDS, blend, normalise
from service.scorers.ruber.glove import Ruber
from training.data.judgements import DEFAULT_DATA_DIR, SETS, TRAINING_SETS, JudgedItem, counted_once, load_set
from training.evaluation.evaluate import correlate, evaluate_model, load_store


def calibration_items(data_dir: Path = DEFAULT_DATA_DIR, contexts: int = 400, seed: int = 0) -> list[Item]:
    """(context, candidate, reference) triples from DailyDialog++ dev: good, random and adversarial candidates."""
    path = Path(data_dir) / "corpora" / "dailydialog_plusplus" / "dev.json"
    with open(path, encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    random.Random(seed).shuffle(rows)
    items: list[Item] = []
    for row in rows[:contexts]:
        positives = [p for p in row.get("positive_responses", []) if p.strip()]
        if len(positives) < 2 or not row.get("context"):
            continue
        reference = positives[0]
        candidates = positives[1:] + row.get("random_negative_responses", []) + row.get(
            "adversarial_negative_responses", [])
        items.extend(Item(list(row["context"]), c, reference) for c in candidates if c.strip())
    return items


def raw_components(scorer: Ruber, items: list[Item], batch: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Raw (s_R, s_U) before normalisation, through the served scorer's own code."""
    return scorer.referenced(items), unreferenced_scores(scorer, items, batch)


def min_max(scorer: Ruber, items: list[Item]) -> dict[str, list[float]]:
    s_ref, s_unref = raw_components(scorer, items)
    bounds = {"s_ref": [float(s_ref.min()), float(s_ref.max())],
              "s_unref": [float(s_unref.min()), float(s_unref.max())]}
    if scorer.word_weights is not None:
        weighted = scorer.referenced(items, "frequency")
        bounds["s_ref_frequency"] = [float(weighted.min()), float(weighted.max())]
    return bounds


def _pearson(human: np.ndarray, scores: np.ndarray) -> float:
    """Pearson r, 0 where undefined: a choice whose scores are constant ranks as carrying no signal."""
    return correlation(human, scores)["r"] or 0.0


def dev_reference(scorer: Ruber, items: list[JudgedItem], max_refs: int = 4, word_weights: str = "none") -> np.ndarray:
    """The best normalised s_R over each item's first `max_refs` references (NaN: none)."""
    s_ref = np.full(len(items), np.nan)
    flat = [(k, Item(list(i.context), i.response, r)) for k, i in enumerate(items) for r in i.references[:max_refs]]
    if not flat:
        return s_ref
    values = scorer.referenced([item for _, item in flat], word_weights)
    for (k, _), v in zip(flat, values):
        s_ref[k] = v if np.isnan(s_ref[k]) else max(s_ref[k], v)
    return normalise(s_ref, scorer.reference_bounds(word_weights))


def dev_unreferenced(scorer: Ruber, items: list[JudgedItem]) -> np.ndarray:
    """Normalised s_U per item."""
    plain = [Item(list(i.context), i.response, None) for i in items]
    return normalise(unreferenced_scores(scorer, plain), scorer.bounds["s_unref"])


def unreferenced_scores(scorer: Ruber, items: list[Item], batch: int = 256) -> np.ndarray:
    """Raw s_U of items, in batches."""
    out = [scorer.unreferenced(items[s: s + batch], EncodeCache()) for s in range(0, len(items), batch)]
    return np.concatenate(out) if out else np.zeros(0)


def choose_query_turns(scorer: Ruber, candidates=(1, 2, 3), sets: list[str] | None = None,
                       data_dir: Path = DEFAULT_DATA_DIR) -> dict:
    """Mean dev Pearson of s_U over every distinct set (an alias's items are its set's again) for each query
    length; the scorer keeps the best."""
    table: dict[int, dict[str, float]] = {}
    for turns in candidates:
        scorer.query_turns = turns
        table[turns] = {}
        for name in sets or TRAINING_SETS:
            items = load_set(name, "dev", data_dir)
            s_unref = unreferenced_scores(scorer, [Item(list(i.context), i.response) for i in items])
            table[turns][name] = _pearson(np.asarray([i.score for i in items]), s_unref)
    mean = {t: float(np.mean([v[name] for name in counted_once(v)])) for t, v in table.items()}
    best = max(mean, key=lambda t: (mean[t], -t))
    scorer.query_turns = best
    return {"chosen": best, "mean_pearson": mean, "per_set": table}


def choose_blend(scorer: Ruber, sets: list[str] | None = None, data_dir: Path = DEFAULT_DATA_DIR) -> dict:
    """Mean dev Pearson of each blend, with each word weighting the scorer offers, over the sets with
    references; the best pair becomes the default (ties keep the paper's unweighted pooling)."""
    weightings = ["none"] + (["frequency"] if scorer.word_weights is not None else [])
    per_set: dict[str, dict[str, dict[str, float]]] = {w: {} for w in weightings}
    for name in sets or TRAINING_SETS:
        if not SETS[name].has_references:
            continue
        items = [i for i in load_set(name, "dev", data_dir) if i.references]
        human = np.asarray([i.score for i in items])
        s_unref = dev_unreferenced(scorer, items)  # once: s_U does not depend on the word weights
        for weighting in weightings:
            s_ref = dev_reference(scorer, items, word_weights=weighting)
            row = {"s_ref": _pearson(human, s_ref), "s_unref": _pearson(human, s_unref)}
            row.update({how: _pearson(human, blend(s_ref, s_unref, how)) for how in BLENDS})
            per_set[weighting][name] = row
    by_weighting = {w: {how: float(np.mean([v[how] for v in per_set[w].values()])) for how in BLENDS}
                    for w in weightings}
    weighting, chosen = max(((w, b) for w in weightings for b in BLENDS),
                            key=lambda pair: (by_weighting[pair[0]][pair[1]], pair[0] == "none"))
    return {"chosen": chosen, "word_weights": weighting, "mean_pearson": by_weighting[weighting],
            "by_word_weights": by_weighting, "per_set": per_set[weighting]}


BASELINES = ("bleu4", "rouge-l", "length")


def dev_correlations(folder: Path, glove: GloveTable, store: Path, sets: list[str],
                     data_dir: Path = DEFAULT_DATA_DIR) -> dict:
    """Dev Pearson/Spearman of ruber (default blend), of s_U alone, and of the baselines in `store`."""
    scorer = open_scorer(folder, glove)
    models = {"ruber": scorer}
    if (Path(store) / "bleu4").is_dir():
        baseline_store = load_store(store, list(BASELINES))
        models.update({n: baseline_store.scorers[n] for n in BASELINES if n in baseline_store.scorers})
    table: dict[str, dict] = {}
    for name in sets:
        items = load_set(name, "dev", data_dir)
        human = np.asarray([i.score for i in items])
        table[name] = {}
        for label, model in models.items():
            result = evaluate_model(model, label, name, items)
            table[name][label] = ({"n/a": result.skipped} if result.skipped else
                                  {"pearson": result.pearson, "spearman": result.spearman, "n": result.n,
                                   "system_pearson": result.system_pearson})
        # s_U needs no reference, so it is measured on every set
        s_unref = unreferenced_scores(scorer, [Item(list(i.context), i.response) for i in items])
        r, _, rho, _ = correlate(human, s_unref)
        table[name]["ruber s_U only"] = {"pearson": r, "spearman": rho, "n": len(items)}
    return table


def load_glove(store: Path) -> GloveTable:
    """The served GloVe table itself, so training and serving share every vector."""
    manifest = read_manifest(Path(store) / "glove-50d")
    verify_files(manifest)
    return GloveTable(manifest, runtime=None)


def _runtime() -> Runtime:
    return Runtime(RuntimeSettings(providers=("CPUExecutionProvider",), intra_op_threads=1, workers=1))


def open_scorer(folder: Path, glove: GloveTable) -> Ruber:
    """The service's RUBER scorer on the artifacts in `folder`."""
    manifest = read_manifest(folder)
    verify_files(manifest)
    return Ruber(manifest, {"glove-50d": glove}, _runtime())
