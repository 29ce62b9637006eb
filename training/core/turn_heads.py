"""What every head on a sentence encoder's turn vectors shares: context pooling, the copy penalty, the
bilinear form, M's start from next-turn pre-training, and the ONNX export of such a head with its parity check.

Inputs are unit vectors with the context right-padded and masked exactly, so a score never depends on the
batch; bilinear matrices start at the identity, so an untrained head ranks as the cosine does."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import torch
from torch import nn

from training.core.onnx_export import OPSET, refuse_non_finite

DIM = 384  # all-MiniLM-L6-v2's width, the default encoder's
POOLINGS = ("last", "gru", "attn")
MAX_DISTANCE = 8
PARITY_ATOL = 1e-4


def last_real(context: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Vector of each row's last unmasked turn (rows are right-padded)."""
    index = (mask.sum(dim=1).long() - 1).clamp(min=0)
    return context[torch.arange(context.shape[0]), index]


class ContextPool(nn.Module):
    """The context vector from turn vectors: the last turn, the last turn plus a GRU's correction (started at
    zero), or reply-aware attention over the turns with a learned bias by distance from the end."""

    def __init__(self, pooling: str, dim: int = DIM) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}")
        self.pooling = pooling
        if pooling == "gru":
            self.gru = nn.GRU(dim, dim, batch_first=True)
            self.project = nn.Linear(dim, dim)
            nn.init.zeros_(self.project.weight)
            nn.init.zeros_(self.project.bias)
        if pooling == "attn":
            self.temperature = nn.Parameter(torch.tensor(5.0))
            bias = torch.zeros(MAX_DISTANCE)
            bias[0] = 2.0
            self.distance_bias = nn.Parameter(bias)

    def forward(self, context: torch.Tensor, mask: torch.Tensor, response: torch.Tensor) -> torch.Tensor:
        last = last_real(context, mask)
        if self.pooling == "last":
            return last
        if self.pooling == "gru":
            states, _ = self.gru(context)
            return last + self.project(last_real(states, mask))
        lengths = mask.sum(dim=1, keepdim=True)
        positions = torch.arange(context.shape[1], dtype=mask.dtype).unsqueeze(0)
        distance = (lengths - 1 - positions).clamp(min=0, max=MAX_DISTANCE - 1).long()
        logits = self.temperature * (context @ response.unsqueeze(-1)).squeeze(-1) + self.distance_bias[distance]
        logits = logits.masked_fill(mask <= 0, -1e4)
        weights = torch.softmax(logits, dim=1) * mask
        return (weights.unsqueeze(-1) * context).sum(dim=1)


class CopyPenalty(nn.Module):
    """gamma * max(0, cos(last turn, reply) - tau): a reply that repeats the last turn is no answer.

    With M pulled towards the identity, c^T M r is largest exactly when the reply copies the context (the
    reward failure the AutoJudge paper describes), and a bilinear form cannot both keep the cosine's
    ranking and push x^T M x down for every x. gamma and tau are trained unless fixed."""

    def __init__(self, gamma: float = 5.0, trainable: bool = True) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.tensor(gamma), requires_grad=trainable)  # softplus(x) ~ x for x >= 5
        self.tau = nn.Parameter(torch.tensor(1.1), requires_grad=trainable)  # sigmoid(1.1) ~ 0.75

    def forward(self, context: torch.Tensor, mask: torch.Tensor, response: torch.Tensor) -> torch.Tensor:
        similarity = (last_real(context, mask) * response).sum(dim=-1)
        excess = torch.relu(similarity - torch.sigmoid(self.tau))
        return nn.functional.softplus(self.gamma) * excess


def bilinear(a: torch.Tensor, matrix: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a^T M b per row, as matmuls (nn.Bilinear does not export with the legacy exporter)."""
    return ((a @ matrix) * b).sum(dim=-1)


class StartsFromNextTurn:
    """A head on turn vectors whose context-reply matrix M can start from next-turn pre-training
    (training/core/next_turn.py). Its parts are made in the order its exported graphs name them.

    `prior` is where the l1 term pulls M: the identity, or the pre-trained matrix. A plain tensor, not a
    buffer: training needs it, the exported graph does not."""

    M: nn.Parameter
    prior: torch.Tensor

    def add_context_form(self, pooling: str, dim: int) -> None:
        """The context pooling and M, at the identity."""
        self.dim = dim
        self.pool = ContextPool(pooling, dim)
        self.M = nn.Parameter(torch.eye(dim))

    def add_rating_scale(self) -> None:
        """alpha (3, the middle of the 1-5 scale) and beta (1), trained with M; the copy penalty; M's prior."""
        self.alpha = nn.Parameter(torch.tensor(3.0))
        self.beta = nn.Parameter(torch.tensor(1.0))
        self.copy = CopyPenalty()
        self.prior = torch.eye(self.dim)

    def start_from(self, matrix: torch.Tensor) -> None:
        """Start M at a pre-trained matrix and pull it there instead of to the identity."""
        self.M.data.copy_(matrix)
        self.prior = matrix.detach().clone()


def export_turn_head(head: nn.Module, path: Path) -> None:
    """ONNX export of a head on turn vectors (legacy exporter) with symbolic batch and turn axes; its inputs are
    context, context_mask, response (and reference where the head reads one), its outputs the head's by name."""
    head.eval()
    batch, turns, dim = 3, 2, getattr(head, "dim", DIM)
    context = torch.nn.functional.normalize(torch.randn(batch, turns, dim), dim=-1)
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    response = torch.nn.functional.normalize(torch.randn(batch, dim), dim=-1)
    args = [context, mask, response]
    names = ["context", "context_mask", "response"]
    if head.referenced:
        args.append(torch.nn.functional.normalize(torch.randn(batch, dim), dim=-1))
        names.append("reference")
    outputs = list(head(*args).keys())
    axes = {"context": {0: "batch", 1: "turns"}, "context_mask": {0: "batch", 1: "turns"}}
    axes.update({n: {0: "batch"} for n in names[2:] + outputs})
    with torch.no_grad():
        torch.onnx.export(head, tuple(args), str(path), dynamo=False, opset_version=OPSET,
                          input_names=names, output_names=outputs, dynamic_axes=axes)


def check_turn_head(head: nn.Module, path: Path) -> None:
    """ONNX Runtime against torch at batch 1 and a ragged batch; refuses to ship a graph that differs."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    rng = np.random.default_rng(0)
    dim = getattr(head, "dim", DIM)
    for batch, turns in ((1, 1), (5, 4)):
        context = rng.standard_normal((batch, turns, dim)).astype(np.float32)
        context /= np.linalg.norm(context, axis=-1, keepdims=True)
        mask = np.ones((batch, turns), np.float32)
        mask[0, 1:] = 0
        feeds = {"context": context, "context_mask": mask}
        for name in names[2:]:
            vector = rng.standard_normal((batch, dim)).astype(np.float32)
            feeds[name] = vector / np.linalg.norm(vector, axis=-1, keepdims=True)
        got = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
        refuse_non_finite(list(got.values()), path)
        with torch.no_grad():
            want = head(*[torch.from_numpy(feeds[n]) for n in names])
        for key, value in want.items():
            if np.abs(got[key] - value.numpy()).max() > PARITY_ATOL:
                raise RuntimeError(f"{path.name}: ONNX output {key} differs from torch")
