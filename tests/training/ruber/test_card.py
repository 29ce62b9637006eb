"""RUBER's card: the template, rendered from the run's training.json without training again."""
from __future__ import annotations

import json

from service.artifacts.manifest import read_manifest
from tests.conftest import MODEL_STORE, copy_store
from tests.training.card_checks import SECTIONS, headings
from training.core.card import (DEGENERATE_BEGIN, DEGENERATE_END, EVALUATE_BEGIN, EVALUATE_END, degenerate_section,
                                evaluate_section, write_measured_section)
from training.ruber.card import write_card


def test_the_committed_card_is_the_run_summary_rendered_with_its_measured_sections(tmp_path) -> None:
    folder = copy_store(tmp_path / "store", ("ruber",)) / "ruber"
    write_card(folder, json.loads((folder / "training.json").read_text(encoding="utf-8")))
    assert headings((folder / "README.md").read_text(encoding="utf-8")) == list(SECTIONS)
    card = read_manifest(folder).card
    write_measured_section(folder, evaluate_section(card["evaluate"]), EVALUATE_BEGIN, EVALUATE_END)
    write_measured_section(folder, degenerate_section(card["degenerate"]), DEGENERATE_BEGIN, DEGENERATE_END)
    assert (folder / "README.md").read_text(encoding="utf-8") == (MODEL_STORE / "ruber" / "README.md").read_text(
        encoding="utf-8")
