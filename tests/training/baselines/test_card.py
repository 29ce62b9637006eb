"""The baselines' and the GloVe table's cards: the template, rendered from their manifests."""
from __future__ import annotations

from service.artifacts.manifest import read_manifest
from tests.conftest import MODEL_STORE, copy_store
from training.baselines.card import BASELINES, glove_readme
from training.baselines.export import write_baselines
from tests.training.card_checks import SECTIONS, headings


def test_the_baselines_command_writes_template_cards(tmp_path) -> None:
    store = copy_store(tmp_path / "store", tuple(BASELINES))
    write_baselines(store)
    for name in BASELINES:
        text = (store / name / "README.md").read_text(encoding="utf-8")
        assert text.startswith(f"# {name} (baseline)") and headings(text) == list(SECTIONS)


def test_the_glove_card_is_rendered_from_its_manifest_as_committed() -> None:
    card = glove_readme(read_manifest(MODEL_STORE / "glove-50d"))
    assert headings(card) == list(SECTIONS)
    assert card == (MODEL_STORE / "glove-50d" / "README.md").read_text(encoding="utf-8")
