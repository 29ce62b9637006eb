"""ADEM's head (Lowe et al. 2017): the context term c^T M r_hat plus the reference term r^T N r_hat, onto the scale.

One class for both encoders; what differs is what the encoder gives the head:
- one vector per text (hred-encoder): PCA inside, score = (c^T M r_hat + r^T N r_hat - alpha) / beta, alpha
  and beta fixed at calibration (paper eq. 1); C-ADEM and R-ADEM keep one term each (paper Table 3);
- turn vectors (a sentence encoder, `AdemHead.on_turns`): c pooled from the turns, no PCA,
  score = alpha + beta (c^T M r_hat + r^T N r_hat - copy penalty), alpha and beta trained with M and N."""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from training.core.turn_heads import DIM, StartsFromNextTurn, bilinear

VARIANTS = ("adem", "c-adem", "r-adem")


def fit_pca(vectors: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(mean [D], components [n, D]) of the principal axes of `vectors` (numpy SVD, sign-fixed)."""
    mean = vectors.mean(axis=0)
    _, _, vt = np.linalg.svd(vectors - mean, full_matrices=False)
    components = vt[:n]
    signs = np.sign(components[np.arange(len(components)), np.abs(components).argmax(axis=1)])
    return mean.astype(np.float32), (components * signs[:, None]).astype(np.float32)


class AdemHead(StartsFromNextTurn, nn.Module):
    """On vectors: `AdemHead(mean, components, variant, alpha, beta)`, forward(c, r_hat, r) -> score [batch].
    On turn vectors: `AdemHead.on_turns(pooling, dim)`, forward(context, context_mask, response, reference)
    -> {score, s_unref, s_ref, copy_penalty}, the exported graph's outputs."""

    referenced = True
    learns_from_ratings = True

    def __init__(self, mean: np.ndarray | None = None, components: np.ndarray | None = None, variant: str = "adem",
                 alpha: float = 0.0, beta: float = 1.0, *, pooling: str | None = None, dim: int = DIM) -> None:
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}")
        self.variant = variant
        self.on_vectors = pooling is None
        if self.on_vectors:
            n = components.shape[0]
            self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32))
            self.register_buffer("components", torch.as_tensor(components, dtype=torch.float32))
            self.M = nn.Parameter(torch.eye(n))
            self.N = nn.Parameter(torch.eye(n))
            self.register_buffer("alpha", torch.tensor(float(alpha)))
            self.register_buffer("beta", torch.tensor(float(beta)))
            return
        self.add_context_form(pooling, dim)
        self.N = nn.Parameter(torch.eye(dim))
        self.add_rating_scale()

    @classmethod
    def on_turns(cls, pooling: str = "last", dim: int = DIM) -> "AdemHead":
        """The head on a sentence encoder's turn vectors, M and N at the identity."""
        return cls(pooling=pooling, dim=dim)

    def project(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) @ self.components.T

    def terms(self, c: torch.Tensor, r_hat: torch.Tensor, r: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """On vectors: (c^T M r_hat, r^T N r_hat) in the PCA space; a term the variant drops is zero."""
        c, r_hat, r = self.project(c), self.project(r_hat), self.project(r)
        zero = torch.zeros(c.shape[0], dtype=c.dtype)
        context_term = ((c @ self.M) * r_hat).sum(-1) if self.variant in ("adem", "c-adem") else zero
        reference_term = ((r @ self.N) * r_hat).sum(-1) if self.variant in ("adem", "r-adem") else zero
        return context_term, reference_term

    def raw(self, c: torch.Tensor, r_hat: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        """On vectors: c^T M r_hat + r^T N r_hat (the terms the variant keeps), before alpha and beta."""
        context_term, reference_term = self.terms(c, r_hat, r)
        return context_term + reference_term

    def scale(self, raw: torch.Tensor) -> torch.Tensor:
        """On vectors: (raw - alpha) / beta, raw onto the rating scale."""
        return (raw - self.alpha) / self.beta

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor | dict[str, torch.Tensor]:
        if self.on_vectors:
            return self.scale(self.raw(*inputs))
        context, context_mask, response, reference = inputs
        c = self.pool(context, context_mask, response)
        s_unref, s_ref = bilinear(c, self.M, response), bilinear(reference, self.N, response)
        copy_penalty = self.copy(context, context_mask, response)
        raw = s_unref + s_ref - copy_penalty
        return {"score": self.alpha + self.beta * raw, "s_unref": s_unref, "s_ref": s_ref, "copy_penalty": copy_penalty}

    def l1(self) -> torch.Tensor:
        """On vectors: the l1 norm of the matrices the variant trains."""
        terms = []
        if self.variant in ("adem", "c-adem"):
            terms.append(self.M.abs().sum())
        if self.variant in ("adem", "r-adem"):
            terms.append(self.N.abs().sum())
        return sum(terms)

    def regulariser(self) -> torch.Tensor:
        """On turn vectors: the mean pull of M towards its prior and of N towards the identity."""
        return (self.M - self.prior).abs().mean() + (self.N - torch.eye(self.dim)).abs().mean()


class ServedADEM(nn.Module):
    """The exported graph of the head on vectors: the score and its two terms before alpha and beta, for
    /score's `details`: s_unref = c^T M r_hat (the context term) and s_ref = r^T N r_hat (the reference term)."""

    OUTPUTS = ("score", "s_unref", "s_ref")

    def __init__(self, head: AdemHead) -> None:
        super().__init__()
        self.head = head

    def scales(self) -> tuple[float, ...]:
        """Each output's size in score units (the terms are divided by beta), for the parity check."""
        beta = max(1.0, abs(float(self.head.beta)))
        return (1.0, beta, beta)

    def forward(self, c: torch.Tensor, r_hat: torch.Tensor, r: torch.Tensor) -> tuple[torch.Tensor, ...]:
        context_term, reference_term = self.head.terms(c, r_hat, r)
        return self.head.scale(context_term + reference_term), context_term, reference_term
