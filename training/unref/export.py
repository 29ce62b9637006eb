"""A stacked reference-free model into its store folder: head graphs (copies of the served -minilm heads,
with their hashes, or exported and checked against torch), manifest with the fitted signals, card; then
the folder is loaded as the service loads it and must score as the fit does."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np

from service.store.registry import component_class
from service.components.cache import EncodeCache
from service.scorers.base import Item
from service.store.registry import scorer_class
from service.artifacts.manifest import Manifest, read_manifest, write_manifest
from service.artifacts.runtime import Runtime, RuntimeSettings
from training.core.cli import SetupError
from training.encoders.minilm.embed import encoder_identity
from training.core.turn_heads import check_turn_head, export_turn_head
from training.core.card import write_card
from training.unref.card import readme
from training.unref.fit import Combination
from training.unref.recipes import Recipe

SCORER = "unref-combination"
SCORE_RANGE = (1.0, 5.0)


def write_heads(recipe: Recipe, trained: dict[str, Any], store: Path, stage: Path) -> dict[str, dict]:
    """Each head graph into the folder; returns its provenance for the manifest's config."""
    provenance = {}
    for filename, source in recipe.heads.items():
        if source.served:
            served = read_manifest(store / source.model)
            shutil.copyfile(served.path("head.onnx"), stage / filename)
            provenance[filename] = {"copy_of": f"{source.model}/head.onnx", "version": served.version,
                                    "sha256": served.files["head.onnx"]["sha256"]}
        else:
            export_turn_head(trained[filename], stage / filename)
            check_turn_head(trained[filename], stage / filename)
            provenance[filename] = {"trained": f"{source.model}'s recipe on {source.encoder}, next-turn pre-training "
                                               "on RUBER's negative-sampling pairs (training/unref/heads.py)"}
    return provenance


def served_config(recipe: Recipe, combination: Combination, provenance: dict, store: Path) -> dict[str, Any]:
    signals = [{**spec, "mean": round(float(m), 6), "sd": round(float(s), 6), "weight": round(float(w), 6)}
               for spec, m, s, w in zip(recipe.signals, combination.mean, combination.sd, combination.weight)]
    encoders = {}
    for name in recipe.uses:
        identity = encoder_identity(store / name)
        encoders[name] = {key: value for key, value in identity.items() if key != "name"}
    return {"signals": signals, "bias": round(float(combination.bias), 6), "heads": provenance,
            "fitted_on": encoders}


def write_model(stage: Path, recipe: Recipe, config: dict, card: dict) -> Manifest:
    manifest = write_manifest(stage, name=stage.name, version=recipe.version, kind="unreferenced", scorer=SCORER,
                              score_range=SCORE_RANGE, uses=list(recipe.uses), config=config, card=card,
                              options={})
    write_card(stage, readme(manifest))
    return manifest


def check_served(stage: Path, store: Path, items: list[Item], expected: np.ndarray, tolerance: float = 1e-3) -> float:
    """Load the folder as the store does and score `items`: SetupError where a score differs from the fit's
    by more than `tolerance` (before the soft bound, which moves only the outer 5% of the range)."""
    runtime = Runtime(RuntimeSettings(providers=("CPUExecutionProvider",), intra_op_threads=1))
    manifest = read_manifest(stage)
    components = {}
    for name in manifest.uses:
        component = read_manifest(store / name)
        components[name] = component_class(component.scorer)(component, runtime)
    scorer = scorer_class(manifest.scorer)(manifest, components, runtime)
    values = scorer.signal_values(items, EncodeCache())
    served = scorer.bias + ((values - scorer.mean) / scorer.sd) @ scorer.weight
    worst = float(np.abs(served - expected).max())
    if worst > tolerance:
        raise SetupError(f"{stage.name}: served scores differ from the fit's by up to {worst:.2e}")
    return worst

