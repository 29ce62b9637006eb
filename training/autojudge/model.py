"""AutoJudge's head: score(c, r) = (c^T M r - alpha) / beta, M in R^{d x d} the only trained weight.

The encoder stays frozen (the paper trains "only the matrix M"); alpha and beta are constants.
The paper copies ADEM's alpha = 0.01, beta = 32 for its encoder; for ours they are set, as for
ADEM, so that predictions at M = I have the training ratings' mean and spread (see heads.calibrate).
"""
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
