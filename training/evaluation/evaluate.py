"""`python -m training evaluate`: every served model against people, on every judgement set's dev split.

Models are loaded with the service's own `ModelStore`, so the figures are the served artifacts'. Item-
and system-level correlations go between the `evaluate` markers of docs/evaluation.md and into every
model's card; scatter plots go to docs/plots/. Every reference-free model and part also takes the
synthetic check (synthetic.py), into its own section and the models' cards."""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from collections.abc import Callable

import numpy as np

from service.config import PRECISION_ENV, load_settings
from service.artifacts.runtime import Runtime, RuntimeSettings
from service.scorers.base import Call, EncodeCache, Item, Scorer
from service.stats.correlate import StatsInputError, correlate as correlate_body
from service.stats.correlation import correlation
from service.store.model_store import ModelStore
from training.core import docs_section
from training.core.card import EVALUATE_BEGIN, EVALUATE_END
from training.core.cli import output_dir, output_file, positive_int
from training.core.command_line import command_line, with_environment
from training.core.progress import cpu_description, setup_logging
from training.data import corpora
from training.data.judgements import DEFAULT_DATA_DIR, JudgedItem, SETS, load_set
from training.data.references import Recovery, is_reference_reply, recover
from training.evaluation import parts, synthetic, synthetic_cases
from training.evaluation.held_in import read_whole, trained_text
from training.evaluation.pairwise import MIN_PAIRS
from training.evaluation.reranking import CONTEXT_PART, context_part_scores, pairwise, pairwise_table, reranking_table
from training.evaluation.vectors import SharedVectors
from training.evaluation import figures

log = logging.getLogger("training.evaluate")

BEGIN, END = EVALUATE_BEGIN, EVALUATE_END  # its section of docs/evaluation.md and of every card
MIN_SYSTEMS = 3
BATCH = 256
CI_RESAMPLES = 1000
RUN_ENVIRONMENT = ("DIALSCORE_PROVIDERS", PRECISION_ENV)  # what sentence vectors depend on: named in the command


@dataclass
class Result:
    """One model on one set: item-level and (optionally) system-level correlations."""

    model: str
    set: str
    n: int
    pearson: float | None = None
    pearson_ci: list[float] | None = None  # 95%, contexts resampled (pearson_interval)
    spearman: float | None = None
    system_pearson: float | None = None
    system_spearman: float | None = None
    n_systems: int = 0
    pairwise: float | None = None  # within-context pairwise agreement (training/evaluation/pairwise.py)
    pairs: int = 0  # the reply pairs it counts
    scores: np.ndarray | None = field(default=None, repr=False)
    human: np.ndarray | None = field(default=None, repr=False)
    has_reference: np.ndarray | None = field(default=None, repr=False)  # per scored item
    reply_is_reference: np.ndarray | None = field(default=None, repr=False)  # per scored item
    skipped: str | None = None  # why the model was not run on the set ("needs a reference")


def correlate(human: np.ndarray, scores: np.ndarray) -> tuple[float | None, float | None, float | None, float | None]:
    """(Pearson r, p, Spearman rho, p) as /correlate computes them (its exact small-n p); None where undefined."""
    pearson, rho = (correlation(human, scores, method) for method in ("pearson", "spearman"))
    return pearson["r"], pearson["p"], rho["r"], rho["p"]


def pearson_interval(human: np.ndarray, scores: np.ndarray, contexts: list[str]) -> list[float] | None:
    """Pearson r's 95% percentile bootstrap interval as /correlate gives it with `item_resampling: inputs`:
    contexts drawn whole, every reply rated for one coming with it (replies to one context are not
    independent draws). CI_RESAMPLES resamples, seed 0; None where r is undefined."""
    try:
        body = correlate_body(human.tolist(), {"model": scores.tolist()}, methods=["pearson"], inputs=contexts,
                              item_resampling="inputs", resamples=CI_RESAMPLES, seed=0)
    except StatsInputError:  # too few items
        return None
    return body["metrics"]["model"]["item"]["pearson"]["ci"]


def system_level(human: np.ndarray, scores: np.ndarray, systems: list[str]) -> tuple[float | None, float | None, int]:
    """Pearson and Spearman over per-system means; None with fewer than MIN_SYSTEMS systems."""
    names = sorted(set(systems))
    if len(names) < MIN_SYSTEMS:
        return None, None, len(names)
    labels = np.asarray(systems)
    h = np.asarray([human[labels == s].mean() for s in names])
    m = np.asarray([scores[labels == s].mean() for s in names])
    r, _, rho, _ = correlate(h, m)
    return r, rho, len(names)


