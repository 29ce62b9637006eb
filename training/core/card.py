"""Model cards from templates: each model's README.md and its manifest's `card` are rendered from Markdown and
JSON templates in its package's cards/ folder, their `${placeholders}` filled from the model's figures.

Every README has the same headings, in order, Description to Citation (tests/training/card_checks.py lists them).
Measuring commands put their sections into Evaluation between markers, replaced in place; their figures stay in the
manifest's card (MEASURED_CARD_FIELDS)."""
from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from service.artifacts.manifest import Manifest
from training.core.docs_section import with_section

AFTER_EVALUATION = "## Limitations and bias"  # a measured section without its markers yet goes in before it
# Card fields that measuring commands (evaluate, degenerate, minilm-report, calibrate) write into a manifest;
# evaluate moves a trainer's `correlations` to `training_run` (training/evaluation/figures.py).
MEASURED_CARD_FIELDS = ("evaluate", "degenerate", "correlations", "correlations_command", "training_run",
                        "human_percentile")
# The markers of a card's measured sections: evaluate's are those of its section of docs/evaluation.md.
EVALUATE_BEGIN, EVALUATE_END = "<!-- evaluate:begin -->", "<!-- evaluate:end -->"
DEGENERATE_BEGIN, DEGENERATE_END = "<!-- degenerate-card:begin -->", "<!-- degenerate-card:end -->"
MEASURED_ORDER = (EVALUATE_BEGIN, DEGENERATE_BEGIN)  # a card's measured sections, in the order a card holds them
WHOLE = re.compile(r"\$\{([_a-z][_a-z0-9]*)\}")  # a card field that is one placeholder takes the figure as it is


class Placeholders(string.Template):
    """`${name}` placeholders only; a `$` of the text is written `$$`."""

    idpattern = r"(?!)"  # no bare $name: every placeholder is braced
    braceidpattern = r"[_a-z][_a-z0-9]*"


def render(template: str, figures: Mapping[str, Any]) -> str:
    """The template with every placeholder replaced by its figure (a KeyError names a figure that is missing)."""
    return Placeholders(template).substitute({key: str(value) for key, value in figures.items()})


