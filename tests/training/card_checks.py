"""What the card tests read of a README: the template's headings, and the measured sections a card's figures put in."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from training.core.card import (AFTER_EVALUATION, DEGENERATE_BEGIN, DEGENERATE_END, EVALUATE_BEGIN, EVALUATE_END,
                                degenerate_section, evaluate_section)
from training.core.docs_section import with_section

SECTIONS = ("Description", "Intended uses", "Inputs and outputs", "Training data and licence", "Evaluation",
            "Limitations and bias", "Reproduce", "Citation")  # every card's headings, in order


def headings(text: str) -> list[str]:
    """The second-level headings of a card, in order (SECTIONS for every card that follows the template)."""
    return [line[3:] for line in text.splitlines() if line.startswith("## ")]


def with_measured_sections(text: str, card: Mapping[str, Any]) -> str:
    """A README with the measured sections of its manifest's card written in, as the measuring commands write them."""
    if card.get("evaluate"):
        text = with_section(text, evaluate_section(card["evaluate"]), EVALUATE_BEGIN, EVALUATE_END, AFTER_EVALUATION)
    if card.get("degenerate"):
        text = with_section(text, degenerate_section(card["degenerate"]), DEGENERATE_BEGIN, DEGENERATE_END,
                            AFTER_EVALUATION)
    return text
