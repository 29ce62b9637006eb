"""The cards of the stacked reference-free models: their templates (cards/unref.md, cards/unref.json) filled
from the fit, the recipe and the run; evaluate and degenerate add their sections."""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from service.artifacts.manifest import Manifest
from training.core.card import Templates, manifest_figures, render, render_fields
from training.core.turn_cards import aliases_read, shared_phrases
from training.unref.recipes import MINILM, RECIPES, SAMPLES_DEGENERATE_AND_SHUFFLED, Recipe

TEMPLATES = Templates(__file__)
TEMPLATE = "unref"  # the template of a recipe that names none of its own (Recipe.template)


def heads_note(recipe: Recipe, served_next_turn: bool) -> str:
    """Where each head graph of the folder comes from, and which of them the fit read out of fold."""
    notes = []
    for file, source in recipe.heads.items():
        if source.served:
            note = TEMPLATES.phrase("head.served", model=source.model)
            if source.rated:
                note += TEMPLATES.phrase("head.served_rated", model=source.model)
                note += "" if served_next_turn else TEMPLATES.phrase("head.pairs")
            else:
                note += TEMPLATES.phrase("head.served_unrated")
        else:
            note = TEMPLATES.phrase("head.trained", model=source.model, encoder=source.encoder)
            note += TEMPLATES.phrase("head.out_of_fold") if source.rated else ""
        notes.append(TEMPLATES.phrase("head", file=file, note=note))
    return "; ".join(notes) or TEMPLATES.phrase("head.none")


# Every recipe is fitted on the judged training sets (DailyDialog-derived and xDial-Eval among them): their terms.
JUDGED_TERMS: dict[str, Any] = {
    "license": "CC-BY-NC-SA-4.0 AND GPL-3.0-only AND O-UDA-1.0 AND CC-BY-4.0 AND Apache-2.0 AND MIT AND LicenseRef-unstated",
    "commercial_use": False,
    "license_reason": ("Its weights are fitted on the nine judged sets, among them xDial-Eval (GPL-3.0) and sets drawn "
                       "from DailyDialog, with DailyDialog++ negatives, over Apache-2.0 encoders: DailyDialog's CC "
                       "BY-NC-SA 4.0 (non-commercial, share-alike) decides; GPL-3.0 adds copyleft."),
}


def card_figures(recipe: Recipe, fit: Mapping[str, Any], seconds: float, machine: str, argv: list[str]) -> dict[str, Any]:
    """What the card template of a fitted recipe reads, from the run (its time, machine and command line)."""
    shared = shared_phrases()
    encoders = "; ".join(shared["encoder_licence"] if e == MINILM else TEMPLATES.phrase(f"licence.{e}")
                         for e in recipe.uses)
    return {"recipe_summary": TEMPLATES.phrase(f"recipe.{recipe.name}"),
            "encoder_cost": TEMPLATES.phrase("cost.minilm" if recipe.uses == (MINILM,) else "cost.mpnet"),
            "encoder_pass": TEMPLATES.phrase(f"pass.{recipe.uses[0]}"),
            "copy_penalties": TEMPLATES.phrase(f"penalties.{recipe.uses[0]}"),
            "copy_limits": TEMPLATES.phrase(f"copy_limits.{recipe.uses[0]}"),
            "shuffled_probe": TEMPLATES.phrase(f"shuffled_probe.{recipe.uses[0]}"),
            "encoder_name": TEMPLATES.phrase(f"encoder.{recipe.uses[0]}"),
            "heads": heads_note(recipe, served_next_turn="--served-next-turn" in argv),
            "encoder_licences": encoders, "judged_licences": shared["judged_licences"],
            "ruber_licences": shared["ruber_licences"], "seconds": f"{seconds:.0f}",
            "settings": fit["settings_tried"], "machine": machine, "fit": dict(fit), "argv": portable_command(argv),
            "template": recipe.template, "model": recipe.name, "scan_encoder": recipe.uses[0],
            "negative_samples": shared["negative_samples"], "aliases": aliases_read(recipe.rated_sets, shared["aliases"]),
            **repetition_phrases(recipe), **JUDGED_TERMS}


def repetition_phrases(recipe: Recipe) -> dict[str, str]:
    """What the card adds for a recipe whose margin term reads the DSTC7 repetitions and shuffled copies
    beside its samples."""
    added = recipe.negatives == SAMPLES_DEGENERATE_AND_SHUFFLED
    return {key: TEMPLATES.phrase(f"{phrase}.shuffled") if added else "" for key, phrase in
            (("word_penalties", "words"), ("repetition_negatives", "negatives"), ("copy_history", "copy_history"))}


def portable_command(argv: list[str]) -> str:
    """The command line as a card prints it: each --cache folder as $CACHE/<its name>, not this machine's path."""
    return " ".join(re.sub(r"=.*/([^/]+)/?$", r"=$CACHE/\1", arg) if before == "--cache" else arg
                    for before, arg in zip(["", *argv], argv))


def card(figures: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest's card of a fitted recipe (card_figures)."""
    return render_fields(TEMPLATES.card(figures.get("template", TEMPLATE)), figures)


def signals_table(config: Mapping[str, Any]) -> str:
    """The signals with the statistics they are standardised by and their weights, as the score uses them."""
    phrases = TEMPLATES.phrases()
    lines = [render(phrases["signals"], {"bias": f"{config['bias']:.6f}"}), "",
             "| signal | encoder | what it is | mean | sd | weight | weight on x |", "|---|---|---|---|---|---|---|"]
    for spec in config["signals"]:
        what = phrases.get(f"signal.{spec['name']}", spec["source"])
        if spec["source"] == "head":
            what += f" (`{spec['head']}`)"
        lines.append(f"| {spec['name']} | {spec.get('encoder', '–')} | {what} | {spec['mean']:.6f} | {spec['sd']:.6f} | "
                     f"{spec['weight']:.6f} | {spec['weight'] / spec['sd']:.6f} |")
    return "\n".join(lines)


def search_table(fit: Mapping[str, Any]) -> str:
    """The leave-one-set-out search: its best settings and the one chosen."""
    rows = fit["search"]
    groups = list(rows[0]["per_group"])
    measured = any(row["negatives_ordered"] is not None for row in rows)
    lines = [TEMPLATES.phrase("search" if measured else "search.no_negatives", groups=len(groups),
                              group_names=", ".join(groups), settings=fit["settings_tried"], shown=len(rows)), "",
             "| lambda | target | weighting | signed | rank | LOSO r | worst group | LOSO pairwise | negatives ordered |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        chosen = " (chosen)" if all(row[k] == fit["chosen"][k] for k in ("lam", "target", "weighting", "nonneg", "rank")) else ""
        lines.append(f"| {row['lam']:g}{chosen} | {row['target']} | {row['weighting']} | {row['nonneg']} | {row['rank']:g} | "
                     f"{row['loso_pearson']:.4f} | {row['loso_worst']:.4f} | {_f(row['loso_pairwise'])} | "
                     f"{_f(row['negatives_ordered'])} |")
    return "\n".join(lines)


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"


def readme(manifest: Manifest) -> str:
    """The README of a stacked model, from its template and its manifest."""
    figures = {**manifest_figures(manifest), "signals_table": signals_table(manifest.config),
               "search_table": search_table(manifest.card["fit"])}
    recipe = RECIPES.get(manifest.name)
    return render(TEMPLATES.readme(recipe.template if recipe else TEMPLATE), figures)
