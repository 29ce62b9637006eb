"""model_store/adem from a `train adem` run: adem_head.onnx (c, r_hat, r -> score and its terms), manifest, card."""
from __future__ import annotations

import json
from pathlib import Path

import torch

from service.artifacts.manifest import write_manifest
from training.adem import card
from training.adem.model import AdemHead, ServedADEM
from training.core.card import write_card, write_figures
from training.core.onnx_export import export_head
from training.encoders.hred.card import context_turns


def load_run(folder: Path) -> tuple[dict[str, AdemHead], dict]:
    """A run's heads by variant (adem, c-adem, r-adem) and its metrics.json."""
    payload = torch.load(Path(folder) / "head.pt", map_location="cpu", weights_only=True)
    heads = {}
    for variant, entry in payload.items():
        state = entry["state"]
        head = AdemHead(state["mean"].numpy(), state["components"].numpy(), variant)
        head.load_state_dict(state)
        heads[variant] = head.eval()
    return heads, json.loads((Path(folder) / "metrics.json").read_text())


def export_run(run: Path, folder: Path, version: str, encoder_name: str = "hred-encoder",
               figures_folder: Path | None = None) -> dict[str, float]:
    """model_store/adem: adem_head.onnx (c, r_hat, r -> score), manifest and card (its figures also into
    `figures_folder`, where given)."""
    heads, metrics = load_run(run)
    head = heads["adem"]
    dim = head.mean.shape[0]

    def write(target: Path, parity: dict[str, float]) -> None:
        config = {"head": "adem_head.onnx", "encoder": encoder_name, "n": int(head.components.shape[0]),
                  "alpha": float(head.alpha), "beta": float(head.beta), "parity_max_abs_diff": parity}
        figures = card.figures(target, metrics, parity, dim, context_turns(target.parent / encoder_name))
        write_manifest(target, name=target.name, version=version, kind="referenced", scorer="adem",
                       score_range=(1.0, 5.0), uses=[encoder_name], config=config, card=card.card(figures))
        write_card(target, card.readme(figures))
        write_figures(figures_folder, target.name, figures)

    served = ServedADEM(head)
    return export_head(served, 3, ["c", "r_hat", "r"], folder, "adem_head.onnx", dim, write,
                       outputs=ServedADEM.OUTPUTS, scales=served.scales())
