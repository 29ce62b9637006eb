"""The model-card template: every README.md in model_store/ has SECTIONS as its headings, in order.

Each family's card.py fills the sections; the manifest's `card` dict (what GET /models serves) keeps
its own keys. Measuring commands put their sections into Evaluation between markers, replaced in place."""
from __future__ import annotations

import json
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

from service.artifacts.manifest import Manifest
from training.core.docs_section import write_section

SECTIONS = ("Description", "Intended uses", "Inputs and outputs", "Training data and licence", "Evaluation",
            "Limitations and bias", "Reproduce", "Citation")
AFTER_EVALUATION = "## Limitations and bias"  # a measured section without its markers yet goes in before it
# The audit that found the limits the served cards state, by its date: the manifests of the untrained
# models are rewritten from this code and must keep their text byte for byte.
AUDIT = "measured on the served model"
# Card fields that measuring commands (evaluate, degenerate, minilm-report) write into a manifest.
MEASURED_CARD_FIELDS = ("evaluate", "degenerate", "correlations", "correlations_command")
# The markers of a card's measured sections: evaluate's are those of its section of docs/evaluation.md.
EVALUATE_BEGIN, EVALUATE_END = "<!-- evaluate:begin -->", "<!-- evaluate:end -->"
DEGENERATE_BEGIN, DEGENERATE_END = "<!-- degenerate-card:begin -->", "<!-- degenerate-card:end -->"


@dataclass(frozen=True)
class ModelCard:
    """A card's title line and the Markdown body of each of SECTIONS, in their order."""

    title: str
    description: str
    intended_uses: str
    inputs_and_outputs: str
    training_data_and_licence: str
    evaluation: str
    limitations_and_bias: str
    reproduce: str
    citation: str

    def render(self) -> str:
        parts = [f"# {self.title}"]
        for heading, body in zip(SECTIONS, astuple(self)[1:]):
            parts += ["", f"## {heading}", "", body.strip("\n")]
        return "\n".join(parts) + "\n"


def write_card(folder: Path, card: ModelCard) -> Path:
    """The folder's README.md."""
    path = Path(folder) / "README.md"
    path.write_text(card.render(), encoding="utf-8")
    return path


def headings(text: str) -> list[str]:
    """The second-level headings of a card, in order (SECTIONS for every card that follows the template)."""
    return [line[3:] for line in text.splitlines() if line.startswith("## ")]


def write_measured_section(folder: Path, section: str, begin: str, end: str) -> None:
    """A measuring command's section into a card: in place of its last one, else at the end of Evaluation."""
    write_section(Path(folder) / "README.md", section, begin, end, before=AFTER_EVALUATION)


def bullets(card: dict[str, Any], keys: tuple[str, ...], labels: dict[str, str] | None = None) -> str:
    """`- **key**: value` for each of `keys` the card has (key words joined by spaces, or its label)."""
    labels = labels or {}
    return "\n".join(f"- **{labels.get(key, key.replace('_', ' '))}**: {card[key]}" for key in keys if key in card)


def code(text: str) -> str:
    """A fenced block (commands to run)."""
    return f"```\n{text.strip()}\n```"


def paragraphs(*parts: str) -> str:
    """The non-empty parts, a blank line apart."""
    return "\n\n".join(part.strip("\n") for part in parts if part and part.strip())


def kind_line(manifest: Manifest) -> str:
    """What a scoring model reads and returns, from its manifest; empty for a component."""
    if manifest.kind == "component":
        return ""
    return (f"- **kind**: {manifest.kind}; requires {', '.join(manifest.requires)}; "
            f"score range {list(manifest.score_range)}\n- **uses**: {', '.join(manifest.uses) or 'nothing'}")


def with_measured_fields(card: dict[str, Any], folder: Path) -> dict[str, Any]:
    """`card` with the measured fields of the card already in `folder`, in that card's key order.

    For an *untrained* model's manifest written again: nothing it scores with changed, so its figures
    still hold; the old order is kept, so a rewrite with nothing new leaves the file byte for byte as it was."""
    path = Path(folder) / "manifest.json"
    old = (json.loads(path.read_text(encoding="utf-8")).get("card") or {}) if path.is_file() else {}
    merged = {key: card[key] if key in card else value for key, value in old.items()
              if key in card or key in MEASURED_CARD_FIELDS}
    return {**merged, **{key: value for key, value in card.items() if key not in merged}}


def measured_sections(card: dict[str, Any], evaluate: bool = True) -> str:
    """The measured sections a manifest's card holds (evaluate's unless `evaluate` is False, the
    degenerate check's), between their markers, for a README rendered from that card."""
    return paragraphs(evaluate_section(card["evaluate"]) if evaluate and card.get("evaluate") else "",
                      degenerate_section(card["degenerate"]) if card.get("degenerate") else "")


def evaluate_section(entry: dict) -> str:
    """`evaluate`'s figures of one model (its card's `evaluate` entry) between markers."""
    lines = [EVALUATE_BEGIN, "", "### Agreement with people on the development sets", "",
             f"Item-level correlation with the averaged human score, `{entry['split']}` split of each set, and "
             "the share of reply pairs to the same context (human gap >= 0.5 on 1-5) ordered as people order "
             "them, where a set has such pairs. "
             f"Written by `{entry['command']}` (the full table, every model side by side, is in "
             "docs/evaluation.md).", "",
             "| set | n | Pearson r | Spearman ρ | pairwise agreement (pairs) |", "|---|---|---|---|---|"]
    for name, row in entry["item_level"].items():
        pairwise = f"{cell(row['pairwise'])} ({row['pairs']})" if row.get("pairs") else "–"
        lines.append(f"| {name} | {row['n']} | {cell(row['pearson'])} | {cell(row['spearman'])} | {pairwise} |")
    lines += ["", EVALUATE_END]
    return "\n".join(lines) + "\n"


def degenerate_section(shares: dict[str, float]) -> str:
    """The degenerate check's shares of one model (the share per kind scored below the human reply) between markers."""
    return "\n".join([DEGENERATE_BEGIN, "",
                      "### Degenerate replies (share scored below the human reply; `python -m training degenerate`)",
                      "", *(f"- {kind}: {share:.1%}" for kind, share in shares.items()), "", DEGENERATE_END]) + "\n"


def cell(value: float | None) -> str:
    """A correlation in a card's table: three decimals, "–" where undefined."""
    return "–" if value is None else f"{value:.3f}"


def from_manifest(manifest: Manifest, title: str, intended_uses: str, reproduce: str, evaluation: str = "",
                  limitations: str = "", inputs: str = "", evaluate_section_too: bool = True) -> ModelCard:
    """The card of a model whose README is rendered from its manifest's `card` dict (the untrained
    baselines, the MiniLM models): its fields under the template's headings, the family's own text
    where the dict has none, and the measured sections the dict holds."""
    card = manifest.card
    return ModelCard(
        title=title,
        description=card.get("summary", ""),
        intended_uses=intended_uses,
        inputs_and_outputs=paragraphs(
            "\n".join(x for x in (kind_line(manifest), bullets(card, ("inputs", "context_encoding", "details",
                                                                      "options_note"), {"options_note": "options"}))
                      if x), inputs),
        training_data_and_licence=bullets(card, ("training_data", "negatives", "source", "licence", "training_time",
                                                 "machine")),
        evaluation=paragraphs(evaluation, measured_sections(card, evaluate=evaluate_section_too)),
        limitations_and_bias=bullets(card, ("limitations",)) or limitations,
        reproduce=code(card.get("reproduce") or reproduce),
        citation=card.get("citation", ""))
