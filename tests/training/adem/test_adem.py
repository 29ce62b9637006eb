"""ADEM's head and trainer: PCA, identity initialisation, calibration, learning, the C/R variants."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.hred_tiny import pretrain_tiny, train_heads_tiny
from training.adem.model import AdemHead as ADEMHead
from training.adem.model import ServedADEM, fit_pca
from training.adem.train import fit_adem
from training.core.heads import predict
from training.core.heads import correlations, group_split

torch.set_num_threads(1)


def synthetic(n: int = 1200, dim: int = 12, seed: int = 0):
    """Vectors whose ratings depend on c^T A r_hat + r^T B r_hat in the top principal directions."""
    rng = np.random.default_rng(seed)
    scale = np.linspace(3, 0.5, dim)
    c, r_hat, r = (rng.normal(size=(n, dim)) * scale for _ in range(3))
    signal = c[:, 0] * r_hat[:, 1] - 0.5 * r[:, 2] * r_hat[:, 0]
    human = np.clip(3 + signal / signal.std() + rng.normal(scale=0.3, size=n), 1, 5)
    groups = [f"ctx{i // 4}" for i in range(n)]
    return (c.astype(np.float32), r_hat.astype(np.float32), r.astype(np.float32)), human.astype(np.float32), groups


def test_pca_components_are_orthonormal_and_ordered() -> None:
    vectors, _, _ = synthetic()
    mean, components = fit_pca(vectors[0], 4)
    assert components.shape == (4, 12)
    assert np.allclose(components @ components.T, np.eye(4), atol=1e-5)
    projected = (vectors[0] - mean) @ components.T
    assert np.all(np.diff(projected.var(axis=0)) < 0)


def test_initial_head_is_the_dot_product_and_variants_keep_their_terms() -> None:
    rng = np.random.default_rng(1)
    c, r_hat, r = (torch.as_tensor(rng.normal(size=(5, 3)), dtype=torch.float32) for _ in range(3))
    eye = np.eye(3, dtype=np.float32)
    zero = np.zeros(3, dtype=np.float32)
    full = ADEMHead(zero, eye, "adem", alpha=1.0, beta=2.0)
    expected = ((c * r_hat).sum(-1) + (r * r_hat).sum(-1) - 1.0) / 2.0
    assert torch.allclose(full(c, r_hat, r), expected, atol=1e-6)
    assert torch.allclose(ADEMHead(zero, eye, "c-adem")(c, r_hat, r), (c * r_hat).sum(-1), atol=1e-6)
    assert torch.allclose(ADEMHead(zero, eye, "r-adem")(c, r_hat, r), (r * r_hat).sum(-1), atol=1e-6)


def test_the_served_graph_returns_the_score_and_its_two_terms() -> None:
    """ServedADEM is what export writes: its score is the head's, and its terms are C-ADEM's and
    R-ADEM's raw terms, which /score gives as s_unref and s_ref."""
    rng = np.random.default_rng(2)
    c, r_hat, r = (torch.as_tensor(rng.normal(size=(6, 4)), dtype=torch.float32) for _ in range(3))
    mean, components = fit_pca(rng.normal(size=(50, 4)).astype(np.float32), 3)
    head = ADEMHead(mean, components, "adem", alpha=0.5, beta=3.0)
    with torch.no_grad():
        head.M.add_(torch.as_tensor(rng.normal(size=(3, 3)), dtype=torch.float32))
        head.N.add_(torch.as_tensor(rng.normal(size=(3, 3)), dtype=torch.float32))
        score, s_unref, s_ref = ServedADEM(head)(c, r_hat, r)
        torch.testing.assert_close(score, head(c, r_hat, r), atol=1e-6, rtol=0)
        c_only, r_only = ADEMHead(mean, components, "c-adem"), ADEMHead(mean, components, "r-adem")
        c_only.M.copy_(head.M)
        r_only.N.copy_(head.N)
        torch.testing.assert_close(s_unref, c_only(c, r_hat, r), atol=1e-5, rtol=0)
        torch.testing.assert_close(s_ref, r_only(c, r_hat, r), atol=1e-5, rtol=0)


def test_training_learns_the_signal_and_validation_shares_no_context() -> None:
    vectors, human, groups = synthetic()
    test = np.arange(len(human)) >= 1000
    head, history = fit_adem(tuple(x[~test] for x in vectors), human[~test], groups[:1000], n=3,
                             gamma=0.02, epochs=15, patience=5, seed=0)
    start = history["history"][0]["valid_pearson"]
    assert history["best_valid_pearson"] > start + 0.3
    assert correlations(predict(head, tuple(x[test] for x in vectors)), human[test])["pearson"] > 0.6
    held = group_split(groups[:1000], 0.15, "adem-valid-0")
    assert not {g for g, h in zip(groups, held) if h} & {g for g, h in zip(groups, held) if not h}
    assert history["valid_items"] == int(held.sum())


def test_initial_predictions_sit_on_the_rating_scale() -> None:
    vectors, human, groups = synthetic(seed=3)
    head, history = fit_adem(vectors, human, groups, n=3, epochs=0, patience=1)
    predicted = predict(head, vectors)
    assert abs(predicted.mean() - human.mean()) < 0.2 and abs(predicted.std() - human.std()) < 0.2


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("adem")
    return train_heads_tiny(pretrain_tiny(root / "vhred"), root)


@pytest.mark.data
def test_train_command_reports_every_variant_on_dev(runs) -> None:
    metrics = json.loads((runs[0] / "metrics.json").read_text())
    rows = metrics["dev"]["dailydialog_gupta_multiref"]
    assert {"adem", "c-adem", "r-adem", "vhred (init)"} <= set(rows)
    assert all(row["item"]["n"] == rows["adem"]["item"]["n"] > 50 for row in rows.values())
    assert rows["adem"]["system"]["systems"] == 5
    assert metrics["training"]["adem"]["n"] == 7


@pytest.mark.data
def test_early_stopping_groups_are_contexts_not_conversation_ids() -> None:
    """DSTC7 repeats one context under several conversation ids: grouped by id, 470 of ADEM's 925
    validation items shared a context with fitting items (the paper holds out whole contexts)."""
    from training.data.judgements import load_set
    from training.core.heads import context_groups

    items = load_set("dstc7", "train")
    groups = context_groups(items)
    by_context: dict[str, set[str]] = {}
    for item, group in zip(items, groups):
        by_context.setdefault(" ".join(item.context[-1].lower().split()), set()).add(group)
    assert all(len(found) == 1 for found in by_context.values())
    ids_per_group: dict[str, set[str]] = {}
    for item, group in zip(items, groups):
        ids_per_group.setdefault(group, set()).add(item.conversation)
    assert any(len(ids) > 1 for ids in ids_per_group.values())  # what grouping by id split apart


@pytest.mark.data
def test_train_refuses_sets_without_references(tmp_path, capsys) -> None:
    """Sets without references leave ADEM nothing to train on: one error line, not argparse's usage block."""
    from training.__main__ import main

    assert main(["train", "adem", "--sets", "conture", "--out", str(tmp_path / "adem"),
                 "--encoder", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert "no train item has a reference" in err and "usage:" not in err
