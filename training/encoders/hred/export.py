"""The hred-encoder component from a pre-training run: tokenizer.json (typographic quotes mapped), the utterance
and context encoders as ONNX graphs checked against torch at several shapes, the manifest and the card."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import torch

from service.artifacts.manifest import write_manifest
from training.core.card import write_card, write_figures
from training.core.onnx_export import check_parity, export_onnx, fresh_folder, ragged_examples
from training.encoders.hred import card as cards
from training.encoders.hred import tokenizer as bpe
from training.encoders.hred.model import load_checkpoint

log = logging.getLogger("training.export")
NAME = "hred-encoder"


# --- example inputs for the hierarchical encoder's graphs -----------------------------------------
def utterance_examples(vocab: int, max_tokens: int, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(tokens, lengths) at several shapes: batch 1, ragged batches, the longest utterances."""
    return ragged_examples(((1, 1), (1, max_tokens), (3, 5), (8, max_tokens), (17, 12)),
                           lambda batch, width, g: torch.randint(4, vocab, (batch, width), generator=g), seed)


def context_examples(dim: int, max_turns: int, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(vectors, turns) at several shapes: one turn, the most turns, ragged batches."""
    return ragged_examples(((1, 1), (1, max_turns), (4, 3), (9, max_turns), (2, 30)),
                           lambda batch, turns, g: torch.randn((batch, turns, dim), generator=g), seed)


def export_hred(checkpoint: Path, tokenizer_path: Path, folder: Path, version: str,
                card: dict[str, Any] | None = None) -> dict[str, float]:
    """The `hred-encoder` component: tokenizer.json + utterance_encoder.onnx + context_encoder.onnx.

    tokenizer.json is the run's with typographic quotes mapped to ASCII (`training.encoders.hred.tokenizer.served`)."""
    model, extra = load_checkpoint(checkpoint)
    cfg = model.config
    folder = fresh_folder(Path(folder))
    # The served tokenizer reads ’ ‘ “ ” as ' and " (training/encoders/hred/tokenizer.py `served` says why the run's
    # own tokenizer, which the encoder and heads were trained on, does not).
    bpe.save_served(tokenizer_path, folder / "tokenizer.json")
    parity: dict[str, float] = {}
    utt_examples = utterance_examples(cfg.vocab_size, cfg.max_tokens)
    export_onnx(model.utterance_encoder, utt_examples[3], folder / "utterance_encoder.onnx",
                ["tokens", "lengths"], ["vectors"],
                {"tokens": {0: "batch", 1: "time"}, "lengths": {0: "batch"}, "vectors": {0: "batch"}})
    parity["utterance_encoder.onnx"] = check_parity(model.utterance_encoder, folder / "utterance_encoder.onnx",
                                                    utt_examples, ["tokens", "lengths"])
    ctx_examples = context_examples(2 * cfg.utterance, cfg.max_turns)
    export_onnx(model.context_encoder, ctx_examples[3], folder / "context_encoder.onnx",
                ["vectors", "turns"], ["state"],
                {"vectors": {0: "batch", 1: "turns"}, "turns": {0: "batch"}, "state": {0: "batch"}})
    parity["context_encoder.onnx"] = check_parity(model.context_encoder, folder / "context_encoder.onnx",
                                                  ctx_examples, ["vectors", "turns"])
    config = {"max_tokens": cfg.max_tokens, "max_context_turns": cfg.max_turns - 1,
              "utterance_dim": 2 * cfg.utterance, "dimension": cfg.context, "vhred": cfg.to_dict(),
              "parity_max_abs_diff": parity, "pretraining": extra}
    write_manifest(folder, name=folder.name, version=version, kind="component", scorer="hred-encoder",
                   tokenizer="tokenizer.json", config=config, card=card or {})
    log.info("exported %s: parity %s", folder, parity)
    return parity


def export_run(run: Path, metrics: dict[str, Any], folder: Path, version: str,
               figures_folder: Path | None = None) -> dict[str, float]:
    """The component folder from a finished pre-training run (model.pt, tokenizer.json; `metrics` its
    metrics.json), its card's figures also into `figures_folder` where given."""
    parity = export_hred(Path(run) / "model.pt", Path(run) / "tokenizer.json", folder, version,
                         card=cards.card(cards.card_figures(metrics)))
    config = json.loads((Path(folder) / "manifest.json").read_text())["config"]["vhred"]
    figures = cards.figures(folder, metrics, config)
    write_card(folder, cards.readme(figures))
    write_figures(figures_folder, NAME, figures)
    return parity
