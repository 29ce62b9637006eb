"""Model cards: the README.md beside every artifact in model_store/, and the fields measurements add."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# Card fields that measuring commands (evaluate, degenerate, minilm-report) write into a manifest.
MEASURED_CARD_FIELDS = ("evaluate", "degenerate", "correlations", "correlations_command")


def with_measured_fields(card: dict[str, Any], folder: Path) -> dict[str, Any]:
    """`card` with the measured fields of the card already in `folder`, in that card's key order.

    For an *untrained* model's manifest written again: nothing it scores with changed, so its
    figures still hold, and rewriting it (`baselines`, `minilm-cosine`) used to drop them from the
    committed card until `evaluate` ran again. The old order is kept so that a rewrite with nothing
    new leaves the file byte for byte as it was."""
    path = Path(folder) / "manifest.json"
    old = (json.loads(path.read_text(encoding="utf-8")).get("card") or {}) if path.is_file() else {}
    merged = {key: card[key] if key in card else value for key, value in old.items()
              if key in card or key in MEASURED_CARD_FIELDS}
    return {**merged, **{key: value for key, value in card.items() if key not in merged}}


def write_readme(folder: Path, text: str) -> None:
    (Path(folder) / "README.md").write_text(text.rstrip() + "\n", encoding="utf-8")


# The degenerate check's section of a card (docs/evaluation.md has every model in one section of its own).
DEGENERATE_BEGIN, DEGENERATE_END = "<!-- degenerate-card:begin -->", "<!-- degenerate-card:end -->"


def degenerate_lines(shares: dict[str, float]) -> list[str]:
    """A model card's section on the degenerate check: the share per kind of degenerate reply."""
    return ["## Degenerate replies (share scored below the human reply; `python -m training degenerate`)", "",
            *(f"- {kind}: {share:.1%}" for kind, share in shares.items())]


def degenerate_section(shares: dict[str, float]) -> str:
    """degenerate_lines between markers, for READMEs their trainer writes (degenerate replaces it in place)."""
    return "\n".join([DEGENERATE_BEGIN, "", *degenerate_lines(shares), "", DEGENERATE_END]) + "\n"


# `evaluate`'s section of a card: the same markers as its section of docs/evaluation.md.
EVALUATE_BEGIN, EVALUATE_END = "<!-- evaluate:begin -->", "<!-- evaluate:end -->"


def evaluate_section(entry: dict) -> str:
    """`evaluate`'s figures of one model (its card's `evaluate` entry) between markers, for its README."""
    lines = [EVALUATE_BEGIN, "", "## Agreement with people on the development sets", "",
             f"Item-level correlation with the averaged human score, `{entry['split']}` split of each set. "
             f"Written by `{entry['command']}` (the full table, every model side by side, is in "
             "docs/evaluation.md).", "",
             "| set | n | Pearson r | Spearman ρ |", "|---|---|---|---|"]
    for name, row in entry["item_level"].items():
        lines.append(f"| {name} | {row['n']} | {_cell(row['pearson'])} | {_cell(row['spearman'])} |")
    lines += ["", EVALUATE_END]
    return "\n".join(lines) + "\n"


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"
