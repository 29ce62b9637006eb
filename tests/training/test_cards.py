"""Every model card in model_store/ is its templates filled with its figures: the README.md and the manifest's
card, rendered from the cards/ templates of its package and its figures (the store's own files, and
docs/cards/<model>.json for what the store does not hold), are byte for byte the committed ones."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from service.artifacts.manifest import Manifest, read_manifest
from tests.conftest import MODEL_STORE
from training.adem import card as adem
from training.autojudge import card as autojudge
from training.baselines import card as baselines
from tests.training.card_checks import SECTIONS, headings, with_measured_sections
from training.core.card import MEASURED_CARD_FIELDS, render_fields
from training.core.turn_cards import head_card, head_figures, shared_phrases, templates_of
from training.core.turn_cards import readme as turn_readme
from training.encoders.hred import card as hred
from training.encoders.minilm import export as minilm
from training.encoders.mpnet import export as mpnet
from training.mh import card as mh
from training.ruber import card as ruber
from training.unref import card as unref
from training.unref.recipes import RECIPES

FIGURES = MODEL_STORE.parent / "docs" / "cards"
MODELS = sorted(p.parent.name for p in MODEL_STORE.glob("*/manifest.json"))


def saved(name: str) -> dict[str, Any]:
    """The figures of a card that its store folder does not hold."""
    return json.loads((FIGURES / f"{name}.json").read_text(encoding="utf-8"))


def rendered(manifest: Manifest) -> tuple[str, dict[str, Any]]:
    """(README.md, the manifest's card) of a committed model, from its templates and figures."""
    name, card = manifest.name, manifest.card
    if name in baselines.BASELINES:
        return baselines.baseline_readme(manifest), render_fields(baselines.TEMPLATES.card(name), {})
    if name == "glove-50d":
        return baselines.glove_readme(manifest), render_fields(baselines.TEMPLATES.card(name), {})
    if name == "minilm-cosine":
        return turn_readme(manifest), render_fields(templates_of(name).card(name), shared_phrases())
    if name in ("adem-minilm", "autojudge-minilm", "ruber-minilm"):
        run = saved(name)
        code = {key: run[key] for key in ("next_turn_code", "degenerate_code")}
        figures = head_figures(name, card["config"], run["seconds"], manifest.config, card.get("search"), None, code)
        return turn_readme(manifest), head_card(name, figures)
    if name in RECIPES:
        return unref.readme(manifest), unref.card(unref.card_figures(RECIPES[name], card["fit"], **saved(name)))
    if name in ("adem", "autojudge", "hred-encoder", "mh"):
        module = {"adem": adem, "autojudge": autojudge, "hred-encoder": hred, "mh": mh}[name]
        figures = saved(name)
        return with_measured_sections(module.readme(figures), card), module.card(figures)
    if name == "ruber":
        summary = json.loads((MODEL_STORE / name / "training.json").read_text(encoding="utf-8"))
        readme = ruber.readme(ruber.figures(summary, saved(name)["torch"]))
        return with_measured_sections(readme, card), ruber.card(summary, summary["correlations"])
    if name == "minilm-l6":
        return minilm.readme(), render_fields(minilm.TEMPLATES.card(name), {})
    if name == "mpnet-base":
        return mpnet.readme(card), render_fields(mpnet.TEMPLATES.card(name), {})
    raise AssertionError(f"{name}: no card templates known")


@pytest.mark.parametrize("name", MODELS)
def test_the_committed_card_is_its_templates_filled_with_its_figures(name: str) -> None:
    manifest = read_manifest(MODEL_STORE / name)
    readme, card = rendered(manifest)
    assert readme == (MODEL_STORE / name / "README.md").read_text(encoding="utf-8")
    # Field by field (a manifest keeps its fields in the order they were written), but for those a measuring
    # command rewrote after training: evaluate's figures, which replace a training run's `correlations` with
    # the served model's (training/evaluation/figures.py; test_figures.py holds them to docs/evaluation.json).
    remeasured = MEASURED_CARD_FIELDS
    card = {key: value for key, value in card.items() if key not in remeasured}
    assert {key: manifest.card[key] for key in card} == card
    assert set(manifest.card) - set(card) <= set(MEASURED_CARD_FIELDS)


def test_every_readme_template_has_the_sections_in_order() -> None:
    templates = [p for p in Path(adem.__file__).parents[1].glob("**/cards/*.md") if p.stem != "measured"]
    assert len(templates) >= 14
    for path in templates:
        assert headings(path.read_text(encoding="utf-8")) == list(SECTIONS), path


REPOSITORY_PATH = re.compile(r"\b(?:training|service|scripts|docs|tests|benchmarks|clients)/[\w./-]*\w\.(?:py|md|json|sh)\b")


def test_every_repository_path_a_card_names_exists() -> None:
    """A card cites code and notes by path (its templates, the figures in docs/cards, the committed cards)."""
    repo = MODEL_STORE.parent
    cards = [*Path(adem.__file__).parents[1].glob("**/cards/*"), *FIGURES.glob("*.json"),
             *MODEL_STORE.glob("*/README.md"), *MODEL_STORE.glob("*/manifest.json")]
    named = {(path.relative_to(repo).as_posix(), found) for path in cards
             for found in REPOSITORY_PATH.findall(path.read_text(encoding="utf-8"))}
    assert len(named) > 20
    assert not [(card, found) for card, found in sorted(named) if not (repo / found).exists()]