def score_items(scorer: Scorer, items: list[JudgedItem], options: dict | None = None, max_refs: int = 4,
                batch: int = BATCH, caches: Callable[[], EncodeCache] = EncodeCache) -> np.ndarray:
    """Scores of a served model for judged items; referenced models keep their best over the references."""
    refs = [list(i.references[:max_refs]) if scorer.reads_reference else [None] for i in items]
    flat: list[Item] = []
    owner: list[int] = []
    for index, (item, references) in enumerate(zip(items, refs)):
        for reference in references or [None]:
            flat.append(Item(list(item.context), item.response, reference))
            owner.append(index)
    out = np.full(len(items), -np.inf)
    for start in range(0, len(flat), batch):
        chunk = flat[start: start + batch]
        scores = scorer.score(chunk, options, caches()).scores
        for j, value in zip(owner[start: start + batch], scores):
            out[j] = max(out[j], value)
    return out


def evaluate_model(scorer: Scorer, name: str, set_name: str, items: list[JudgedItem], max_refs: int = 4,
                   options: dict | None = None, caches: Callable[[], EncodeCache] = EncodeCache) -> Result:
    result = Result(model=name, set=set_name, n=len(items))
    if scorer.kind == "dialogue":
        result.skipped = "scores whole dialogues"
        return result
    if scorer.reads_reference and not any(i.references for i in items):
        result.skipped = "needs a reference"
        return result
    kept = [i for i in items if i.references] if scorer.reads_reference else items
    return measured(result, kept, score_items(scorer, kept, options, max_refs, caches=caches))


def measured(result: Result, kept: list[JudgedItem], scores: np.ndarray) -> Result:
    """`result` filled with every figure of these scores of the items kept."""
    human = np.asarray([i.score for i in kept])
    result.n = len(kept)
    result.scores = scores
    result.human = human
    result.pearson, _, result.spearman, _ = correlate(human, scores)
    if result.pearson is not None:
        result.pearson_ci = pearson_interval(human, scores, ["\n".join(i.context) for i in kept])
    result.pairwise, result.pairs = pairwise(kept, human, scores)
    result.has_reference = np.asarray([bool(i.references) for i in kept])
    result.reply_is_reference = np.asarray([is_reference_reply(i) for i in kept])
    systems = [i.system for i in kept]
    if all(s is not None for s in systems):
        result.system_pearson, result.system_spearman, result.n_systems = system_level(human, scores, systems)
    return result


# --- output ------------------------------------------------------------------------------------
def _cell(value: float | None, bold: bool = False) -> str:
    if value is None:
        return "–"
    text = f"{value:.3f}"
    return f"**{text}**" if bold else text