def render_fields(template: Mapping[str, Any], figures: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest card from its JSON template, in the template's order: a field that is one placeholder takes
    its figure as it is (a number, an object; None leaves the field out), every other string is rendered."""
    card: dict[str, Any] = {}
    for key, value in template.items():
        whole = WHOLE.fullmatch(value) if isinstance(value, str) else None
        if whole is None:
            card[key] = render(value, figures) if isinstance(value, str) else value
        elif figures[whole.group(1)] is not None:
            card[key] = figures[whole.group(1)]
    return card


class Templates:
    """The card templates of one package: cards/<name>.md (a README), cards/<name>.json (a manifest's card) and
    cards/phrases.json (sentences its figures choose between)."""

    def __init__(self, package_file: str | Path) -> None:
        self.folder = Path(package_file).resolve().parent / "cards"

    def readme(self, name: str) -> str:
        return (self.folder / f"{name}.md").read_text(encoding="utf-8")

    def card(self, name: str) -> dict[str, Any]:
        return json.loads((self.folder / f"{name}.json").read_text(encoding="utf-8"))

    def phrases(self) -> dict[str, str]:
        return json.loads((self.folder / "phrases.json").read_text(encoding="utf-8"))

    def phrase(self, name: str, **figures: Any) -> str:
        return render(self.phrases()[name], figures)


def write_card(folder: Path, text: str) -> Path:
    """The folder's README.md."""
    path = Path(folder) / "README.md"
    path.write_text(text, encoding="utf-8")
    return path


def write_figures(folder: Path | None, name: str, figures: Mapping[str, Any]) -> None:
    """`figures` as <folder>/<name>.json (the card's figures, for re-rendering and checking it); nothing without a folder."""
    if folder is None:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    (Path(folder) / f"{name}.json").write_text(json.dumps(figures, indent=1, ensure_ascii=False) + "\n",
                                               encoding="utf-8")


def write_measured_section(folder: Path, section: str, begin: str, end: str) -> None:
    """A measuring command's section into a card: in place of its last one, else at the end of Evaluation but
    before a section MEASURED_ORDER puts after it, so the card reads the same whichever command ran first."""
    path = Path(folder) / "README.md"
    text = path.read_text(encoding="utf-8")
    later = MEASURED_ORDER[MEASURED_ORDER.index(begin) + 1:] if begin in MEASURED_ORDER else ()
    before = next((b for b in later if f"\n{b}\n" in text), AFTER_EVALUATION)
    path.write_text(with_section(text, section, begin, end, before), encoding="utf-8")


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


def terms_line(card: Mapping[str, Any]) -> str:
    """The card's terms as a README bullet: its SPDX expression, whether they allow commercial use, and why."""
    use = "yes" if card["commercial_use"] is True else "no"
    return f"- **terms**: `{card['license']}`; commercial use: {use}. {card['license_reason']}"


def bullets(card: Mapping[str, Any], keys: tuple[str, ...], labels: dict[str, str] | None = None) -> str:
    """`- **key**: value` for each of `keys` the card has (key words joined by spaces, or its label)."""
    labels = labels or {}
    return "\n".join(f"- **{labels.get(key, key.replace('_', ' '))}**: {card[key]}" for key in keys if key in card)


def manifest_figures(manifest: Manifest) -> dict[str, Any]:
    """What a README rendered from its manifest reads: the card's text fields by name, the model's name, its kind
    line, and the measured sections the card holds, after a blank line or nothing (`measured`: evaluate's and the
    degenerate check's; `measured_degenerate_only`: the check's, for a card with a table of its own;
    `measured_synthetic`: evaluate's synthetic-check line alone, for such a card)."""
    measured, degenerate = measured_sections(manifest.card), measured_sections(manifest.card, evaluate=False)
    check = (manifest.card.get("evaluate") or {}).get("synthetic")
    return {**{key: value for key, value in manifest.card.items() if isinstance(value, str)},
            "name": manifest.name, "kind_line": kind_line(manifest), "terms": terms_line(manifest.card), "measured": f"\n\n{measured}" if measured else "",
            "measured_degenerate_only": f"\n\n{degenerate}" if degenerate else "",
            "measured_synthetic": f"\n\n{synthetic_line(check)}" if check else ""}


def with_measured_fields(card: dict[str, Any], folder: Path) -> dict[str, Any]:
    """`card` with the measured fields of the card already in `folder`, in that card's key order.

    For an *untrained* model's manifest written again: nothing it scores with changed, so its figures
    still hold; the old order is kept, so a rewrite with nothing new leaves the file byte for byte as it was."""
    path = Path(folder) / "manifest.json"
    old = (json.loads(path.read_text(encoding="utf-8")).get("card") or {}) if path.is_file() else {}
    merged = {key: card[key] if key in card else value for key, value in old.items()
              if key in card or key in MEASURED_CARD_FIELDS}
    return {**merged, **{key: value for key, value in card.items() if key not in merged}}


def measured_sections(card: Mapping[str, Any], evaluate: bool = True) -> str:
    """The measured sections a manifest's card holds (evaluate's unless `evaluate` is False, the
    degenerate check's), between their markers, for a README rendered from that card."""
    return paragraphs(evaluate_section(card["evaluate"]) if evaluate and card.get("evaluate") else "",
                      degenerate_section(card["degenerate"]) if card.get("degenerate") else "")


TRIVIAL_BARS = ("length", "minilm-cosine")  # the bars every learned model's card shows beside its own figures


def evaluate_section(entry: Mapping[str, Any]) -> str:
    """`evaluate`'s figures of one model (its card's `evaluate` entry) between markers, with the trivial bars'
    Pearson r on the same sets where the entry holds them (`trivial`, figures.write_trivial_bars)."""
    trivial = entry.get("trivial") or {}
    text = (f"Item-level correlation with the averaged human score, `{entry['split']}` split of each set, and "
            "the share of reply pairs to the same context (human gap >= 0.5 on 1-5) ordered as people order "
            "them, where a set has such pairs. "
            f"Written by `{entry['command']}` (the full table, every model side by side, is in "
            "docs/evaluation.md)." + (f" Served as: {entry['served']}." if entry.get("served") else "")
            + " Where an item has several references, a referenced model is scored against each of the first four "
            "and keeps the best: its rule for several references, which `dialscore score` applies to a "
            "`references` list."
            + (f" {PEARSON_CI_NOTE}" if any("pearson_ci" in row for row in entry["item_level"].values()) else ""))
    header, rule = "| set | n | Pearson r | Spearman ρ | pairwise agreement (pairs) |", "|---|---|---|---|---|"
    if trivial:
        text += (" The last two columns are the trivial bars' Pearson r on each set, which a learned metric "
                 "must clear: the reply's length (on every item), and the untrained MiniLM cosine (`minilm-cosine`, "
                 "on the items with a reference: – where a set has none). Their n can differ from the model's.")
        header, rule = header + " length r | minilm-cosine r |", rule + "---|---|"
    lines = [EVALUATE_BEGIN, "", "### Agreement with people on the development sets", "", text, "", header, rule]
    for name, row in entry["item_level"].items():
        pairwise = f"{cell(row['pairwise'])} ({row['pairs']})" if row.get("pairs") else "–"
        bars = "".join(f" {cell(trivial.get(name, {}).get(bar))} |" for bar in TRIVIAL_BARS) if trivial else ""
        lines.append(f"| {name} | {row['n']} | {pearson_cell(row)} | {cell(row['spearman'])} | {pairwise} |{bars}")
    if entry.get("synthetic"):
        lines += ["", synthetic_line(entry["synthetic"])]
    lines += ["", EVALUATE_END]
    return "\n".join(lines) + "\n"


def synthetic_line(check: Mapping[str, Any]) -> str:
    """The synthetic check's figures of one model (its card's `evaluate.synthetic`) in a sentence."""
    kinds = ", ".join(f"{kind} {cell(share)}" for kind, share in check["kinds"].items())
    sources = ", ".join(f"{source} {cell(share)}" for source, share in check["sources"].items())
    return (f"Synthetic check (docs/evaluation.md: held-aside dialogues, the true next turn against a negative "
            f"of each kind, the share ordered right): mean {cell(check['mean'])}; by kind {kinds}; by source "
            f"{sources}.")


def degenerate_section(shares: Mapping[str, float]) -> str:
    """The degenerate check's shares of one model (the share per kind scored below the human reply) between markers."""
    return "\n".join([DEGENERATE_BEGIN, "",
                      "### Degenerate replies (share scored below the human reply; `python -m training degenerate`)",
                      "", *(f"- {kind}: {share:.1%}" for kind, share in shares.items()), "", DEGENERATE_END]) + "\n"


def cell(value: float | None) -> str:
    """A correlation in a card's table: three decimals, "–" where undefined."""
    return "–" if value is None else f"{value:.3f}"


PEARSON_CI_NOTE = ("Beside Pearson r, its 95% interval: a percentile bootstrap drawing contexts whole, every reply "
                   "rated for one coming with it (1,000 resamples, seed 0; /correlate's `item_resampling: inputs`).")


def pearson_cell(row: Mapping[str, Any]) -> str:
    """A row's Pearson r, with its interval where the row has one (`pearson_ci`, evaluate's)."""
    return cell(row.get("pearson")) + (" [{:.2f}, {:.2f}]".format(*row["pearson_ci"]) if row.get("pearson_ci") else "")
