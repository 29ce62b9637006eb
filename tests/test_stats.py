"""service.stats against scipy, published worked examples and the krippendorff package."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from service import stats
from service.stats import StatsInputError, correlate

RNG = np.random.default_rng(20260522)
HUMAN = RNG.normal(size=40)
GOOD = HUMAN + RNG.normal(scale=0.5, size=40)
POOR = HUMAN + RNG.normal(scale=2.0, size=40)
SCIPY = {"pearson": sps.pearsonr, "spearman": sps.spearmanr, "kendall": sps.kendalltau}


def no_nan(body: dict) -> None:
    json.dumps(body, allow_nan=False)  # raises on NaN or infinity anywhere


@pytest.mark.parametrize("method", stats.METHODS)
def test_correlation_matches_scipy(method: str) -> None:
    expected = SCIPY[method](GOOD, HUMAN)
    got = stats.correlation(GOOD, HUMAN, method)
    assert got["r"] == pytest.approx(expected.statistic, abs=1e-12)
    assert got["p"] == pytest.approx(expected.pvalue, rel=1e-9)
    assert got["n"] == 40


@pytest.mark.parametrize("method", stats.METHODS)
def test_constant_and_short_inputs_give_none_with_reason(method: str) -> None:
    constant = stats.correlation([2.0] * 5, [1, 2, 3, 4, 5], method)
    assert constant["r"] is None and constant["p"] is None and "constant" in constant["reason"]
    short = stats.correlation([1.0, 2.0], [2.0, 1.0], method)
    assert short["r"] is None and "too few" in short["reason"]


def test_williams_matches_howells_worked_example() -> None:
    # Howell, Statistical Methods for Psychology (6th ed., p. 262): t = 1.361, df = 23, p = .187.
    result = stats.williams_test(0.80, 0.72, 0.89, 26)
    assert result["t"] == pytest.approx(1.361, abs=5e-4)
    assert result["df"] == 23
    assert result["p"] == pytest.approx(0.187, abs=5e-4)
    greater = stats.williams_test(0.80, 0.72, 0.89, 26, alternative="greater")
    assert greater["p"] == pytest.approx(result["p"] / 2, rel=1e-9)
    less = stats.williams_test(0.80, 0.72, 0.89, 26, alternative="less")
    assert less["p"] == pytest.approx(1 - result["p"] / 2, rel=1e-9)


def test_williams_limits() -> None:
    assert stats.williams_test(0.5, 0.4, 0.3, 3)["p"] is None  # needs n - 3 > 0
    same = stats.williams_test(0.6, 0.6, 1.0, 50)  # the two metrics are one metric
    assert same["p"] is None and "perfectly correlated" in same["reason"]


def test_krippendorff_alpha_matches_krippendorffs_published_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", 4 coders x 12 units with
    # missing values: alpha(interval) = 0.849.
    coders = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    ]
    units = [[c[u] for c in coders if c[u] is not None] for u in range(12)]
    assert stats.krippendorff_alpha_interval(units) == pytest.approx(0.849, abs=5e-4)


def test_krippendorff_alpha_matches_the_krippendorff_package() -> None:
    krippendorff = pytest.importorskip("krippendorff")
    truth = RNG.normal(size=30)
    matrix = truth[None, :] + RNG.normal(scale=0.7, size=(4, 30))
    matrix[RNG.random(size=matrix.shape) < 0.2] = np.nan
    units = [col[~np.isnan(col)] for col in matrix.T]
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval")
    assert stats.krippendorff_alpha_interval(units) == pytest.approx(expected, abs=1e-10)


def test_krippendorff_alpha_undefined_cases() -> None:
    assert stats.krippendorff_alpha_interval([[1.0], [2.0]]) is None  # nothing pairable
    assert stats.krippendorff_alpha_interval([[3.0, 3.0], [3.0, 3.0]]) is None  # no variation


@pytest.mark.parametrize("method", stats.METHODS)
@pytest.mark.parametrize("n", [12, 80])
@pytest.mark.parametrize("weighted_max", [2000, 0])  # Kendall by item weights, or scipy per resample
def test_bootstrap_distribution_is_scipy_on_each_resample(method: str, n: int, weighted_max: int,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stats, "_WEIGHTED_KENDALL_MAX", weighted_max)
    human = np.round(HUMAN[:n] if n <= 40 else np.r_[HUMAN, HUMAN[: n - 40]], 1)  # ties included
    metric = np.round(human + RNG.normal(size=n), 1)
    indices = stats.resample_indices(n, 60, seed=3)
    dist = stats.bootstrap_distribution(human, {"m": metric}, method, indices)["m"]
    for row, idx in enumerate(indices):
        expected = SCIPY[method](metric[idx], human[idx]).statistic
        assert dist[row] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("k", [5, 30, 70])  # all pairs at once up to 64 points, scipy per row above
def test_kendall_rows_is_scipy_on_each_row(k: int) -> None:
    x = RNG.integers(0, 4, size=(25, k)).astype(float)  # many ties
    y = x + RNG.integers(0, 3, size=(25, k))
    x[0] = 1.0  # a constant row is undefined
    got = stats._kendall_rows(x, y)
    assert np.isnan(got[0])
    for row in range(1, 25):
        if np.ptp(x[row]) == 0 or np.ptp(y[row]) == 0:
            assert np.isnan(got[row])
        else:
            assert got[row] == pytest.approx(sps.kendalltau(x[row], y[row]).statistic, abs=1e-12)


def test_bootstrap_ci_agrees_with_scipy_bootstrap() -> None:
    def pearson(x, y, axis=-1):
        return stats._pearson_rows(np.atleast_2d(x), np.atleast_2d(y)).reshape(np.shape(x)[:-1])

    ours = stats.bootstrap_ci(GOOD, HUMAN, "pearson", resamples=4000, seed=1)
    theirs = sps.bootstrap((GOOD, HUMAN), pearson, paired=True, vectorized=True, n_resamples=4000,
                           method="percentile", rng=np.random.default_rng(2)).confidence_interval
    assert ours[0] == pytest.approx(theirs.low, abs=0.02)
    assert ours[1] == pytest.approx(theirs.high, abs=0.02)
    r = stats.correlation(GOOD, HUMAN)["r"]
    assert ours[0] < r < ours[1]


def test_bootstrap_is_seeded() -> None:
    first = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, resamples=200, seed=7)
    again = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, resamples=200, seed=7)
    other = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, resamples=200, seed=8)
    assert first == again
    assert first["metrics"]["good"]["item"]["pearson"]["ci"] != other["metrics"]["good"]["item"]["pearson"]["ci"]


def test_paired_bootstrap_separates_a_better_metric_and_not_a_copy() -> None:
    better = stats.paired_bootstrap(HUMAN, GOOD, POOR, "spearman", resamples=500)
    assert better["delta"] > 0 and better["p"] < 0.01
    assert better["ci"][0] > 0
    copy = stats.paired_bootstrap(HUMAN, GOOD, GOOD, "kendall", resamples=200)
    assert copy["delta"] == 0 and copy["p"] == 1.0


def test_correlate_body_item_and_system_levels() -> None:
    systems = [f"s{i % 5}" for i in range(40)]
    body = correlate(HUMAN.tolist(), {"good": GOOD.tolist(), "poor": POOR.tolist()}, systems, resamples=200)
    no_nan(body)
    item = body["metrics"]["good"]["item"]["pearson"]
    assert item["r"] == pytest.approx(sps.pearsonr(GOOD, HUMAN).statistic)
    assert item["ci"][0] < item["r"] < item["ci"][1] and item["n"] == 40
    labels = np.array(systems)
    means = lambda v: np.array([np.mean(np.asarray(v)[labels == s]) for s in sorted(set(systems))])  # noqa: E731
    system = body["metrics"]["good"]["system"]["kendall"]
    assert system["r"] == pytest.approx(sps.kendalltau(means(GOOD), means(HUMAN)).statistic)
    assert system["n"] == 5
    kinds = {(c["level"], c["method"], c["test"]) for c in body["comparisons"]}
    assert ("item", "pearson", "williams") in kinds and ("item", "kendall", "paired_bootstrap") in kinds
    assert ("system", "spearman", "paired_bootstrap") in kinds
    assert not any(c["method"] != "pearson" and c["test"] == "williams" for c in body["comparisons"])
    williams = next(c for c in body["comparisons"] if c["test"] == "williams" and c["level"] == "item")
    r_ab = sps.pearsonr(GOOD, POOR).statistic
    expected = stats.williams_test(sps.pearsonr(GOOD, HUMAN).statistic, sps.pearsonr(POOR, HUMAN).statistic, r_ab, 40)
    assert williams["p"] == pytest.approx(expected["p"]) and williams["p"] < 0.05
    assert body["agreement"] is None


@pytest.mark.parametrize("method", stats.METHODS)
def test_system_level_interval_resamples_items_within_systems(method: str) -> None:
    systems = [f"s{i % 6}" for i in range(40)]
    body = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, systems, [method], resamples=80, seed=5)
    labels, groups = np.unique(systems, return_inverse=True)
    indices = stats._stratified_indices(groups, labels.size, 80, 5)
    dist = []
    for idx in indices:
        assert np.array_equal(groups[idx], groups)  # every system keeps its items' count
        h = [HUMAN[idx][groups == g].mean() for g in range(labels.size)]
        m = [GOOD[idx][groups == g].mean() for g in range(labels.size)]
        dist.append(SCIPY[method](m, h).statistic)
    expected = stats.percentile_interval(np.array(dist))
    assert body["metrics"]["good"]["system"][method]["ci"] == pytest.approx(expected, abs=1e-12)


def test_correlate_constant_metric_is_null_never_nan() -> None:
    body = correlate(HUMAN.tolist(), {"flat": [1.0] * 40, "good": GOOD.tolist()}, resamples=50)
    no_nan(body)
    flat = body["metrics"]["flat"]["item"]["spearman"]
    assert flat["r"] is None and flat["ci"] is None and "constant" in flat["reason"]
    assert all(c["p"] is None and "reason" in c for c in body["comparisons"])


def test_correlate_several_ratings_per_item() -> None:
    ratings = [[h + d for d in (-0.5, 0.0, 0.5)] for h in HUMAN.tolist()]
    ratings[0] = [HUMAN[0]]  # ragged: one rating only
    body = correlate(ratings, {"good": GOOD.tolist()}, resamples=0)
    means = [float(np.mean(r)) for r in ratings]
    assert body["metrics"]["good"]["item"]["pearson"]["r"] == pytest.approx(sps.pearsonr(GOOD, means).statistic)
    assert body["metrics"]["good"]["item"]["pearson"]["ci"] is None  # resampling off
    assert body["agreement"]["krippendorff_alpha"] == pytest.approx(stats.krippendorff_alpha_interval(ratings))
    assert body["agreement"]["raters_per_item"] == pytest.approx((3 * 39 + 1) / 40)


@pytest.mark.parametrize(
    ("human", "scores", "systems", "field"),
    [
        ([1.0, 2.0, 3.0], {"m": [1.0, 2.0]}, None, "scores.m"),
        ([1.0, float("nan"), 3.0], {"m": [1.0, 2.0, 3.0]}, None, "human.1"),
        ([1.0, 2.0, 3.0], {"m": [1.0, float("inf"), 3.0]}, None, "scores.m.1"),
        ([[1.0], [], [2.0]], {"m": [1.0, 2.0, 3.0]}, None, "human.1"),
        ([1.0, 2.0, 3.0], {"m": [1.0, 2.0, 3.0]}, ["a"], "systems"),
        ([1.0, 2.0], {"m": [1.0, 2.0]}, None, "human"),
        ([1.0, 2.0, 3.0], {}, None, "scores"),
        ([1.0, 2.0, 3.0], {"m": [1.0, 2.0, 3.0]}, None, "methods"),
    ],
)
def test_correlate_rejects_bad_input_naming_the_field(human, scores, systems, field) -> None:
    methods = [] if field == "methods" else list(stats.METHODS)
    with pytest.raises(StatsInputError) as caught:
        correlate(human, scores, systems, methods, resamples=10)
    assert field in caught.value.fields


def test_smallest_valid_input_three_items() -> None:
    body = correlate([1.0, 2.0, 4.0], {"a": [1.0, 3.0, 2.0], "b": [2.0, 2.5, 5.0]}, ["x", "y", "z"], resamples=100)
    no_nan(body)
    assert body["metrics"]["a"]["item"]["pearson"]["n"] == 3
    williams = [c for c in body["comparisons"] if c["test"] == "williams"]
    assert williams and all(c["p"] is None and "too few" in c["reason"] for c in williams)
    # Resamples of three points are mostly two points, r = +-1: no interval, no bootstrap p.
    assert body["metrics"]["a"]["item"]["kendall"]["ci"] is None
    assert "too few items for a bootstrap" in body["metrics"]["a"]["item"]["kendall"]["ci_reason"]
    assert all(c["p"] is None for c in body["comparisons"] if c["test"] == "paired_bootstrap")


def test_two_systems_are_too_few_for_a_system_level_correlation() -> None:
    body = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, ["a", "b"] * 20, resamples=50)
    no_nan(body)
    system = body["metrics"]["good"]["system"]["pearson"]
    assert system["r"] is None and system["n"] == 2 and system["reason"].startswith("too few systems")
    assert body["metrics"]["good"]["item"]["pearson"]["r"] is not None


def test_too_few_resamples_for_the_confidence_give_no_interval_and_say_why() -> None:
    assert (stats.min_resamples(0.95), stats.min_resamples(0.99), stats.min_resamples(0.9)) == (40, 200, 20)
    one = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, resamples=1)["metrics"]["good"]["item"]["pearson"]
    assert one["ci"] is None and one["ci_reason"].startswith("too few resamples") and one["r"] is not None
    enough = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, resamples=40)["metrics"]["good"]["item"]["pearson"]
    assert enough["ci"][0] <= enough["r"] <= enough["ci"][1]


def test_bootstrap_starts_at_eight_items() -> None:
    body = correlate(HUMAN[:8].tolist(), {"good": GOOD[:8].tolist()}, resamples=100)
    assert body["metrics"]["good"]["item"]["pearson"]["ci"] is not None


@settings(max_examples=60, deadline=None)
@given(
    data=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3), st.integers(-2, 2), st.sampled_from("abc")),
                  min_size=3, max_size=14),
    seed=st.integers(0, 3),
)
def test_any_valid_input_gives_finite_json_and_bounded_values(data, seed) -> None:
    human, a, b, systems = (list(column) for column in zip(*data))
    body = correlate([float(h) for h in human], {"a": [float(v) for v in a], "b": [float(v) for v in b]},
                     systems, resamples=30, seed=seed)
    no_nan(body)
    for per_level in body["metrics"].values():
        for entries in per_level.values():
            for entry in entries.values():
                assert (entry["r"] is None) == ("reason" in entry)
                if entry["r"] is not None:
                    assert -1.0 <= entry["r"] <= 1.0 and 0.0 <= entry["p"] <= 1.0
                if entry.get("ci"):
                    assert -1.0 <= entry["ci"][0] <= entry["ci"][1] <= 1.0
    for comparison in body["comparisons"]:
        assert comparison["p"] is None or 0.0 <= comparison["p"] <= 1.0