def markdown(results: dict[str, dict[str, Result]], sets: list[str], models: list[str], command: str,
             split: str, seconds: float, recovered: dict[str, Recovery] | None = None,
             plots: str | None = "plots", kinds: dict[str, str] | None = None,
             context_part: dict[str, Result] | None = None) -> str:
    """The evaluate section: item-level table, system-level table, notes."""
    lines = [BEGIN, "", "## Correlation with human judgements (generated by `evaluate`)", "",
             f"Command: `{command}` ({seconds / 60:.1f} min on a {cpu_description()}, no GPU).", "",
             (f"Split `{split}` of every set (seeded, by context: `training/data/judgements.py`). Each cell is "
             "item-level Pearson r / Spearman ρ with the averaged human score; the best served model's Pearson "
             "per set is bold (where two or more ran); \"n/a\" marks a referenced model on a set without references, \"–\" a constant output. "
             "Referenced models score against each of the first 4 references and keep the best; they run only on items "
             "with a reference, and a cell gives its n where that is fewer than the set's."), ""]
    recovered = {s: r for s, r in (recovered or {}).items() if s in sets}
    if recovered:
        lines += [("References recovered from DailyDialog (`training/data/references.py`: the turn after the "
                   "dialogue whose turns match the item's context, only where that is unambiguous; the original "
                   "papers' reference) for the DailyDialog-based sets without their own, items covered: "
                   + ", ".join(f"{s} {r.gained}/{r.total}" for s, r in recovered.items())
                   + ". Of the covered items, the judged reply is itself the recovered reference (the human reply "
                   "being judged, kept) in "
                   + ", ".join(f"{s} {r.identical}" for s, r in recovered.items()) + "."), ""]
    header = "| model | " + " | ".join(f"{s} (n={_n(results, s)})" for s in sets) + " |"
    lines += [header, "|---|" + "---|" * len(sets)]
    # bold only where there is a contest among the served models (figures.best_models, the README's rule)
    best = {s: figures.best_models({m: r.pearson for m, r in results[s].items() if not m.endswith(PART_SUFFIX)})
            for s in sets}
    for model in models:
        cells = []
        for s in sets:
            r = results[s].get(model)
            if r is None or r.skipped:
                cells.append("n/a")
            else:
                bold = model in best[s]
                n = f" (n={r.n})" if r.n < _n(results, s) else ""
                cells.append(f"{_cell(r.pearson, bold)} / {_cell(r.spearman)}{n}")
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    lines += ["", beats_baselines(results, sets, models)]
    lines += pairwise_table(results, sets, models)
    lines += distinct_reply_table(results, sets, models)
    if kinds and context_part:
        with_part = {s: {**results[s], **({CONTEXT_PART: context_part[s]} if s in context_part else {})} for s in sets}
        lines += reranking_table(with_part, sets, models, kinds, restricted_results(with_part, sets, every_set=True))
    system_sets = [s for s in sets if any(r.n_systems >= MIN_SYSTEMS for r in results[s].values())]
    if system_sets:
        lines += ["", "System level (Pearson r / Spearman ρ over per-system means):", "",
                  "| model | " + " | ".join(
                      f"{s} ({max(r.n_systems for r in results[s].values())} systems)" for s in system_sets) + " |",
                  "|---|" + "---|" * len(system_sets)]
        for model in models:
            cells = []
            for s in system_sets:
                r = results[s].get(model)
                cells.append("n/a" if r is None or r.skipped else f"{_cell(r.system_pearson)} / {_cell(r.system_spearman)}")
            lines.append(f"| {model} | " + " | ".join(cells) + " |")
    if plots is not None:
        lines += ["", "Scatter plots (human score against each metric, like ADEM's Figure 3): "
                  + ", ".join(f"[{s}]({plots}/evaluate-{s}.png)" for s in sets) + "."]
    lines += ["", END]
    return "\n".join(lines) + "\n"


def beats_baselines(results: dict[str, dict[str, Result]], sets: list[str], models: list[str],
                    baselines: tuple[str, ...] = ("bleu4", "rouge-l")) -> str:
    """The issue's bar: on how many sets each model's Pearson exceeds every word-overlap baseline's, each
    distinct set of items once (figures.beats, the README's tally)."""
    rows = {model: {s: {"pearson": r.pearson} for s in sets if (r := results[s].get(model)) is not None}
            for model in (*models, *baselines)}
    tallies = []
    for model in models:
        if model in baselines:
            continue
        won, contested = figures.beats(rows, model, sets, baselines)
        if contested:
            tallies.append(f"{model} {won}/{contested}")
    if not tallies:
        return ""
    return ("Sets where a model's Pearson r beats both BLEU-4 and ROUGE-L (of the distinct sets where all three "
            "ran): " + ", ".join(tallies) + ".")


def without_reference_replies(result: Result, every_set: bool = False) -> Result | None:
    """The same model and set restricted to items that have a reference other than the judged reply.

    Where the judged reply is its own recovered reference, every referenced metric's comparison with
    the reference is at its maximum (minilm-cosine's reference part is 1; its context part still
    varies), and those items are the human replies of the set: they lift word overlap and cosine
    alike, and a reference-free model cannot see them. Restricting every model to the same items
    shows what is left; it is reported beside the main table, which stays the bar. None on a set
    with no such item, unless `every_set` (then the items with a reference, where none is the reply).
    """
    if result.scores is None or result.reply_is_reference is None:
        return None
    if not (result.reply_is_reference.any() or (every_set and result.has_reference.any())):
        return None
    keep = result.has_reference & ~result.reply_is_reference
    out = Result(model=result.model, set=result.set, n=int(keep.sum()))
    if out.n >= 3:
        out.pearson, _, out.spearman, _ = correlate(result.human[keep], result.scores[keep])
    return out


