"""ADEM's head: score(c, r, r_hat) = (c^T M r_hat + r^T N r_hat - alpha) / beta (paper eq. 1), PCA inside.

Only M and N are trained (from the identity); alpha and beta are constants set at initialisation.
C-ADEM keeps only the context term, R-ADEM only the reference term (paper Table 3)."""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

VARIANTS = ("adem", "c-adem", "r-adem")


def fit_pca(vectors: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(mean [D], components [n, D]) of the principal axes of `vectors` (numpy SVD, sign-fixed)."""
    mean = vectors.mean(axis=0)
    _, _, vt = np.linalg.svd(vectors - mean, full_matrices=False)
    components = vt[:n]
    signs = np.sign(components[np.arange(len(components)), np.abs(components).argmax(axis=1)])
    return mean.astype(np.float32), (components * signs[:, None]).astype(np.float32)


class ADEMHead(nn.Module):
    """Inputs c, r_hat, r: [batch, D] each (the order of the exported graph); output [batch]."""

    def __init__(self, mean: np.ndarray, components: np.ndarray, variant: str = "adem",
                 alpha: float = 0.0, beta: float = 1.0) -> None:
        super().__init__()
        if variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}")
        self.variant = variant
        n = components.shape[0]
        self.register_buffer("mean", torch.as_tensor(mean, dtype=torch.float32))
        self.register_buffer("components", torch.as_tensor(components, dtype=torch.float32))
        self.M = nn.Parameter(torch.eye(n))
        self.N = nn.Parameter(torch.eye(n))
        self.register_buffer("alpha", torch.tensor(float(alpha)))
        self.register_buffer("beta", torch.tensor(float(beta)))

    def project(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) @ self.components.T

    def terms(self, c: torch.Tensor, r_hat: torch.Tensor, r: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(c^T M r_hat, r^T N r_hat) in the PCA space; a term the variant drops is zero."""
        c, r_hat, r = self.project(c), self.project(r_hat), self.project(r)
        zero = torch.zeros(c.shape[0], dtype=c.dtype)
        context_term = ((c @ self.M) * r_hat).sum(-1) if self.variant in ("adem", "c-adem") else zero
        reference_term = ((r @ self.N) * r_hat).sum(-1) if self.variant in ("adem", "r-adem") else zero
        return context_term, reference_term

    def raw(self, c: torch.Tensor, r_hat: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        """c^T M r_hat + r^T N r_hat (the terms the variant keeps), before alpha and beta."""
        context_term, reference_term = self.terms(c, r_hat, r)
        return context_term + reference_term

    def scale(self, raw: torch.Tensor) -> torch.Tensor:
        """(raw - alpha) / beta: raw onto the rating scale."""
        return (raw - self.alpha) / self.beta

    def forward(self, c: torch.Tensor, r_hat: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
        return self.scale(self.raw(c, r_hat, r))

    def l1(self) -> torch.Tensor:
        terms = []
        if self.variant in ("adem", "c-adem"):
            terms.append(self.M.abs().sum())
        if self.variant in ("adem", "r-adem"):
            terms.append(self.N.abs().sum())
        return sum(terms)


class ServedADEM(nn.Module):
    """The exported graph: the score and its two terms, so the service can answer /score's `details`
    (the contract's adem example gives s_ref and s_unref): s_unref = c^T M r_hat, the context term,
    and s_ref = r^T N r_hat, the reference term, both before alpha and beta."""

    OUTPUTS = ("score", "s_unref", "s_ref")

    def __init__(self, head: ADEMHead) -> None:
        super().__init__()
        self.head = head

    def scales(self) -> tuple[float, ...]:
        """Each output's size in score units (the terms are divided by beta), for the parity check."""
        beta = max(1.0, abs(float(self.head.beta)))
        return (1.0, beta, beta)

    def forward(self, c: torch.Tensor, r_hat: torch.Tensor, r: torch.Tensor) -> tuple[torch.Tensor, ...]:
        context_term, reference_term = self.head.terms(c, r_hat, r)
        return self.head.scale(context_term + reference_term), context_term, reference_term
