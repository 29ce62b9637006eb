"""docs/evaluation.json: the served models' development figures, the one source the README's standings,
every card's `correlations`, `GET /models` and docs/evaluation.md agree with (tests/training/evaluation/
test_figures.py holds them to it).

`python -m training evaluate` writes it beside docs/evaluation.md on a full run, and the served figures
into each card (`correlations`, rewritten from `item_level`, so a card's dev figure is the served
model's, never its training run's). `python -m training figures` writes it again from the `evaluate`
entries that run left in the cards, without scoring anything."""
from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from service.artifacts.manifest import read_manifest
from service.artifacts.manifest import update_card as update_manifest_card
from training.core.card import EVALUATE_BEGIN, EVALUATE_END, TRIVIAL_BARS, evaluate_section, write_measured_section
from training.core.turn_cards import FROM_MANIFEST, rewrite_readme
from training.data.judgements import SETS, counted_once

PATH = Path("docs/evaluation.json")
BASELINES = ("bleu4", "rouge-l")  # the bar a learned metric must clear (README's standings)
TIE = 1e-12
CORRELATIONS_COMMAND = ("python -m training evaluate (the served model; docs/evaluation.json; a referenced model "
                        "keeps its best score over an item's first four references, its rule for several)")

Rows = Mapping[str, Mapping[str, Mapping[str, Any]]]  # model -> set -> {pearson, spearman, n, ...}


def best_models(pearsons: Mapping[str, float | None]) -> set[str]:
    """The models with the highest Pearson r on a set, where at least two have one (docs/evaluation.md's bold)."""
    found = {m: r for m, r in pearsons.items() if r is not None}
    if len(found) < 2:
        return set()
    top = max(found.values())
    return {m for m, r in found.items() if abs(r - top) < TIE}


def beats(item_level: Rows, model: str, sets: list[str], baselines: tuple[str, ...] = BASELINES) -> tuple[int, int]:
    """(sets where `model`'s Pearson r exceeds every baseline's, sets where all of them have one), each
    distinct set of items counted once (judgements.counted_once)."""
    def pearson(name: str, row: str) -> float | None:
        return item_level.get(row, {}).get(name, {}).get("pearson")

    contested = counted_once(name for name in sets
                             if all(pearson(name, row) is not None for row in (model, *baselines)))
    won = sum(all(pearson(name, model) > pearson(name, b) for b in baselines) for name in contested)
    return won, len(contested)


def standings(item_level: Rows, sets: list[str]) -> dict[str, dict[str, list[int]]]:
    """Per model: `beats_bleu4_and_rouge_l` [won, contested] (the baselines themselves left out) and `best`
    [sets it is best on, sets with a contest], each distinct set of items counted once."""
    best = {name: best_models({m: rows.get(name, {}).get("pearson") for m, rows in item_level.items()})
            for name in sets}
    contested = counted_once(name for name in sets if best[name])
    out: dict[str, dict[str, list[int]]] = {}
    for model in item_level:
        entry = {"best": [sum(model in best[name] for name in contested), len(contested)]}
        if model not in BASELINES:
            entry["beats_bleu4_and_rouge_l"] = list(beats(item_level, model, sets))
        out[model] = entry
    return out


def document(item_level: Rows, sets: list[str], command: str, split: str) -> dict[str, Any]:
    """What docs/evaluation.json holds: the run, the figures by model and set, the standings."""
    rows = {model: {name: dict(per_set[name]) for name in sets if name in per_set}
            for model, per_set in sorted(item_level.items())}
    return {"command": command, "split": split, "sets": list(sets), "item_level": rows,
            "standings": standings(rows, list(sets))}


