"""The cards of the heads on MiniLM's turn vectors and of minilm-cosine, their bar. Their templates sit in each
metric's cards/ folder; the README is rendered from the manifest alone, so a measuring command that changes the
card renders it again; the manifest's card is rendered at training time from the run's figures."""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from service.artifacts.manifest import Manifest, read_manifest
from service.artifacts.manifest import update_card as update_manifest_card
from training.core.card import (PEARSON_CI_NOTE, Templates, cell, manifest_figures, paragraphs, pearson_cell,
                                render, render_fields, write_card)
from training.data.judgements import ALIASES, SETS, TRAINING_SETS

ENCODER = "minilm-l6"
HEADS_VERSION = "2026.11.2"  # of the three heads: clients that cache scores by version see new weights
# The models whose README is rendered from their manifest alone.
FROM_MANIFEST = ("adem-minilm", "ruber-minilm", "autojudge-minilm", "minilm-cosine")
TRAINING = Path(__file__).resolve().parents[1]
SHARED = Templates(__file__)
ENCODER_PHRASES = TRAINING / "encoders" / "minilm" / "cards" / "phrases.json"
# Where the code the cards name lives (a card records the files of the run that made it).
CODE = {"next_turn_code": "training/core/next_turn.py", "degenerate_code": "training/data/degenerate.py"}


def templates_of(name: str) -> Templates:
    """The Templates of the package whose cards/ folder holds `name`'s README template."""
    found = [path.parent.parent for path in TRAINING.glob(f"**/cards/{name}.md")]
    if len(found) != 1:
        raise LookupError(f"{len(found)} README templates named {name}.md under {TRAINING}")
    return Templates(found[0] / "__init__.py")


def shared_phrases() -> dict[str, str]:
    """The sentences the cards of models on MiniLM share (training/core/cards, training/encoders/minilm/cards)."""
    return {**json.loads(ENCODER_PHRASES.read_text(encoding="utf-8")),
            **json.loads((SHARED.folder / "phrases.json").read_text(encoding="utf-8"))}


def alias_pairs(sets: tuple[str, ...]) -> str:
    """Each set of `sets` that copies another of them, with the set it copies (empty where none does)."""
    return " and ".join(f"{alias} repeats {original}" for alias, original in ALIASES.items()
                     if alias in sets and original in sets)


def aliases_read(sets: tuple[str, ...], phrase: str) -> str:
    """A card's clause (`phrase`, the shared phrase `aliases`) on the copies among the rated sets a fit reads,
    whose ratings it reads twice; empty where there are none."""
    pairs = alias_pairs(sets)
    return render(phrase, {"alias_pairs": pairs}) if pairs else ""


def head_figures(model: str, config: Mapping[str, Any], seconds: float, model_config: Mapping[str, Any],
                 search: list[dict] | None, dev: Mapping[str, float] | None, code: Mapping[str, str] = CODE
                 ) -> dict[str, Any]:
    """The figures of a trained head's card (its config as vars(train_minilm.Config) stores it)."""
    next_turn = config.get("next_turn_epochs", 0) > 0
    reddit = " --reddit" if config.get("reddit_positives") else ""
    figures: dict[str, Any] = {
        "model": model, "encoding": config["encoding"], "pooling": config["pooling"], "seconds": f"{seconds:.0f}",
        "next_turn_epochs": config.get("next_turn_epochs", 0), **code, "reddit": reddit,
        "training_sets": ", ".join(TRAINING_SETS),
        "measured_only_sets": ", ".join(name for name in SETS if name not in TRAINING_SETS),
        "blend": config.get("blend", "arithmetic"), "alpha": repr(model_config.get("alpha")),
        "beta": repr(model_config.get("beta")), "config": dict(config), "search": search or None,
        "blend_dev_pearson": config.get("blend_dev") or None,
        "correlations": {k: {"pearson": round(v, 4)} for k, v in (dev or {}).items()}}
    phrases = shared_phrases()
    figures["aliases"] = aliases_read(TRAINING_SETS, phrases.pop("aliases"))
    for name, wanted in (("negative_samples", True), ("next_turn_included", next_turn),
                         ("next_turn_texts", next_turn), ("next_turn_training", next_turn),
                         ("chitchat_licence", next_turn), ("reddit_licence", bool(reddit)),
                         ("gpl", model == "autojudge-minilm"), ("recovered", bool(config.get("recover_references")))):
        figures[name] = render(phrases.pop(name), figures) if wanted else ""
    return {**{name: render(text, figures) for name, text in phrases.items()}, **figures}


def head_card(model: str, figures: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest `card` of a trained head, from its template and head_figures."""
    return render_fields(templates_of(model).card(model), figures)


def tables(card: Mapping[str, Any]) -> str:
    """What the card records of the model's development-set figures: its table (minilm-report's, or the
    training run's), the context encodings its search tried and, for ruber-minilm, each blend's figures."""
    parts = []
    correlations = card.get("correlations") or {}
    if correlations:
        lines = ["### Measured correlations (development split, `training.data.judgements`)", "",
                 "| set | n | Pearson r | Spearman rho |", "|---|---|---|---|"]
        for name, row in correlations.items():
            lines.append(f"| {name} | {row.get('n', '')} | {pearson_cell(row)} | {cell(row.get('spearman'))} |")
        if card.get("correlations_command"):
            lines += ["", f"Measured with `{card['correlations_command']}`."]
        if any(row.get("pearson_ci") for row in correlations.values()):
            lines[-1] += f" {PEARSON_CI_NOTE}"
        parts.append("\n".join(lines))
    if card.get("search"):
        lines = ["### Context encoding: what was tried (mean dev Pearson over the sets it is measured on)", "",
                 "| context encoding | pooling | mean dev r | per set |", "|---|---|---|---|"]
        for row in card["search"]:
            per_set = ", ".join(f"{k} {v:.3f}" for k, v in row["dev_pearson"].items())
            lines.append(f"| {row['encoding']} | {row['pooling']} | {row['mean']:.3f} | {per_set} |")
        parts.append("\n".join(lines))
    if card.get("blend_dev_pearson"):
        blends = card["blend_dev_pearson"]
        sets = list(next(iter(blends.values())))
        lines = ["### Blend: development-set Pearson of each (first reference; the best mean is the default)", "",
                 "| blend | " + " | ".join(sets) + " | mean |", "|---|" + "---|" * (len(sets) + 1)]
        for how, row in blends.items():
            lines.append(f"| {how} | " + " | ".join(f"{row[k]:.3f}" for k in sets)
                         + f" | {float(np.mean(list(row.values()))):.3f} |")
        parts.append("\n".join(lines))
    return paragraphs(*parts)


def readme(manifest: Manifest) -> str:
    """The README of a model in FROM_MANIFEST, from its template and its manifest alone."""
    figures = manifest_figures(manifest)
    figures["tables"] = tables(manifest.card)
    return render(templates_of(manifest.name).readme(manifest.name), figures)


def write_readme(folder: Path, manifest: Manifest) -> None:
    write_card(folder, readme(manifest))


def update_card(folder: Path, **changes: Any) -> Manifest:
    """The manifest with card fields changed (service's update_card), then the README rendered again."""
    written = update_manifest_card(folder, **changes)
    write_readme(folder, written)
    return written


def rewrite_readme(folder: Path) -> None:
    """The README of a model in FROM_MANIFEST rendered again from its manifest (after another command changed it)."""
    write_readme(folder, read_manifest(folder))
