"""The model-card template: every committed card has its headings in order; measured sections land in Evaluation."""
from __future__ import annotations

import pytest

from tests.conftest import MODEL_STORE
from tests.training.card_checks import SECTIONS, headings, with_measured_sections
from training.core.card import (AFTER_EVALUATION, DEGENERATE_BEGIN, DEGENERATE_END, EVALUATE_BEGIN, EVALUATE_END,
                                degenerate_section, evaluate_section, render, write_card, write_measured_section)

CARDS = sorted(p.parent.name for p in MODEL_STORE.glob("*/manifest.json"))


@pytest.mark.parametrize("name", CARDS)
def test_every_committed_card_has_the_template_headings_in_order(name: str) -> None:
    text = (MODEL_STORE / name / "README.md").read_text(encoding="utf-8")
    assert text.startswith(f"# {name}")
    assert headings(text) == list(SECTIONS)


def _card() -> str:
    template = "# ${title}\n" + "".join(f"\n## {heading}\n\n${{s{i}}}\n" for i, heading in enumerate(SECTIONS))
    bodies = ("what", "what for", "in, out", "data", "figures", "limits", "```\nrun\n```", "cite")
    return render(template, {"title": "m: a model", **{f"s{i}": body for i, body in enumerate(bodies)}})


def test_a_card_renders_every_section_once_in_order() -> None:
    text = _card()
    assert headings(text) == list(SECTIONS)
    assert text.index("figures") < text.index(AFTER_EVALUATION) < text.index("limits")


def test_a_measured_section_goes_into_evaluation_and_a_rerun_replaces_it(tmp_path) -> None:
    write_card(tmp_path, _card())
    entry = {"split": "dev", "command": "python -m training evaluate",
             "item_level": {"dstc7": {"n": 10, "pearson": 0.5, "spearman": None}}}
    for _ in range(2):
        write_measured_section(tmp_path, evaluate_section(entry), EVALUATE_BEGIN, EVALUATE_END)
    text = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert headings(text) == list(SECTIONS) and text.count(EVALUATE_BEGIN) == 1
    assert text.index("figures") < text.index("| dstc7 | 10 | 0.500 | – |") < text.index(AFTER_EVALUATION)


@pytest.mark.parametrize("degenerate_first", [False, True])
def test_the_measured_sections_land_in_one_order_whichever_command_ran_first(tmp_path, degenerate_first: bool) -> None:
    """The committed card is checked against its templates with the sections in one order (tests/training/test_cards.py)."""
    write_card(tmp_path, _card())
    card = {"evaluate": {"split": "dev", "command": "python -m training evaluate",
                         "item_level": {"dstc7": {"n": 10, "pearson": 0.5, "spearman": None}}},
            "degenerate": {"copy-last-turn": 0.9, "all": 0.95}}
    writes = [(evaluate_section(card["evaluate"]), EVALUATE_BEGIN, EVALUATE_END),
              (degenerate_section(card["degenerate"]), DEGENERATE_BEGIN, DEGENERATE_END)]
    for section, begin, end in reversed(writes) if degenerate_first else writes:
        write_measured_section(tmp_path, section, begin, end)
    text = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert text.index(EVALUATE_BEGIN) < text.index(DEGENERATE_BEGIN) < text.index(AFTER_EVALUATION)
    assert text == with_measured_sections(_card(), card)