def served_correlations(rows: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """A card's `correlations` from the served model's figures: {set: {pearson, spearman, n, pearson_ci?}}."""
    return {name: {key: row[key] for key in ("pearson", "spearman", "n", "pearson_ci") if key in row}
            for name, row in rows.items()}


def training_run(correlations: Any, command: str | None) -> dict[str, Any]:
    """A card's `training_run`: figures measured otherwise than on the served model, and by what."""
    return {"note": "measured by the training run or minilm-report, not on the served model: the served "
                    "model's figures are `correlations` and `evaluate`",
            **({"command": command} if command else {}), "correlations": correlations}


def write_card_correlations(store: Path, doc: Mapping[str, Any]) -> list[str]:
    """The `correlations` of every evaluated model's card that has them set to its served figures, the READMEs
    rendered from the manifest rendered again; returns the models written. Figures another command wrote
    there (a training run's, minilm-report's) move to `training_run`, named as such. A card without
    `correlations` shows the served figures under `evaluate` alone."""
    written = []
    for model, rows in doc["item_level"].items():
        folder = Path(store) / model
        card = read_manifest(folder).card if (folder / "manifest.json").is_file() else {}
        if "correlations" not in card:
            continue
        changes: dict[str, Any] = {"correlations": served_correlations(rows), "correlations_command": CORRELATIONS_COMMAND}
        if card.get("correlations_command") != CORRELATIONS_COMMAND:
            changes["training_run"] = training_run(card["correlations"], card.get("correlations_command"))
        update_manifest_card(folder, **changes)
        if model in FROM_MANIFEST:
            rewrite_readme(folder)
        written.append(model)
    return written


def write_evaluate_entry(folder: Path, entry: Mapping[str, Any]) -> None:
    """A card's `evaluate` entry set to `entry`, and its README's section written again (a model whose
    README is rendered from its manifest whole, else the measured section alone)."""
    update_manifest_card(folder, evaluate=dict(entry))
    if folder.name in FROM_MANIFEST:  # its template shows evaluate's section, or a table of its own instead
        rewrite_readme(folder)
    elif (folder / "README.md").is_file():
        write_measured_section(folder, evaluate_section(entry), EVALUATE_BEGIN, EVALUATE_END)


def write_trivial_bars(store: Path, doc: Mapping[str, Any]) -> list[str]:
    """Every evaluated card but the bars' own given the trivial bars' Pearson r on its sets (its `evaluate`
    entry's `trivial`), and its README's section written again; returns the models written."""
    written = []
    for model, rows in doc["item_level"].items():
        folder = Path(store) / model
        card = read_manifest(folder).card if (folder / "manifest.json").is_file() else {}
        if model in TRIVIAL_BARS or not card.get("evaluate"):
            continue
        bars = {name: {bar: doc["item_level"].get(bar, {}).get(name, {}).get("pearson") for bar in TRIVIAL_BARS}
                for name in rows}
        write_evaluate_entry(folder, {**card["evaluate"], "trivial": bars})
        written.append(model)
    return written


def write(path: Path, doc: Mapping[str, Any]) -> None:
    Path(path).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def from_cards(store: Path) -> dict[str, Any]:
    """The document rebuilt from the `evaluate` entries `python -m training evaluate` wrote into the cards."""
    entries = {}
    for folder in sorted(p.parent for p in Path(store).glob("*/manifest.json")):
        entry = read_manifest(folder).card.get("evaluate")
        if entry:
            entries[folder.name] = entry
    splits = {e["split"] for e in entries.values()}
    if splits != {"dev"}:
        raise SystemExit(f"the cards hold figures of the {sorted(splits)} splits: run python -m training evaluate")
    # A model evaluated alone (--models) since the last full run names its own command.
    commands = "; ".join(sorted({e["command"] for e in entries.values()}))
    return document({m: e["item_level"] for m, e in entries.items()}, list(SETS), commands, "dev")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m training figures", description=__doc__.split("\n\n")[-1])
    parser.add_argument("--store", type=Path, default=Path("model_store"))
    parser.add_argument("--out", type=Path, default=PATH)
    args = parser.parse_args(argv)
    doc = from_cards(args.store)
    write(args.out, doc)
    written = write_card_correlations(args.store, doc)
    barred = write_trivial_bars(args.store, doc)
    print(f"wrote {args.out} ({len(doc['item_level'])} models), the correlations of {len(written)} cards and "
          f"the trivial bars of {len(barred)}")
    return 0
