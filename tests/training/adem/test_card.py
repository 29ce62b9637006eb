"""adem's card: every figure comes from the metrics key of the same name."""
from __future__ import annotations

from training.adem.card import correlations


def _row(pearson: float, spearman: float, n: int) -> dict:
    return {"item": {"pearson": pearson, "spearman": spearman, "n": n}}


def test_card_correlations_come_from_their_own_keys() -> None:
    dev = {"set-a": {"autojudge": _row(0.41, 0.37, 120), "adem": _row(0.22, 0.18, 90),
                     "c-adem": _row(0.11, 0.05, 90), "r-adem": _row(0.33, 0.29, 90)}}
    adem = {"correlations": correlations({"sets": [], "minutes": 1.0, "dev": dev,
                                          "training": {"adem": {"alpha": 1.5, "beta": 2.0}}})}
    assert adem["correlations"] == {"dev": {"set-a": {"pearson": 0.22, "spearman": 0.18, "n": 90}},
                                    "c-adem": {"set-a": {"pearson": 0.11, "spearman": 0.05, "n": 90}},
                                    "r-adem": {"set-a": {"pearson": 0.33, "spearman": 0.29, "n": 90}}}
