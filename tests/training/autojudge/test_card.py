"""autojudge's card: every figure comes from the metrics key of the same name."""
from __future__ import annotations

from training.autojudge.card import correlations


def _row(pearson: float, spearman: float, n: int) -> dict:
    return {"item": {"pearson": pearson, "spearman": spearman, "n": n}}


def test_card_correlations_come_from_their_own_keys() -> None:
    dev = {"set-a": {"autojudge": _row(0.41, 0.37, 120), "adem": _row(0.22, 0.18, 90),
                     "c-adem": _row(0.11, 0.05, 90), "r-adem": _row(0.33, 0.29, 90)}}
    autojudge = {"correlations": correlations({
        "sets": [], "minutes": 1.0, "dev": dev,
        "cross_validation": {"convo_split": {"pearson": 0.3, "spearman": 0.2, "mae": 0.9, "n": 5},
                             "system_split": None}})}
    assert autojudge["correlations"]["dev"] == {"set-a": {"pearson": 0.41, "spearman": 0.37, "n": 120}}
    assert autojudge["correlations"]["convo_split"] == {"pearson": 0.3, "spearman": 0.2, "mae": 0.9}
