"""RUBER's store folder: the three ONNX graphs (query encoder, reply encoder, head) checked against torch,
then what is measured on them: word weights, min-max constants, the measured defaults, the manifest,
training.json and the card."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from torch import nn

from service.components.glove import GloveTable
from service.artifacts.manifest import Manifest, write_manifest
from service.scorers.ruber.blending import BLENDS
from service.scorers.ruber.glove import WEIGHTS_FILE, WORD_WEIGHTS
from training.core.onnx_export import check_parity, export_onnx, ragged_examples
from training.data.judgements import DEFAULT_DATA_DIR
from training.ruber import calibrate
from training.ruber import card as cards
from training.ruber.model import GloveBiGRUEncoder, RuberConfig, RuberHead, UnreferencedScorer
from training.ruber.word_weights import frequency_weights

log = logging.getLogger("training.ruber")


VERSION = "2026.11.2"


PARITY_TOLERANCE = 1e-4


# (batch, time) shapes of the parity check: batch 1, ragged batches and long inputs
PARITY_SHAPES = ((1, 1), (1, 7), (3, 5), (8, 40), (2, 300))


ENCODER_INPUTS = ["embedded", "lengths"]
HEAD_INPUTS = ["query", "reply"]


class _EncoderGraph(nn.Module):
    def __init__(self, encoder: GloveBiGRUEncoder) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(self, embedded: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self.encoder(embedded, lengths)


def export_encoder(encoder: GloveBiGRUEncoder, path: Path) -> Path:
    """embedded [batch, time, E] float, lengths [batch] int64 -> vector [batch, 2H]."""
    dim = encoder.embedding.embedding_dim
    example = (torch.randn(2, 3, dim), torch.tensor([3, 2], dtype=torch.long))
    return export_onnx(_EncoderGraph(encoder), example, Path(path), ENCODER_INPUTS, ["vector"],
                       {"embedded": {0: "batch", 1: "time"}, "lengths": {0: "batch"}, "vector": {0: "batch"}})


def export_head(head: RuberHead, path: Path) -> Path:
    """query [batch, D], reply [batch, D] float -> score [batch] in (0, 1)."""
    dim = head.M.shape[0]
    example = (torch.randn(2, dim), torch.randn(2, dim))
    return export_onnx(head, example, Path(path), HEAD_INPUTS, ["score"],
                       {"query": {0: "batch"}, "reply": {0: "batch"}, "score": {0: "batch"}})


def encoder_examples(dim: int, shapes=PARITY_SHAPES, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Random ragged (embedded, lengths) batches; one row of each fills its batch."""
    return ragged_examples(shapes, lambda batch, time, g: torch.randn((batch, time, dim), generator=g), seed,
                           zero_padding=False)


def encoder_parity(encoder: GloveBiGRUEncoder, path: Path, shapes=PARITY_SHAPES, seed: int = 0) -> float:
    """Largest |ONNX - torch| over the example shapes; raises above training.core.onnx_export.PARITY_ATOL."""
    examples = encoder_examples(encoder.embedding.embedding_dim, shapes, seed)
    return check_parity(_EncoderGraph(encoder), path, examples, ENCODER_INPUTS)


def head_parity(head: RuberHead, path: Path, batches=(1, 2, 17, 256), seed: int = 0) -> float:
    g = torch.Generator().manual_seed(seed)
    dim = head.M.shape[0]
    examples = [(torch.randn((b, dim), generator=g), torch.randn((b, dim), generator=g)) for b in batches]
    return check_parity(head, path, examples, HEAD_INPUTS)


