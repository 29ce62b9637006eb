"""model_store/autojudge from a `train autojudge` run: autojudge_head.onnx (c, r -> score), manifest, card."""
from __future__ import annotations

import json
from pathlib import Path

import torch

from service.artifacts.manifest import write_manifest
from training.autojudge import card
from training.autojudge.model import AutoJudgeHead
from training.core.card import write_card, write_figures
from training.core.onnx_export import export_head
from training.encoders.hred.card import context_turns


def load_run(folder: Path) -> tuple[AutoJudgeHead, dict]:
    """A run's head and its metrics.json."""
    state = torch.load(Path(folder) / "head.pt", map_location="cpu", weights_only=True)["state"]
    head = AutoJudgeHead(state["M"].shape[0])
    head.load_state_dict(state)
    return head.eval(), json.loads((Path(folder) / "metrics.json").read_text())


def export_run(run: Path, folder: Path, version: str, encoder_name: str = "hred-encoder",
               figures_folder: Path | None = None) -> dict[str, float]:
    """model_store/autojudge: autojudge_head.onnx (c, r -> score), manifest and card (its figures also into
    `figures_folder`, where given)."""
    head, metrics = load_run(run)
    dim = int(head.M.shape[0])

    def write(target: Path, parity: dict[str, float]) -> None:
        config = {"head": "autojudge_head.onnx", "encoder": encoder_name, "alpha": float(head.alpha),
                  "beta": float(head.beta), "parity_max_abs_diff": parity}
        figures = card.figures(target, metrics, parity, dim, context_turns(target.parent / encoder_name))
        write_manifest(target, name=target.name, version=version, kind="unreferenced", scorer="autojudge",
                       score_range=(1.0, 5.0), uses=[encoder_name], config=config, card=card.card(figures))
        write_card(target, card.readme(figures))
        write_figures(figures_folder, target.name, figures)

    return export_head(head, 2, ["c", "r"], folder, "autojudge_head.onnx", dim, write)
