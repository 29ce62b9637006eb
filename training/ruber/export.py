"""RUBER's ONNX graphs: one per utterance encoder (on embedded words) and one for the head.

Built on the shared helpers of `training.export` (legacy exporter, opset 17, symbolic axes
checked, parity against torch), with RUBER's own example shapes: batch 1, ragged batches and
long inputs (NOTES.md).
"""
from __future__ import annotations

from pathlib import Path

import onnxruntime as ort
import torch
from torch import nn

from training.core.onnx_export import check_parity, export_onnx
from training.ruber.model import GloveBiGRUEncoder, UnreferencedHead

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


def export_head(head: UnreferencedHead, path: Path) -> Path:
    """query [batch, D], reply [batch, D] float -> score [batch] in (0, 1)."""
    dim = head.M.shape[0]
    example = (torch.randn(2, dim), torch.randn(2, dim))
    return export_onnx(head, example, Path(path), HEAD_INPUTS, ["score"],
                       {"query": {0: "batch"}, "reply": {0: "batch"}, "score": {0: "batch"}})


def encoder_examples(dim: int, shapes=PARITY_SHAPES, seed: int = 0) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Random ragged (embedded, lengths) batches; one row of each fills its batch."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for batch, time in shapes:
        lengths = torch.randint(1, time + 1, (batch,), generator=g)
        lengths[0] = time
        out.append((torch.randn((batch, time, dim), generator=g), lengths))
    return out


def encoder_parity(encoder: GloveBiGRUEncoder, path: Path, shapes=PARITY_SHAPES, seed: int = 0) -> float:
    """Largest |ONNX - torch| over the example shapes; raises above training.export.PARITY_ATOL."""
    examples = encoder_examples(encoder.embedding.embedding_dim, shapes, seed)
    return check_parity(_EncoderGraph(encoder), path, examples, ENCODER_INPUTS)


def head_parity(head: UnreferencedHead, path: Path, batches=(1, 2, 17, 256), seed: int = 0) -> float:
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
