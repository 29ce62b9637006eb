"""The cards of the untrained baselines and of the GloVe table: their templates (cards/) filled from the manifest."""
from __future__ import annotations

from typing import Any

from service.artifacts.manifest import Manifest
from service.config import MAX_COUNT
from training.core.card import Templates, bullets, manifest_figures, render

TEMPLATES = Templates(__file__)
VERSION = "2026.11.0"  # a baseline's own `version` in BASELINES overrides it
# name -> what its manifest says besides the card: every baseline but length compares the reply with a reference
BASELINES: dict[str, dict[str, Any]] = {
    "bleu4": dict(kind="referenced", score_range=(0.0, 1.0), uses=[]),
    "rouge-l": dict(kind="referenced", score_range=(0.0, 1.0), uses=[]),
    # A word holds a letter or digit, so a reply has at most as many words as characters: no reply the service
    # takes (max_chars at most MAX_COUNT, whatever the deployment sets) passes this top, so none is capped.
    "length": dict(kind="unreferenced", score_range=(0.0, float(MAX_COUNT)), uses=[], version="2026.11.1"),
    "emb-average": dict(kind="referenced", score_range=(-1.0, 1.0), uses=["glove-50d"]),
    "emb-extrema": dict(kind="referenced", score_range=(-1.0, 1.0), uses=["glove-50d"]),
    "emb-greedy": dict(kind="referenced", score_range=(-1.0, 1.0), uses=["glove-50d"]),
}


def baseline_readme(manifest: Manifest) -> str:
    """A baseline's README: the overlap caveat where its card states no limits of its own."""
    figures = manifest_figures(manifest)
    figures["limitations"] = bullets(manifest.card, ("limitations",)) or TEMPLATES.phrase("overlap_limitations")
    figures["reproduce"] = TEMPLATES.phrase("reproduce_on_glove" if manifest.uses else "reproduce")
    return render(TEMPLATES.readme("baseline"), figures)


def glove_readme(manifest: Manifest) -> str:
    return render(TEMPLATES.readme("glove-50d"), {**manifest_figures(manifest), **manifest.config})
