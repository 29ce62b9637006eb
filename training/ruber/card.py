"""RUBER's card: its templates (cards/ruber.md, cards/ruber.json) filled from the run's summary (training.json)."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from training.core.card import Templates, render, render_fields, terms_line
from training.core.card import write_card as write_model_card
from training.data.judgements import counted_once
from training.ruber.word_weights import SIF_A

TEMPLATES = Templates(__file__)
NAME = "ruber"


def paper_comparison(corr: Mapping[str, Any], summary: Mapping[str, Any]) -> str:
    """How far the measured correlations are from the paper's Table 1, and why we think so."""
    s_u = [corr[name]["ruber s_U only"]["pearson"] for name in counted_once(corr)  # each distinct set once
           if corr[name].get("ruber s_U only", {}).get("pearson") is not None]
    blended = {k: v["ruber"]["pearson"] for k, v in corr.items()
               if "ruber" in v and v["ruber"].get("pearson") is not None}
    if not s_u:
        return ""
    train, pairs = summary["train"], summary["data"]["train_pairs"]
    batch = summary["train_config"]["batch_size"]
    return TEMPLATES.phrase(
        "paper", max_note=TEMPLATES.phrase("max_note") if summary["blend"]["chosen"] == "max" else "",
        s_u_low=f"{min(s_u):.3f}", s_u_high=f"{max(s_u):.3f}", s_u_mean=f"{np.mean(s_u):.3f}",
        blended=", ".join(f"{k} {v:.3f}" for k, v in blended.items()),
        s_u_gap=f"{TEMPLATES.phrases()['paper_s_u'] - np.mean(s_u):.2f}", minutes_whole=f"{train['minutes']:.0f}",
        steps=f"{train['steps']:,}", batch_size=batch, passes=f"{train['steps'] * batch / pairs:.1f}",
        thousand_pairs=f"{pairs / 1000:.0f}")


def convergence(train: Mapping[str, Any]) -> str:
    """Whether a longer run is worth it, read from the validation history rather than asserted."""
    history, best = train["history"], train["best"]
    if not history:
        return ""
    halfway = [h["loss"] for h in history if h["step"] <= train["steps"] / 2]
    last = history[-1]
    if best["step"] < last["step"] * 0.8:
        return TEMPLATES.phrase("stopped", best_step=f"{best['step']:,}")
    if best["step"] < last["step"]:
        return TEMPLATES.phrase("levelled", best_loss=f"{best['loss']:.4f}", best_step=f"{best['step']:,}",
                                last_loss=f"{last['loss']:.4f}", last_step=f"{last['step']:,}")
    return TEMPLATES.phrase("falling", halfway=TEMPLATES.phrase(
        "halfway", loss=f"{min(halfway):.4f}", step=f"{train['steps'] // 2:,}") if halfway else "")


def reproduce(command: str) -> str:
    """`make train`'s command, which lifts the wall-clock cap: a run that ended within the default cap records a
    command without --minutes, and following it on a slower machine would stop early and give another model."""
    return TEMPLATES.phrase("reproduce" if "--minutes" in command.split() else "reproduce_uncapped", command=command)


def correlations_table(corr: Mapping[str, Any]) -> str:
    """Each model of the training run's measurement (RUBER first) on each dev set: Pearson / Spearman."""
    models = sorted({m for row in corr.values() for m in row}, key=lambda m: (not m.startswith("ruber"), m))
    rows = []
    for set_name, row in corr.items():
        cells = ["n/a" if row.get(m) is None or "n/a" in row[m] else f"{_fmt(row[m]['pearson'])} / "
                 f"{_fmt(row[m]['spearman'])}" for m in models]
        rows.append(f"| {set_name} | " + " | ".join(cells) + " |")
    return "\n".join(["| set | " + " | ".join(models) + " |", "|---|" + "---|" * len(models), *rows])


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def figures(summary: Mapping[str, Any], torch_version: str = torch.__version__) -> dict[str, Any]:
    """The figures of RUBER's card: the run's summary (training.json) and the torch it ran on."""
    config, data, blend, train = summary["config"], summary["data"], summary["blend"], summary["train"]
    frequency = blend["word_weights"] == "frequency"
    normalisation, threads = summary["normalisation"], summary["threads"]
    corr = summary.get("correlations") or {}
    return {
        "margin": config["margin"], "word_weights_note": TEMPLATES.phrase("word_weights_note") if frequency else "",
        "query_turns": config["query_turns"],
        "max_words": config["max_words"], "blend": blend["chosen"], "word_weights": blend["word_weights"],
        "weightings": " | ".join(f"`{w}`" for w in blend["by_word_weights"]), "sif_a": f"{SIF_A:g}",
        "vector_dim": 2 * config["hidden"], "train_pairs": f"{data['train_pairs']:,}",
        "valid_pairs": f"{data['valid_pairs']:,}",
        "train_fingerprint": data["train_fingerprint"], "valid_fingerprint": data["valid_fingerprint"],
        "left_out": (TEMPLATES.phrase("left_out", count=f"{data['dev_text_dialogues_left_out']:,}")
                     if "dev_text_dialogues_left_out" in data else ""),
        "calibration_items": f"{summary['calibration']['items']:,}", "s_ref_range": normalisation["s_ref"],
        "s_ref_frequency": (TEMPLATES.phrase("s_ref_frequency", range=normalisation["s_ref_frequency"])
                            if "s_ref_frequency" in normalisation else ""),
        "s_unref_range": normalisation["s_unref"], "steps": f"{train['steps']:,}",
        "batch_size": summary["train_config"]["batch_size"], "learning_rate": summary["train_config"]["learning_rate"],
        "best_step": train["best"]["step"], "best_loss": f"{train['best']['loss']:.4f}",
        "best_accuracy": f"{100 * train['best']['accuracy']:.1f}", "minutes": f"{train['minutes']:.1f}",
        "threads": TEMPLATES.phrase("one_thread") if threads == 1 else TEMPLATES.phrase("threads", count=threads),
        "torch": torch_version, "convergence": convergence(train),
        "parity": ", ".join(f"{k} {v:.1e}" for k, v in summary["parity"].items()),
        "query_turn_means": ", ".join(f"{t} turn(s) {v:.3f}" for t, v in summary["query_turns"]["mean_pearson"].items()),
        "blend_means": "; ".join(f"`{w}`: " + ", ".join(f"{b} {v:.3f}" for b, v in means.items())
                                 for w, means in blend["by_word_weights"].items()),
        "correlations_table": correlations_table(corr), "paper_comparison": paper_comparison(corr, summary),
        "reproduce": reproduce(summary["command"])}


def card(summary: Mapping[str, Any], correlations: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest's card: what /models serves of this run (the measured `correlations` as far as measured)."""
    blend = summary["blend"]
    return render_fields(TEMPLATES.card(NAME), {
        "frequency_summary": TEMPLATES.phrase("frequency_summary") if blend["word_weights"] == "frequency" else "",
        "train_pairs_count": summary["data"]["train_pairs"], "minutes": f"{summary['train']['minutes']:.1f}",
        "machine": summary["machine"], "blend": blend["chosen"], "word_weights": blend["word_weights"],
        "query_turns": summary["query_turns"]["chosen"], "correlations": dict(correlations)})


def readme(figures: Mapping[str, Any]) -> str:
    return render(TEMPLATES.readme(NAME), {**figures, "terms": terms_line(TEMPLATES.card(NAME))})


def write_card(folder: Path, summary: Mapping[str, Any]) -> Path:
    """The run's README.md."""
    return write_model_card(folder, readme(figures(summary)))
