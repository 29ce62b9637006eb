"""RUBER's ONNX graphs: one per utterance encoder (on embedded words) and one for the head.

Legacy exporter (opset 17; needs only `onnx`), symbolic batch and time axes, and a parity
check against torch at several shapes, batch 1 and long inputs included (NOTES.md).
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from torch import nn

from training.ruber.model import GloveBiGRUEncoder, UnreferencedHead

OPSET = 17
# (batch, time) shapes of the parity check: batch 1, ragged batches and long inputs
PARITY_SHAPES = ((1, 1), (1, 7), (3, 5), (8, 40), (2, 300))


class _EncoderGraph(nn.Module):
    def __init__(self, encoder: GloveBiGRUEncoder) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(self, embedded: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        return self.encoder(embedded, lengths)


def _export(module: nn.Module, args: tuple, path: Path, inputs: list[str], outputs: list[str],
            axes: dict[str, dict[int, str]]) -> Path:
    module.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the legacy exporter's deprecation and GRU batch_first notes
        torch.onnx.export(module, args, str(path), input_names=inputs, output_names=outputs,
                          dynamic_axes=axes, opset_version=OPSET, dynamo=False)
    return path


def export_encoder(encoder: GloveBiGRUEncoder, path: Path) -> Path:
    """embedded [batch, time, E] float, lengths [batch] int64 -> vector [batch, 2H]."""
    dim = encoder.embedding.embedding_dim
    example = (torch.randn(2, 3, dim), torch.tensor([3, 2], dtype=torch.long))
    return _export(_EncoderGraph(encoder), example, Path(path), ["embedded", "lengths"], ["vector"],
                   {"embedded": {0: "batch", 1: "time"}, "lengths": {0: "batch"}, "vector": {0: "batch"}})


def export_head(head: UnreferencedHead, path: Path) -> Path:
    """query [batch, D], reply [batch, D] float -> score [batch] in (0, 1)."""
    dim = head.M.shape[0]
    example = (torch.randn(2, dim), torch.randn(2, dim))
    return _export(head, example, Path(path), ["query", "reply"], ["score"],
                   {"query": {0: "batch"}, "reply": {0: "batch"}, "score": {0: "batch"}})


def _session(path: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


@torch.no_grad()
def encoder_parity(encoder: GloveBiGRUEncoder, path: Path, shapes=PARITY_SHAPES, seed: int = 0) -> float:
    """Largest |ONNX - torch| over random ragged batches of the given (batch, time) shapes."""
    session = _session(path)
    rng = np.random.default_rng(seed)
    worst = 0.0
    dim = encoder.embedding.embedding_dim
    for batch, time in shapes:
        embedded = rng.normal(size=(batch, time, dim)).astype(np.float32)
        lengths = rng.integers(1, time + 1, size=batch).astype(np.int64)
        lengths[0] = time  # one row always fills the batch
        expected = encoder(torch.from_numpy(embedded), torch.from_numpy(lengths)).numpy()
        (got,) = session.run(None, {"embedded": embedded, "lengths": lengths})
        worst = max(worst, float(np.abs(got - expected).max()))
    return worst


@torch.no_grad()
def head_parity(head: UnreferencedHead, path: Path, batches=(1, 2, 17, 256), seed: int = 0) -> float:
    session = _session(path)
    rng = np.random.default_rng(seed)
    worst = 0.0
    dim = head.M.shape[0]
    for batch in batches:
        q = rng.normal(size=(batch, dim)).astype(np.float32)
        r = rng.normal(size=(batch, dim)).astype(np.float32)
        expected = head(torch.from_numpy(q), torch.from_numpy(r)).numpy()
        (got,) = session.run(None, {"query": q, "reply": r})
        worst = max(worst, float(np.abs(got - expected).max()))
    return worst


def symbolic_inputs(path: Path) -> bool:
    """True when every input's variable axes (all but the feature axis) are symbolic, not frozen."""
    for node in _session(path).get_inputs():
        variable = node.shape if len(node.shape) == 1 else node.shape[:-1]
        if not all(isinstance(d, str) for d in variable):
            return False
    return True
