"""AutoJudge's head and trainer: only M learns, calibration, grouped cross-validation."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.hred_tiny import pretrain_tiny, train_heads_tiny
from training.autojudge.model import AutoJudgeHead
from training.autojudge.train import cross_validate, fit_autojudge
from training.core.heads import group_folds

torch.set_num_threads(1)


def synthetic(n: int = 1500, dim: int = 8, seed: int = 0):
    rng = np.random.default_rng(seed)
    c, r = rng.normal(size=(n, dim)), rng.normal(size=(n, dim))
    signal = c[:, 0] * r[:, 1] + c[:, 2] * r[:, 2]
    human = np.clip(3 + signal / signal.std() + rng.normal(scale=0.3, size=n), 1, 5)
    return (c.astype(np.float32), r.astype(np.float32)), human.astype(np.float32), [f"d{i // 10}" for i in range(n)]


def test_only_m_is_trainable() -> None:
    head = AutoJudgeHead(4, alpha=0.5, beta=2.0)
    assert [name for name, p in head.named_parameters() if p.requires_grad] == ["M"]
    c, r = torch.ones(1, 4), torch.ones(1, 4)
    assert head(c, r).item() == pytest.approx((4 - 0.5) / 2.0)


def test_training_improves_on_the_identity() -> None:
    vectors, human, groups = synthetic()
    head, history = fit_autojudge(vectors, human, groups, lr=0.01, batch_size=128, epochs=40, patience=10)
    assert history["best_valid_pearson"] > history["history"][0]["valid_pearson"] + 0.3
    assert float(head.alpha) == pytest.approx(history["alpha"])  # alpha and beta stay fixed


def test_cross_validation_keeps_groups_together() -> None:
    vectors, human, groups = synthetic(n=400)
    folds = group_folds(groups, 4, "convo")
    for group in set(groups):
        assert len({f for f, g in zip(folds, groups) if g == group}) == 1
    result = cross_validate(vectors, human, folds, groups, seed=0, lr=0.01, batch_size=64, epochs=5, patience=3)
    assert result["folds"] == 4 and len(result["per_fold"]) == 4 and result["mae"] > 0


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("autojudge")
    return train_heads_tiny(pretrain_tiny(root / "vhred"), root)


@pytest.mark.data
def test_train_command_reports_dev_and_both_table_1_splits(runs) -> None:
    metrics = json.loads((runs[1] / "metrics.json").read_text())
    assert "autojudge" in metrics["dev"]["dailydialog_gupta_multiref"]
    cv = metrics["cross_validation"]
    assert cv["convo_split"]["folds"] == 2
    assert cv["system_split"]["folds"] == 5  # the five systems of the Gupta set
