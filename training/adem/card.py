"""adem's card: its templates (cards/adem.md, cards/adem.json) filled from the run's metrics.json and the export."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from training.core.card import Templates, render, render_fields, terms_line
from training.encoders.hred.card import TEMPLATES as HRED
from training.encoders.hred.card import dev_summary, dev_table, head_figures

TEMPLATES = Templates(__file__)
NAME = "adem"


def variant_epochs(training: Mapping[str, Any]) -> str:
    """Best epoch of C-ADEM and R-ADEM; epoch 0 means validation never beat the identity start."""
    parts = []
    for variant in ("c-adem", "r-adem"):
        t = training.get(variant)
        if not t:
            continue
        parts.append(TEMPLATES.phrase("variant", variant=variant.upper(), best_epoch=t["best_epoch"],
                                      epochs_run=t["epochs_run"])
                     + (TEMPLATES.phrase("variant_untrained") if t["best_epoch"] == 0 else ""))
    return "; ".join(parts) + "."


def correlations(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest card's `correlations`: ADEM's, C-ADEM's and R-ADEM's dev figures per set."""
    return {"dev": dev_summary(metrics["dev"], "adem"), "c-adem": dev_summary(metrics["dev"], "c-adem"),
            "r-adem": dev_summary(metrics["dev"], "r-adem")}


def figures(folder: Path, metrics: Mapping[str, Any], parity: Mapping[str, float], dim: int,
            turns: int) -> dict[str, Any]:
    """The figures of adem's card: the `train adem` run's metrics.json, the export's parity, the encoder's turns."""
    t = metrics["training"]["adem"]
    return {**head_figures(folder, metrics, parity, dim, turns),
            "n": t["n"], "alpha": f"{t['alpha']:.4g}", "beta": f"{t['beta']:.4g}", "alpha_repr": repr(float(t["alpha"])),
            "beta_repr": repr(float(t["beta"])),
            **{key: t[key] for key in ("gamma", "lr", "batch_size", "valid_items", "fit_items", "best_epoch", "epochs_run")},
            "variant_epochs": variant_epochs(metrics["training"]), "dev_table": dev_table(metrics["dev"]),
            "correlations": correlations(metrics)}


def card(figures: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest's card of adem (figures: those `figures` returns, or a saved copy)."""
    return render_fields(TEMPLATES.card(NAME), {**HRED.phrases(), **TEMPLATES.phrases(), **figures})


def readme(figures: Mapping[str, Any]) -> str:
    return render(TEMPLATES.readme(NAME), {**HRED.phrases(), **TEMPLATES.phrases(), **figures,
                                           "terms": terms_line(TEMPLATES.card(NAME))})
