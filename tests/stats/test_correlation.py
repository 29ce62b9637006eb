"""service.stats.correlation against scipy and exact permutation p-values."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from service import stats
from tests.stats.samples import GOOD, HUMAN, SCIPY


@pytest.mark.parametrize("method", stats.METHODS)
def test_correlation_matches_scipy(method: str) -> None:
    expected = SCIPY[method](GOOD, HUMAN)
    got = stats.correlation(GOOD, HUMAN, method)
    assert got["r"] == pytest.approx(expected.statistic, abs=1e-12)
    if method == "spearman":  # 40 items: a Monte Carlo permutation p, here beyond every sampled pairing
        assert got["p"] == 2 / 10_000 and got["p_at_floor"] and expected.pvalue < got["p"]
    else:
        assert got["p"] == pytest.approx(expected.pvalue, rel=1e-9)
    assert got["n"] == 40


@pytest.mark.parametrize("method", stats.METHODS)
def test_constant_and_short_inputs_give_none_with_reason(method: str) -> None:
    constant = stats.correlation([2.0] * 5, [1, 2, 3, 4, 5], method)
    assert constant["r"] is None and constant["p"] is None and "constant" in constant["reason"]
    short = stats.correlation([1.0, 2.0], [2.0, 1.0], method)
    assert short["r"] is None and "too few" in short["reason"]


# --- Spearman's p: exact for few items, never below 2/n! -------------------------------------------
def _permutation_p(x: list[float], y: list[float]) -> float:
    """scipy.stats.permutation_test over all n! pairings of the ranks: the exact two-sided p."""
    ry = sps.rankdata(y) - np.mean(sps.rankdata(y))

    def rho(rx: np.ndarray, axis: int = -1) -> np.ndarray:
        rc = rx - rx.mean(axis=axis, keepdims=True)
        return (rc * ry).sum(axis=axis) / np.sqrt((rc * rc).sum(axis=axis) * (ry * ry).sum())

    return sps.permutation_test((sps.rankdata(x),), rho, permutation_type="pairings", n_resamples=np.inf,
                                vectorized=True).pvalue


@pytest.mark.parametrize(
    ("x", "y"),
    [
        ([2.9, 4.0, 1.7], [3.0, 4.5, 1.0]),  # API.md's example: rho = 1
        ([0.1, 0.0, 0.2], [3.0, 4.5, 1.0]),  # rho = -1
        ([1, 2, 3, 4, 5], [1, 2, 3, 4, 5]),
        ([1, 1, 2, 3, 4], [1, 1, 2, 3, 4]),  # tied and perfect: more than one pairing in each tail
        ([1, 3, 2, 5, 4, 6], [2, 1, 4, 3, 6, 5]),
        ([1, 1, 2, 2, 3, 3, 4], [1, 2, 1, 3, 3, 4, 4]),
        ([3, 1, 4, 1, 5, 9, 2, 6], [2, 7, 1, 8, 2, 8, 1, 8]),
        ([1, 2, 3, 4, 5, 6, 7, 8, 9], [2, 1, 3, 5, 4, 6, 7, 9, 8]),
        ([1, 1, 1, 2, 2, 3, 4, 5, 5], [5, 4, 4, 3, 2, 2, 1, 1, 1]),
    ],
)
def test_spearman_p_is_exact_up_to_nine_items(x: list[float], y: list[float]) -> None:
    got = stats.correlation(x, y, "spearman")
    assert got["r"] == pytest.approx(sps.spearmanr(x, y).statistic, abs=1e-12)
    assert got["p"] == pytest.approx(_permutation_p(x, y), rel=1e-12)


@pytest.mark.parametrize("n", [10, 12, 25])
def test_spearman_p_of_perfect_ranks_is_two_over_n_factorial(n: int) -> None:
    x = np.arange(n, dtype=float)
    for y in (x ** 3, -x):
        got = stats.correlation(x, y, "spearman")
        # scipy's rho may be 1 - 1e-16: t then is finite but huge, and its p far below 2/n! all the same
        assert abs(got["r"]) == pytest.approx(1.0) and got["p"] == pytest.approx(2 / math.factorial(n), rel=1e-9, abs=0)
    near = x.copy()
    near[[0, 1]] = near[[1, 0]]  # 2n of the n! pairings as extreme: beyond what 9,999 sampled resolve
    assert stats.correlation(x, near, "spearman")["p"] == 2 / 10_000


def test_spearman_p_past_the_permutation_range_is_never_below_two_over_n_factorial() -> None:
    """Above 50 items p is scipy's t, which is 0 (or far below any pairing's p) for perfect ranks."""
    x = np.arange(60, dtype=float)
    for y in (x ** 3, -x):
        assert stats.correlation(x, y, "spearman")["p"] == pytest.approx(2 / math.factorial(60), rel=1e-9, abs=0)


def test_one_sampled_pairing_as_extreme_is_not_the_floor() -> None:
    """At the floor no sampled pairing reaches the observed one; one that does gives (1 + 1) x 2 / (B + 1), a
    p with a Monte Carlo error."""
    from service.stats.correlation import _sampled_pairings_p

    null = np.zeros(9_999, dtype=np.int64)
    assert _sampled_pairings_p(null, 5) == (2 / 10_000, None, True)
    null[0] = 5
    p, mc_se, at_floor = _sampled_pairings_p(null, 5)
    assert p == 4 / 10_000 and mc_se is not None and not at_floor


@pytest.mark.parametrize(
    ("x", "y"),
    [
        ([1, 2, 2, 4, 5], [1, 2, 3, 4, 5]),  # one tie: scipy's normal approximation 0.023, exact 1/30
        ([1, 1, 2, 3, 4], [1, 1, 2, 3, 4]),
        ([1, 1, 2, 2, 3, 3, 4], [1, 2, 1, 3, 3, 4, 4]),
        ([3, 1, 4, 1, 5, 9, 2, 6], [2, 7, 1, 8, 2, 8, 1, 8]),
        ([1, 1, 1, 2, 2, 3, 4, 5, 5], [5, 4, 4, 3, 2, 2, 1, 1, 1]),
    ],
)
def test_kendall_p_with_ties_is_exact_up_to_nine_items(x: list[float], y: list[float]) -> None:
    got = stats.correlation(x, y, "kendall")
    assert got["r"] == pytest.approx(sps.kendalltau(x, y).statistic, abs=1e-12)
    yy = np.asarray(y, float)
    upper = np.triu_indices(len(x), 1)
    dy = np.sign(yy[:, None] - yy[None, :])[upper]
    ties_x = np.count_nonzero(np.sign(np.subtract.outer(x, x))[upper] == 0)
    ties_y = np.count_nonzero(dy == 0)
    pairs = dy.size

    def tau_b(v: np.ndarray, axis: int = -1) -> np.ndarray:  # scipy's tau-b, over many pairings at once
        dv = np.sign(v[..., :, None] - v[..., None, :])[..., upper[0], upper[1]]
        return (dv * dy).sum(axis=-1) / np.sqrt((pairs - ties_x) * (pairs - ties_y))

    exact = sps.permutation_test((np.asarray(x, float),), tau_b, permutation_type="pairings", n_resamples=np.inf,
                                 vectorized=True).pvalue
    assert got["p"] == pytest.approx(exact, rel=1e-9)


def test_kendall_p_keeps_scipy_without_ties_or_past_fifty_items() -> None:
    x = [1, 3, 2, 5, 4, 6]
    assert stats.correlation(x, [2, 1, 4, 3, 6, 5], "kendall")["p"] == sps.kendalltau(x, [2, 1, 4, 3, 6, 5]).pvalue
    x51, y51 = [0] * 50 + [1], list(range(51))
    assert stats.correlation(x51, y51, "kendall")["p"] == pytest.approx(sps.kendalltau(x51, y51).pvalue, rel=1e-12)
    assert stats.correlation(x51, y51, "spearman")["p"] == pytest.approx(sps.spearmanr(x51, y51).pvalue, rel=1e-12)


@pytest.mark.parametrize("method", ["spearman", "kendall"])
@pytest.mark.parametrize("n", [10, 15, 30, 50])
def test_rank_p_with_heavy_ties_is_a_permutation_p_up_to_fifty_items(method: str, n: int) -> None:
    """A metric at 0 on all items but one, which is the best rated: in a pairing the lone value meets the
    top rating with probability 1/n, so the exact two-sided p is 2/n. scipy's approximations gave .122
    at 10 items and .090 at 50; the sampled p is within its error."""
    metric, human = [0.0] * (n - 1) + [0.3], list(range(1, n + 1))
    p = stats.correlation(metric, human, method)["p"]
    assert p == pytest.approx(2 / n, abs=4 * math.sqrt(2 / n / 9_999) + 1e-3)
    assert stats.correlation(metric, human, method)["p"] == p  # seeded by n alone: the same on every call


@pytest.mark.parametrize(("y", "exact"), [([2, 0, 1, 5, 3, 9, 4, 7, 8, 6], 0.0149),
                                          ([0, 3, 1, 2, 7, 4, 9, 5, 6, 8], 0.0088)])
def test_untied_spearman_on_ten_to_fifty_items_is_a_permutation_p_as_tied(y: list[int], exact: float) -> None:
    """scipy's t gave .0111 and .0061 where the exact p over all 10! pairings is .0149 and .0088 (by
    enumeration), while one tie switched to a permutation p: now untied inputs take it too."""
    got = stats.correlation(list(range(10)), y, "spearman")
    assert "p_mc_se" in got and got["p"] == pytest.approx(exact, abs=3 * got["p_mc_se"])


def test_a_p_beyond_every_sampled_pairing_is_the_samples_floor_and_says_so() -> None:
    """No sampled pairing reaches the observed one: p is the sample's floor 2 / 10,000 with `p_at_floor`,
    not scipy's approximation, which is too small in that tail (docs/examples/correlate.json's m1: t's
    3.4e-6, near 1.4e-5 by 2e7 pairings)."""
    x10, y10 = [1, 1, 2, 3, 4, 5, 6, 7, 8, 9], list(range(10))
    for method in ("kendall", "spearman"):
        found = stats.correlation(x10, y10, method)
        assert found["p"] == 2 / 10_000 and found["p_at_floor"] is True and "p_mc_se" not in found
    m1 = stats.correlate(*_example("m1"), resamples=0)["metrics"]["m1"]["item"]["spearman"]
    assert m1["p"] == 2 / 10_000 and m1["p_at_floor"] is True
    assert "p_at_floor" not in stats.correlation(list(range(10)), [2, 0, 1, 5, 3, 9, 4, 7, 8, 6], "spearman")


def _example(metric: str) -> tuple[list[float], dict[str, list[float]]]:
    body = json.loads((Path(__file__).parents[2] / "docs" / "examples" / "correlate.json").read_text())
    return body["human"], {metric: body["scores"][metric]}
