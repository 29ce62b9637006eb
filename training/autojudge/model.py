"""AutoJudge's head (Deriu & Cieliebak 2019): the context-reply form c^T M r onto the rating scale, no reference.

One class for both encoders it is trained on; what differs is what the encoder gives the head:
- one vector per text (hred-encoder): score = (c^T M r - alpha) / beta, M the only trained weight, alpha and
  beta fixed, as for ADEM, so that predictions at M = I have the training ratings' mean and spread;
- turn vectors (a sentence encoder, `AutoJudgeHead.on_turns`): c pooled from the turns,
  score = alpha + beta (c^T M r - copy penalty), alpha and beta trained with M."""
from __future__ import annotations

import torch
from torch import nn

from training.core.turn_heads import DIM, StartsFromNextTurn, bilinear


class AutoJudgeHead(StartsFromNextTurn, nn.Module):
    """On vectors: `AutoJudgeHead(dim, alpha, beta)`, forward(c, r) -> score [batch].
    On turn vectors: `AutoJudgeHead.on_turns(pooling, dim)`, forward(context, context_mask, response)
    -> {score}, the exported graph's outputs."""

    referenced = False
    learns_from_ratings = True

    def __init__(self, dim: int = DIM, alpha: float = 0.0, beta: float = 1.0, *, pooling: str | None = None) -> None:
        super().__init__()
        self.on_vectors = pooling is None
        if self.on_vectors:
            self.M = nn.Parameter(torch.eye(dim))
            self.register_buffer("alpha", torch.tensor(float(alpha)))
            self.register_buffer("beta", torch.tensor(float(beta)))
            return
        self.add_context_form(pooling, dim)
        self.add_rating_scale()

    @classmethod
    def on_turns(cls, pooling: str = "last", dim: int = DIM) -> "AutoJudgeHead":
        """The head on a sentence encoder's turn vectors, M at the identity."""
        return cls(dim, pooling=pooling)

    def raw(self, c: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        """On vectors: c^T M r, before alpha and beta."""
        return ((c @ self.M) * r).sum(-1)

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor | dict[str, torch.Tensor]:
        if self.on_vectors:
            return (self.raw(*inputs) - self.alpha) / self.beta
        context, context_mask, response = inputs
        c = self.pool(context, context_mask, response)
        raw = bilinear(c, self.M, response) - self.copy(context, context_mask, response)
        return {"score": self.alpha + self.beta * raw}

    def regulariser(self) -> torch.Tensor:
        """On turn vectors: the mean pull of M towards its prior."""
        return (self.M - self.prior).abs().mean()
