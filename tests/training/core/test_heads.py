"""training/core/heads.py: what every judged head's fit shares (early stopping, system-level figures)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from training.core.heads import correlations, system_correlation, train_head


def test_system_correlation_needs_three_systems() -> None:
    """Two system means always correlate +-1: no figure, rather than one that looks perfect."""
    assert system_correlation(np.arange(4.0), np.arange(4.0), ["a", "a", "b", "b"]) is None
    three = system_correlation(np.arange(6.0), np.arange(6.0), ["a", "a", "b", "b", "c", "c"])
    assert three["systems"] == 3


class _Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Linear(8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w(x).squeeze(-1)


def test_train_head_keeps_the_best_validation_epochs_weights() -> None:
    """Early stopping must hand back the best epoch's head, not the last one it tried."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 8)).astype(np.float32)
    y = x[:, 0] + rng.normal(scale=2.0, size=60)  # noisy, so the fit overfits and stops early
    vx = rng.normal(size=(30, 8)).astype(np.float32)
    vy = vx[:, 0] + rng.normal(scale=0.5, size=30)
    head = _Linear()
    result = train_head(head, (x,), y, (vx,), vy, lr=0.05, batch_size=8, epochs=200, patience=2, seed=0)
    assert len(result["history"]) - 1 < 200  # it stopped early: the last epoch is not the best
    again = correlations(head(torch.as_tensor(vx)).detach().numpy(), vy)["pearson"]
    assert again == pytest.approx(result["best_valid_pearson"], abs=1e-4)