def symbolic_inputs(path: Path) -> bool:
    """True when every input's variable axes (all but the feature axis) are symbolic, not frozen."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for node in session.get_inputs():
        variable = node.shape if len(node.shape) == 1 else node.shape[:-1]
        if not all(isinstance(d, str) for d in variable):
            return False
    return True


def export_graphs(model: UnreferencedScorer, folder: Path) -> dict[str, float]:
    """Write the three graphs and return their parity (max |ONNX - torch|); raises if over tolerance."""
    folder.mkdir(parents=True, exist_ok=True)
    parity = {
        "query_encoder.onnx": encoder_parity(model.query_encoder,
                                             export_encoder(model.query_encoder, folder / "query_encoder.onnx")),
        "reply_encoder.onnx": encoder_parity(model.reply_encoder,
                                             export_encoder(model.reply_encoder, folder / "reply_encoder.onnx")),
        "head.onnx": head_parity(model.head, export_head(model.head, folder / "head.onnx")),
    }
    for name, worst in parity.items():
        if worst > PARITY_TOLERANCE or not symbolic_inputs(folder / name):
            raise RuntimeError(f"{name}: ONNX differs from torch by {worst:.2e} or has frozen axes")
    log.info("ruber export parity %s", {k: f"{v:.1e}" for k, v in parity.items()})
    return parity


def write_ruber_manifest(folder: Path, config: RuberConfig, normalisation: dict, blend_default: str,
                         card: dict, word_weights_default: str = "none", extra: dict | None = None) -> Manifest:
    weightings = list(WORD_WEIGHTS) if (folder / WEIGHTS_FILE).is_file() else ["none"]
    return write_manifest(
        folder, name=folder.name, version=VERSION, kind="referenced", scorer="ruber", score_range=(0.0, 1.0),
        uses=["glove-50d"],
        options={"blend": {"type": "string", "choices": list(BLENDS), "default": blend_default},
                 "components": {"type": "boolean", "default": False},
                 "word_weights": {"type": "string", "choices": weightings, "default": word_weights_default}},
        config={"query_turns": config.query_turns, "max_words": config.max_words,
                "normalisation": normalisation, "margin": config.margin, "hidden": config.hidden,
                "mlp_hidden": config.mlp_hidden, **(extra or {})},
        card=card)


def calibrate_and_describe(out: Path, store: Path, glove: GloveTable, config: RuberConfig, summary: dict,
                           train_dialogues: list[list[str]], choice_sets: list[str], card_sets: list[str],
                           data_dir: Path = DEFAULT_DATA_DIR, calibration_contexts: int = 400) -> dict:
    """Everything after training, on the exported graphs in `out`: the word weights, min-max constants,
    measured choices, manifest, training.json and card. Separate so that a change here can be
    applied to trained graphs without training them again (the result is what `run` writes)."""
    np.save(out / WEIGHTS_FILE, frequency_weights(glove.index, train_dialogues))
    provisional = {"s_ref": [-1.0, 1.0], "s_ref_frequency": [-1.0, 1.0], "s_unref": [0.0, 1.0]}
    write_ruber_manifest(out, config, provisional, "arithmetic", {})
    scorer = calibrate.open_scorer(out, glove)
    calibration = calibrate.calibration_items(data_dir, calibration_contexts)
    normalisation = calibrate.min_max(scorer, calibration)
    scorer.bounds = normalisation
    log.info("ruber: normalisation %s from %d calibration items", normalisation, len(calibration))
    turns = calibrate.choose_query_turns(scorer, sets=choice_sets, data_dir=data_dir)
    config.query_turns = turns["chosen"]
    blends = calibrate.choose_blend(scorer, sets=choice_sets, data_dir=data_dir)
    log.info("ruber: query turns %s, blend %s, word weights %s", turns["mean_pearson"],
             blends["mean_pearson"], blends["by_word_weights"])
    summary = {**summary, "config": config.to_dict(), "normalisation": normalisation, "query_turns": turns,
               "blend": blends, "calibration": {"source": "DailyDialog++ dev.json", "items": len(calibration)}}
    summary.pop("correlations", None)
    (out / "training.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    write_ruber_manifest(out, config, normalisation, blends["chosen"], cards.card(summary, {}), blends["word_weights"])
    summary["correlations"] = calibrate.dev_correlations(out, glove, store, card_sets, data_dir)
    (out / "training.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    write_ruber_manifest(out, config, normalisation, blends["chosen"], cards.card(summary, summary["correlations"]),
                         blends["word_weights"])
    cards.write_card(out, summary)
    return summary