def restricted_results(results: dict[str, dict[str, Result]], sets: list[str], every_set: bool = False,
                       ) -> dict[str, dict[str, Result]]:
    """Per set and model, the results on the items whose reply is not its own reference (sets that have any;
    with `every_set`, every set with references)."""
    return {s: {m: r2 for m, r in results[s].items() if (r2 := without_reference_replies(r, every_set)) is not None}
            for s in sets}


def distinct_reply_table(results: dict[str, dict[str, Result]], sets: list[str], models: list[str]) -> list[str]:
    """Markdown lines: Pearson on the items whose reply is not its own reference (sets that have any)."""
    restricted = restricted_results(results, sets)
    shown = [s for s in sets if restricted[s]]
    if not shown:
        return []
    lines = ["", ("Supplementary, not the bar: Pearson r / Spearman ρ on the items that have a reference "
                  "other than the judged reply itself, every model on the same items (sets where some "
                  "judged replies are their own reference; on the rest nothing changes)."), "",
             "| model | " + " | ".join(f"{s} (n={_n(restricted, s)})" for s in shown) + " |",
             "|---|" + "---|" * len(shown)]
    for model in models:
        cells = [f"{_cell(r.pearson)} / {_cell(r.spearman)}" if (r := restricted[s].get(model)) else "n/a"
                 for s in shown]
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    complete = {s: {**results[s], **restricted[s]} for s in sets}
    bar = beats_baselines(complete, sets, models)
    return lines + (["", f"With these items left out (other sets unchanged): {bar[0].lower()}{bar[1:]}"] if bar else [])


def _n(results: dict[str, dict[str, Result]], set_name: str) -> int:
    return max((r.n for r in results[set_name].values()), default=0)


def write_section(path: Path, section: str) -> None:
    """Replace this command's marked section of `path`; the rest of the file is kept."""
    docs_section.write_section(path, section, BEGIN, END)


