"""AutoJudge's head: score(c, r) = (c^T M r - alpha) / beta, M the only trained weight (the encoder is frozen).

alpha and beta are set, as for ADEM, so that predictions at M = I have the training ratings' mean and spread."""
from __future__ import annotations

import torch
from torch import nn


class AutoJudgeHead(nn.Module):
    """Inputs c, r: [batch, d]; output [batch]."""

    def __init__(self, dim: int, alpha: float = 0.0, beta: float = 1.0) -> None:
        super().__init__()
        self.M = nn.Parameter(torch.eye(dim))
        self.register_buffer("alpha", torch.tensor(float(alpha)))
        self.register_buffer("beta", torch.tensor(float(beta)))

    def raw(self, c: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        return ((c @ self.M) * r).sum(-1)

    def forward(self, c: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        return (self.raw(c, r) - self.alpha) / self.beta
