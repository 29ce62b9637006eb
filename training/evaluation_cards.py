"""`evaluate`'s figures into each served model's card, so /models answers "how well does it agree
with people?" for every model, the untrained baselines included (their cards had no correlations).

The card in manifest.json gets `evaluate`: the command, the split and item-level Pearson/Spearman
with n per set. The README gets the same as a marked section, except for the -minilm models,
whose README is rewritten from the manifest by their own writer and already holds this table
(`minilm-report`, the same protocol). Only the card changes, never an artifact.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from service.manifest import update_card
from training.core import docs_section

if TYPE_CHECKING:
    from training.evaluate import Result

BEGIN = "<!-- evaluate:begin -->"
END = "<!-- evaluate:end -->"
OWN_README_TABLE = ("adem-minilm", "ruber-minilm", "autojudge-minilm")


def card_entry(results: dict[str, "Result"], command: str, split: str) -> dict:
    """{command, split, item_level: {set: {pearson, spearman, n}}} for the sets the model ran on."""
    item_level = {name: {"pearson": _round(r.pearson), "spearman": _round(r.spearman), "n": r.n}
                  for name, r in results.items() if not r.skipped}
    return {"command": command, "split": split, "item_level": item_level}


def write_cards(store_root: Path, results: dict[str, dict[str, "Result"]], models: list[str], command: str,
                split: str) -> list[str]:
    """Update the card of every model in `models`; returns the names written."""
    written = []
    for model in models:
        folder = Path(store_root) / model
        if not (folder / "manifest.json").is_file():
            continue
        entry = card_entry({set_name: per_model[model] for set_name, per_model in results.items()
                            if model in per_model}, command, split)
        update_card(folder, evaluate=entry)
        if model not in OWN_README_TABLE and (folder / "README.md").is_file():
            docs_section.write_section(folder / "README.md", readme_section(entry), BEGIN, END)
        written.append(model)
    return written


def readme_section(entry: dict) -> str:
    lines = [BEGIN, "", "## Agreement with people on the development sets", "",
             f"Item-level correlation with the averaged human score, `{entry['split']}` split of each set. "
             f"Written by `{entry['command']}` (the full table, every model side by side, is in "
             "docs/evaluation.md).", "",
             "| set | n | Pearson r | Spearman ρ |", "|---|---|---|---|"]
    for name, row in entry["item_level"].items():
        lines.append(f"| {name} | {row['n']} | {_cell(row['pearson'])} | {_cell(row['spearman'])} |")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def _round(value: float | None) -> float | None:
    # Six places: a card prints three, and rounding a 4-place value again could differ from the docs by one.
    return None if value is None else round(float(value), 6)


def _cell(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"