def scatter_plot(set_name: str, results: list[Result], path: Path) -> Path:
    """Human score (y) against each metric (x), one panel per model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [r for r in results if r.scores is not None]
    columns = min(4, max(1, len(shown)))
    rows = max(1, -(-len(shown) // columns))
    figure, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.8 * rows), squeeze=False)
    for ax in axes.flat:
        ax.set_visible(False)
    for ax, result in zip(axes.flat, shown):
        ax.set_visible(True)
        jitter = np.random.default_rng(0).uniform(-0.05, 0.05, len(result.human))
        ax.scatter(result.scores, result.human + jitter, s=4, alpha=0.4)
        r = "–" if result.pearson is None else f"{result.pearson:.2f}"
        ax.set_title(f"{result.model} (r={r})", fontsize=9)
        ax.set_xlabel("metric", fontsize=8)
        ax.set_ylabel("human (1-5)", fontsize=8)
        ax.tick_params(labelsize=7)
    figure.suptitle(f"{set_name}: human score vs metric", fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=72)
    plt.close(figure)
    return path


# --- the cards -----------------------------------------------------------------------------------
def served_as(components: list[dict], providers: list[str]) -> str:
    """How a model ran: its encoders' file, precision, provider and OpenVINO's compute (GET /models'
    components), or, for a model without one, the provider its sessions got (`providers`)."""
    return "; ".join(f"{c['name']} {c['file']} as {c['precision']} on {c['provider']}"
                     + (f" computing in {c['compute']}" if c.get("compute") else "")
                     for c in components if c.get("provider")) or providers[0]


def card_entry(results: dict[str, Result], command: str, split: str, served: str = "",
               check: synthetic.Agreement | None = None) -> dict:
    """{command, split, served, item_level: {set: {pearson, spearman, n}}, synthetic} for the sets the model
    ran on (`check`: its synthetic check, where it took one)."""
    item_level = {name: {"pearson": _round(r.pearson), "spearman": _round(r.spearman), "n": r.n,
                         **({"pearson_ci": [_round(v) for v in r.pearson_ci]} if r.pearson_ci else {}),
                         **({"pairwise": _round(r.pairwise), "pairs": r.pairs} if r.pairs >= MIN_PAIRS else {})}
                  for name, r in results.items() if not r.skipped}
    return {"command": command, "split": split, **({"served": served} if served else {}), "item_level": item_level,
            **({"synthetic": synthetic.card_entry(check)} if check else {})}


def write_cards(store_root: Path, results: dict[str, dict[str, Result]], models: list[str], command: str,
                split: str, served: dict[str, str] | None = None,
                checks: dict[str, synthetic.Agreement] | None = None) -> list[str]:
    """Update the card of every model in `models` (`served`: served_as by model; `checks`: the synthetic
    check by model); returns the names written."""
    written = []
    for model in models:
        folder = Path(store_root) / model
        if not (folder / "manifest.json").is_file():
            continue
        entry = card_entry({set_name: per_model[model] for set_name, per_model in results.items()
                            if model in per_model}, command, split, (served or {}).get(model, ""),
                           (checks or {}).get(model))
        figures.write_evaluate_entry(folder, entry)
        written.append(model)
    return written


def _round(value: float | None) -> float | None:
    # Six places: a card prints three, and rounding a 4-place value again could differ from the docs by one.
    return None if value is None else round(float(value), 6)


# --- which models: a served name, or NAME:reference_free for a referenced model's part -------------
PART_SUFFIX = parts.SUFFIX


def model_of(spec: str) -> str:
    """The served model a row reads: `ruber:reference_free` -> `ruber`."""
    return spec.removesuffix(PART_SUFFIX)


def scorer_of(store: ModelStore, spec: str) -> Scorer | Call:
    """What a row is evaluated with: the model, or for NAME:reference_free the model called for its part."""
    scorer = store.scorers[model_of(spec)]
    return parts.part_of(scorer) if spec.endswith(PART_SUFFIX) else scorer


def default_specs(store: ModelStore) -> list[str]:
    """Every served model, and the reference-free part of each referenced model that has one, sorted
    (minilm-cosine's part is the context-part bar of the re-ranking tables already)."""
    rows = [f"{name}{PART_SUFFIX}" for name in parts.models_with_part(store) if name != "minilm-cosine"]
    return sorted([*store.scorers, *rows])


def served_specs(store: ModelStore, models: list[str] | None) -> list[str]:
    """The rows a run gives: `models` where served (a part where its model offers one), else every one."""
    if models is None:
        return default_specs(store)
    return [m for m in models if model_of(m) in store.scorers
            and (not m.endswith(PART_SUFFIX) or parts.has_part(store.scorers[model_of(m)]))]


# --- command line ------------------------------------------------------------------------------
def load_store(root: Path, models: list[str] | None, strict: bool = False):
    """The service's ModelStore on CPU with one thread per session (the machine is shared).

    strict: every model asked for must be served, else exit 2 (commands whose user named them);
    otherwise the ones there are used (callers that take whichever baselines a store holds)."""
    # DIALSCORE_PROVIDERS and DIALSCORE_ENCODER_PRECISION as a worker reads them: the figures are those of what a
    # worker so set serves on this machine, and the cards say which (served_as)
    runtime = Runtime(RuntimeSettings(providers=load_settings().providers, intra_op_threads=1, workers=1,
                                      encoder_precision=os.environ.get(PRECISION_ENV, "auto")))
    if not Path(root).is_dir():
        print(f"error: no model store at {root}", file=sys.stderr)
        raise SystemExit(2)
    store = ModelStore(Path(root), runtime, tuple(dict.fromkeys(model_of(m) for m in models or ())))
    store.load()
    for name, reason in store.failures.items():
        log.warning("not evaluated: %s (%s)", name, reason)
    for component in store.components.values():
        served = component.served_files()
        if served:
            log.info("%s serves %s on %s (%s; %s)", component.name, served.get("precision"), served.get("provider"),
                     served.get("chosen_by"), served.get("provider_chosen_by"))
    unknown = [m for m in models or () if m not in served_specs(store, [m])] if strict else []
    if unknown or (strict and not store.scorers):
        print(f"error: {', '.join(unknown) or 'no model'} is not served from {root} "
              f"(served: {', '.join(sorted(store.scorers)) or 'none'})", file=sys.stderr)
        raise SystemExit(2)
    return store


@dataclass
class Run:
    """What one evaluate run measured (`run`'s answer)."""

    results: dict[str, dict[str, Result]]  # set -> row -> figures
    names: list[str]  # the rows, in order
    recovered: dict[str, Recovery]
    kinds: dict[str, str]
    context_part: dict[str, Result]  # set -> minilm-cosine's context part, where minilm-cosine ran
    served: dict[str, str]  # row -> served_as
    synthetic: dict[str, synthetic.Agreement] = field(default_factory=dict)  # reference-free row -> its check
    cases: list[synthetic_cases.Case] = field(default_factory=list)


def run(store_root: Path, sets: list[str], models: list[str] | None, split: str, max_refs: int,
        data_dir: Path = DEFAULT_DATA_DIR, recover_references: bool = True, vectors: list[Path] = (),
        check: bool = True) -> Run:
    """Every model on every set; also each model's kind, where minilm-cosine is evaluated its context part
    per set (the reference-free bar of the re-ranking table), how each model's encoders ran (served_as)
    and, with `check`, the synthetic check of every reference-free row."""
    store = load_store(store_root, models, strict=True)
    shared = SharedVectors(store, vectors)
    names = served_specs(store, models)
    dialogue = [m for m in names if store.scorers[model_of(m)].kind == "dialogue"]
    if dialogue:
        asked = [m for m in dialogue if models and m in models]
        log.log(logging.WARNING if asked else logging.INFO, "not evaluated at turn level (they score whole "
                "dialogues; their figures are train-mh's section of docs/evaluation.md): %s", ", ".join(dialogue))
        names = [m for m in names if m not in dialogue]
    if not names:  # an empty table would read as a pass
        print(f"error: nothing to evaluate: {', '.join(dialogue)} score(s) whole dialogues, not turn-level items "
              "(M_H is validated by `python -m training train-mh`)", file=sys.stderr)
        raise SystemExit(2)
    results: dict[str, dict[str, Result]] = {}
    recovered: dict[str, Recovery] = {}
    context_part: dict[str, Result] = {}
    total = len(sets) * len(names)
    done = 0
    started = time.monotonic()
    for set_name in sets:
        items = load_set(set_name, split, data_dir)
        if recover_references:
            items, recovery = recover(items, data_dir)
            if recovery:
                recovered[set_name] = recovery
                log.info("%s: references recovered from DailyDialog for %d/%d items (%d the judged reply)",
                         set_name, recovery.gained, recovery.total, recovery.identical)
        results[set_name] = {}
        for name in names:
            t0 = time.monotonic()
            result = evaluate_model(scorer_of(store, name), name, set_name, items, max_refs, caches=shared.cache)
            results[set_name][name] = result
            done += 1
            log.info("evaluate %d/%d %s on %s (n=%d): %s in %.1fs, elapsed %.0fs", done, total, name, set_name,
                     result.n, result.skipped or f"r={result.pearson} rho={result.spearman}",
                     time.monotonic() - t0, time.monotonic() - started)
        if "minilm-cosine" in names:
            context_part[set_name] = measured(Result(CONTEXT_PART, set_name, len(items)), items, context_part_scores(
                store.scorers["minilm-cosine"], items, shared.cache))
    served = {name: served_as([store.components[c].describe() for c in store.scorers[model_of(name)].manifest.uses
                               if c in store.components], store.scorers[model_of(name)].providers()) for name in names}
    done = Run(results, names, recovered, {name: scorer_of(store, name).kind for name in names}, context_part, served)
    if check:
        done.cases, done.synthetic = synthetic_check(store, [n for n in names if done.kinds[n] == "unreferenced"],
                                                     shared, data_dir)
    return done


def synthetic_check(store: ModelStore, free: list[str], shared: SharedVectors, data_dir: Path = DEFAULT_DATA_DIR,
                    ) -> tuple[list[synthetic_cases.Case], dict[str, synthetic.Agreement]]:
    """The cases, and the synthetic check of each reference-free row of `free` and of minilm-cosine's context
    part where minilm-cosine is served; no case where there is no row."""
    scorers: dict[str, synthetic.Scores] = {
        name: lambda items, scorer=scorer_of(store, name): scorer.score(items, None, shared.cache()).scores
        for name in free}
    if "minilm-cosine" in store.scorers and free:
        scorers[CONTEXT_PART] = lambda items: context_part_scores(store.scorers["minilm-cosine"], items, shared.cache)
    if not scorers:
        return [], {}
    started = time.monotonic()
    cases = synthetic_cases.build(corpora.held_aside(data_dir), read_whole(trained_text()))
    log.info("synthetic check: %d pairs built in %.0fs; scoring %s", len(cases), time.monotonic() - started,
             ", ".join(scorers))
    found = {name: synthetic.measure(cases, score, f"synthetic {name}") for name, score in scorers.items()}
    for name, result in found.items():
        log.info("synthetic %s: %.4f", name, result.mean)
    return cases, found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training evaluate", description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    parser.add_argument("--models", nargs="+", default=None,
                        help="served model names, or NAME:reference_free for a referenced model's reference-free "
                             "part (default: all, and those parts)")
    parser.add_argument("--store", type=Path, default=Path("model_store"))
    parser.add_argument("--split", default="dev", choices=["dev", "train", "all"])
    parser.add_argument("--max-refs", type=positive_int, default=4)
    parser.add_argument("--out", type=output_file, default=None,
                        help="Markdown file whose evaluate section is rewritten (default: docs/evaluation.md for a "
                             "full run; a partial one, with --models, --sets, --split, --max-refs or "
                             "--no-recover-references, prints its table instead of replacing the committed one)")
    parser.add_argument("--plots", type=output_dir, default=None,
                        help="folder for the scatter plots (default: docs/plots for a full run, none for a partial one)")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--log", type=Path, default=None)
    parser.add_argument("--no-recover-references", dest="recover_references", action="store_false",
                        help="do not fill in DailyDialog references for sets without their own")
    parser.add_argument("--no-cards", action="store_true",
                        help="do not write the figures into the evaluated models' cards (manifest and README)")
    parser.add_argument("--vectors", type=Path, nargs="+", default=[],
                        help="embedding caches (train-minilm's, train-unref's) to take sentence vectors from where "
                             "the graph that made them is the one served (sha256 checked), on the same provider and "
                             "precision (the training caches: the CPU EP): the same figures, faster")
    parser.add_argument("--no-synthetic", dest="synthetic", action="store_false",
                        help="leave out the synthetic check of the reference-free models (its section and card lines)")
    args = parser.parse_args(argv)
    if args.max_refs < 1:
        parser.error("--max-refs must be at least 1")
    # Every set on its dev split with the default protocol: only such a run may stand in a card.
    whole_protocol = (list(args.sets) == list(SETS) and args.split == "dev" and args.max_refs == 4
                      and args.recover_references)
    full = whole_protocol and args.models is None
    out = args.out or (Path("docs/evaluation.md") if full else None)
    plots = args.plots or (Path("docs/plots") if full else None)
    setup_logging(args.log)
    started = time.monotonic()
    done = run(args.store, args.sets, args.models, args.split, args.max_refs, args.data_dir, args.recover_references,
               args.vectors, args.synthetic)
    command = with_environment(command_line("python -m training evaluate", argv if argv is not None else sys.argv[2:]),
                               RUN_ENVIRONMENT, os.environ)
    if plots is not None:
        for set_name in args.sets:
            path = scatter_plot(set_name, [done.results[set_name][m] for m in done.names],
                                plots / f"evaluate-{set_name}.png")
            log.info("wrote %s", path)
    link = None if plots is None else (os.path.relpath(plots, out.parent) if out is not None else str(plots))
    section = markdown(done.results, args.sets, done.names, command.strip(), args.split, time.monotonic() - started,
                       done.recovered, link, done.kinds, done.context_part)
    check = synthetic.markdown(done.synthetic, done.cases, command.strip()) if done.synthetic else ""
    if out is None:
        print(section + check, end="")
        log.info("a partial run: the table is printed, docs/evaluation.md is left as it is (give --out to write)")
    else:
        write_section(out, section)
        if check:
            docs_section.write_section(out, check, synthetic.BEGIN, synthetic.END)
        log.info("wrote %s", out)
    if args.no_cards or not whole_protocol:
        log.info("cards not written (%s)", "--no-cards" if args.no_cards else "only a run of every set on its dev "
                                                                             "split with the default protocol is")
    else:
        written = write_cards(args.store, done.results, done.names, command.strip(), args.split, done.served,
                              done.synthetic)
        log.info("wrote the figures into the cards of %s", ", ".join(written))
        if full and out is not None:  # the one source of the figures (figures.py), beside the page
            doc = figures.document({m: card_entry({s: done.results[s][m] for s in args.sets if m in done.results[s]},
                                                  command.strip(), args.split)["item_level"]
                                    for m in written}, list(args.sets), command.strip(), args.split)
            figures.write(out.with_suffix(".json"), doc)
            figures.write_card_correlations(args.store, doc)
            log.info("wrote %s", out.with_suffix(".json"))
        # The trivial bars on every card, from the store's figures as they are now: a run of some models
        # (--models) rewrote those models' entries whole, bars left out.
        figures.write_trivial_bars(args.store, figures.from_cards(args.store))
    return 0
