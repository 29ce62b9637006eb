"""autojudge's card: its templates (cards/autojudge.md, cards/autojudge.json) filled from the run's metrics.json
and the export."""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from training.core.card import Templates, render, render_fields, terms_line
from training.encoders.hred.card import TEMPLATES as HRED
from training.encoders.hred.card import dev_summary, dev_table, fmt, head_figures

TEMPLATES = Templates(__file__)
NAME = "autojudge"
SPLITS = ("pearson", "spearman", "mae")


def diff(value: float | None, paper: float) -> str:
    return "–" if value is None else f"{value - paper:+.3f}"


def correlations(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest card's `correlations`: the dev figures per set and the paper's Table 1 splits."""
    convo, system = metrics["cross_validation"]["convo_split"], metrics["cross_validation"]["system_split"]
    return {"dev": dev_summary(metrics["dev"], "autojudge"), "convo_split": {k: convo[k] for k in SPLITS},
            "system_split": system and {k: system[k] for k in SPLITS}}


def figures(folder: Path, metrics: Mapping[str, Any], parity: Mapping[str, float], dim: int,
            turns: int) -> dict[str, Any]:
    """The figures of autojudge's card: the `train autojudge` run's metrics.json (its dev report and the paper's
    Table 1 cross-validations), the export's parity, the encoder's turns."""
    t, phrases = metrics["training"], TEMPLATES.phrases()
    convo, system = metrics["cross_validation"]["convo_split"], metrics["cross_validation"]["system_split"]
    system_row = (TEMPLATES.phrase("system_row", folds=system["folds"], sets=", ".join(system["sets"]),
                                   paper_system=phrases["paper_system"], **{k: fmt(system[k]) for k in SPLITS})
                  if system else TEMPLATES.phrase("no_system_row", paper_system=phrases["paper_system"]))
    return {**head_figures(folder, metrics, parity, dim, turns),
            "alpha": f"{t['alpha']:.4g}", "beta": f"{t['beta']:.4g}",
            **{key: t[key] for key in ("lr", "batch_size", "valid_items", "fit_items", "best_epoch", "epochs_run")},
            "convo_folds": convo["folds"], **{f"convo_{k}": fmt(convo[k]) for k in SPLITS},
            "system_row": system_row, "dev_table": dev_table(metrics["dev"]),
            "convo_diff": diff(convo["pearson"], phrases["paper_convo_pearson"]),
            "system_pearson": fmt(system["pearson"]) if system else "–",
            "system_diff": diff(system["pearson"] if system else None, phrases["paper_system_pearson"]),
            "correlations": correlations(metrics)}


def card(figures: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest's card of autojudge (figures: those `figures` returns, or a saved copy)."""
    return render_fields(TEMPLATES.card(NAME), {**HRED.phrases(), **TEMPLATES.phrases(), **figures})


def readme(figures: Mapping[str, Any]) -> str:
    return render(TEMPLATES.readme(NAME), {**HRED.phrases(), **TEMPLATES.phrases(), **figures,
                                           "terms": terms_line(TEMPLATES.card(NAME))})
