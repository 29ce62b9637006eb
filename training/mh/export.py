"""model_store/mh from a `train-mh` fit: regression.json (what the service computes), manifest and card."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from service.scorers.mh import proxies
from service.artifacts.manifest import Manifest, write_manifest
from training.core.card import write_card, write_figures
from training.mh import card as cards
from training.mh.model import Linear


REGRESSION_FILE = "regression.json"


def write_artifact(folder: Path, model: Linear, result: dict[str, Any], version: str,
                   encoder: Manifest, figures_folder: Path | None = None) -> Manifest:
    """regression.json, the manifest and the card of a fit (its card's figures also into `figures_folder`)."""
    folder = Path(folder)
    figures = cards.figures(result, version)
    folder.mkdir(parents=True, exist_ok=True)
    regression = {"proxies": list(proxies.PROXIES), "mean": model.mean.tolist(), "scale": model.scale.tolist(),
                  "coefficients": model.coefficients.tolist(), "intercept": model.intercept,
                  "low": model.low.tolist(), "high": model.high.tolist(),
                  "target": "ConvAI2 eval_score (1-5)", "standardised": True}
    (folder / REGRESSION_FILE).write_text(json.dumps(regression, indent=2) + "\n")
    manifest = write_manifest(
        folder, name=folder.name, version=version, kind="dialogue", scorer="mh", score_range=(1.0, 5.0),
        uses=["glove-50d", encoder.name],
        config={"regression": REGRESSION_FILE,
                "encoder_files": {n: e["sha256"] for n, e in encoder.files.items() if n.endswith(".onnx")}},
        card=cards.card(figures),
    )
    write_card(folder, cards.readme(figures))
    write_figures(figures_folder, folder.name, figures)
    return manifest
