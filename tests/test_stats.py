"""service.stats against scipy, published worked examples and the krippendorff package."""
from __future__ import annotations

import json
import math

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


# --- system-level bootstrap without an items x systems matrix -------------------------------------
def _stratified_reference(groups: np.ndarray, count: int, resamples: int, seed: int) -> np.ndarray:
    """The draws as first written (one scan of all items per system): the seeds' numbers must not move."""
    rng = np.random.default_rng(seed)
    out = np.empty((resamples, groups.size), dtype=np.int64)
    for g in range(count):
        members = np.flatnonzero(groups == g)
        out[:, members] = members[rng.integers(0, members.size, size=(resamples, members.size))]
    return out


@pytest.mark.parametrize("seed", [0, 11])
def test_stratified_indices_draw_as_before(seed: int) -> None:
    groups = np.r_[RNG.integers(0, 7, size=60), np.arange(9)]  # uneven sizes, two single-item systems
    assert np.array_equal(stats._stratified_indices(groups, 9, 30, seed), _stratified_reference(groups, 9, 30, seed))


@pytest.mark.parametrize("method", stats.METHODS)
def test_system_bootstrap_is_each_resamples_system_means(method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stats, "_CHUNK_CELLS", 300)  # several chunks of resamples
    human = RNG.integers(1, 6, size=45).astype(float)  # Likert ratings: system means tie exactly
    metrics = {"good": human + RNG.normal(scale=0.5, size=45), "poor": RNG.integers(0, 3, size=45).astype(float)}
    groups = np.r_[RNG.integers(0, 6, size=38), np.arange(7)]
    indices = stats._stratified_indices(groups, 7, 50, seed=4)
    got = stats.system_bootstrap_distributions(human, metrics, [method], groups, 7, indices)[method]
    for row, idx in enumerate(indices):
        h = [human[idx][groups == g].mean() for g in range(7)]
        for name, values in metrics.items():
            m = [values[idx][groups == g].mean() for g in range(7)]
            if np.ptp(h) == 0 or np.ptp(m) == 0:
                assert np.isnan(got[name][row])
            else:
                assert got[name][row] == pytest.approx(SCIPY[method](m, h).statistic, abs=1e-12)


@pytest.mark.parametrize("method", ["spearman", "kendall"])
def test_system_interval_keeps_tied_system_means_tied(method: str) -> None:
    # Likert ratings give systems equal means; dividing before summing (a one-hot of 1/size) made
    # them differ by rounding, which moved ranks: this interval's lower end was off by up to 0.07.
    rng = np.random.default_rng(0)
    human = rng.integers(1, 6, size=40).astype(float)
    good = np.clip(human + rng.integers(-1, 2, size=40), 1, 5).astype(float)
    systems = [f"s{i % 6}" for i in range(40)]
    body = correlate(human.tolist(), {"good": good.tolist()}, systems, [method], resamples=200, seed=0)
    groups = np.unique(systems, return_inverse=True)[1]
    dist = []
    for idx in stats._stratified_indices(groups, 6, 200, 0):
        h = [human[idx][groups == g].mean() for g in range(6)]
        m = [good[idx][groups == g].mean() for g in range(6)]
        dist.append(np.nan if np.ptp(h) == 0 or np.ptp(m) == 0 else SCIPY[method](m, h).statistic)
    expected = stats.percentile_interval(np.array(dist))
    assert body["metrics"]["good"]["system"][method]["ci"] == pytest.approx(expected, abs=1e-12)


def test_many_systems_need_no_items_times_systems_memory() -> None:
    # 30,000 items in 30,000 systems took a 6.7 GiB one-hot matrix (a 500 or an OOM-killed pod).
    tracemalloc = pytest.importorskip("tracemalloc")
    n = 3000
    human, metric = RNG.normal(size=n), RNG.normal(size=n)
    tracemalloc.start()
    try:
        body = correlate(human.tolist(), {"m": metric.tolist()}, [f"s{i // 2}" for i in range(n)], resamples=40)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    no_nan(body)
    count = n // 2  # two items a system, so resampling within systems varies
    assert body["systems"]["count"] == count and body["metrics"]["m"]["system"]["pearson"]["ci"] is not None
    assert peak < n * count * 8 / 2  # well under one dense items x systems float matrix (34 MiB here)


def test_systems_of_one_item_each_get_no_zero_width_interval() -> None:
    human, metric = RNG.normal(size=50), RNG.normal(size=50)
    body = correlate(human.tolist(), {"m": metric.tolist(), "k": human.tolist()}, [f"s{i}" for i in range(50)],
                     resamples=200)
    no_nan(body)
    for method in stats.METHODS:
        entry = body["metrics"]["m"]["system"][method]
        assert entry["r"] is not None and entry["ci"] is None and "single item" in entry["ci_reason"]
        assert body["metrics"]["m"]["item"][method]["ci"] is not None  # the item level still resamples


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
    near[[0, 1]] = near[[1, 0]]  # the approximation applies; the floor is only a floor
    assert stats.correlation(x, near, "spearman")["p"] == pytest.approx(
        max(sps.spearmanr(x, near).pvalue, 2 / math.factorial(n)), rel=1e-12, abs=0)


def test_api_example_spearman_p_is_exact_at_both_levels_and_the_rest_unchanged() -> None:
    body = correlate([3.0, 4.5, 1.0], {"adem": [2.9, 4.0, 1.7], "bleu4": [0.1, 0.0, 0.2]},
                     ["hred", "human", "tfidf"], resamples=1000)
    no_nan(body)
    for name, sign in (("adem", 1.0), ("bleu4", -1.0)):
        for level in ("item", "system"):
            entry = body["metrics"][name][level]
            assert entry["spearman"]["r"] == sign and entry["spearman"]["p"] == pytest.approx(1 / 3)
            assert entry["kendall"]["p"] == pytest.approx(entry["spearman"]["p"])  # n = 3: both exact
            assert entry["spearman"]["ci"] is None and "too few items" in entry["spearman"]["ci_reason"]


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


def test_kendall_p_keeps_scipy_without_ties_or_past_nine_items() -> None:
    x = [1, 3, 2, 5, 4, 6]
    assert stats.correlation(x, [2, 1, 4, 3, 6, 5], "kendall")["p"] == sps.kendalltau(x, [2, 1, 4, 3, 6, 5]).pvalue
    x10, y10 = [1, 1, 2, 3, 4, 5, 6, 7, 8, 9], list(range(10))
    assert stats.correlation(x10, y10, "kendall")["p"] == pytest.approx(sps.kendalltau(x10, y10).pvalue, rel=1e-12)


def test_correlate_is_scale_free_down_to_denormals() -> None:
    """A power-of-two rescaling first: 5e-324 x (1..10) gave r = .988 (the unscaled data: .939), and
    values near 1e-300 gave 'undefined' bootstrap intervals as sums of squares underflowed."""
    human, metric = list(range(1, 11)), [2, 1, 4, 3, 6, 5, 8, 7, 10, 9]
    plain = correlate(human, {"m": metric}, methods=["pearson"], resamples=100)["metrics"]["m"]["item"]["pearson"]
    for scale in (5e-324, 1e-300, 1e300):
        tiny = correlate([h * scale for h in human], {"m": [m * scale for m in metric]}, methods=["pearson"],
                         resamples=100)["metrics"]["m"]["item"]["pearson"]
        assert tiny["r"] == pytest.approx(plain["r"], abs=1e-12) and tiny["ci"] == pytest.approx(plain["ci"]), scale


def test_averages_do_not_depend_on_the_order_of_the_values() -> None:
    # A probe's cases: items 0, 1 and 5 average to .2 however their ratings are ordered, and the
    # systems' means to .2 whatever the order of their items; np.mean and bincount left them a
    # bit apart, which broke the ties Spearman's and Kendall's ranks see.
    nested = correlate([[.1, .2, .3], [.3, .2, .1], [.5, .5, .5], [.1, .1, .1], [.9, .8, .7], [.2, .1, .3]],
                       {"a": [1, 2, 3, 4, 5, 6]}, resamples=0)
    expected = sps.spearmanr([.2, .2, .5, .1, .8, .2], [1, 2, 3, 4, 5, 6]).statistic
    assert nested["metrics"]["a"]["item"]["spearman"]["r"] == pytest.approx(expected, abs=1e-12)
    metric, systems = [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4], list("AAABBBCCCDDD")
    in_order = correlate([.1, .2, .3, .1, .2, .3, .9, .9, .9, .5, .5, .5], {"m": metric}, systems=systems, resamples=0)
    reordered = correlate([.1, .2, .3, .3, .2, .1, .9, .9, .9, .5, .5, .5], {"m": metric}, systems=systems,
                          resamples=0)
    for method in ("spearman", "kendall"):
        assert (in_order["metrics"]["m"]["system"][method] == reordered["metrics"]["m"]["system"][method])
    assert in_order["metrics"]["m"]["system"]["spearman"]["r"] == pytest.approx(
        sps.spearmanr([.2, .2, .9, .5], [1, 2, 3, 4]).statistic, abs=1e-12)


@pytest.mark.parametrize("offset", [0.0, 1e6, 1e8, 1e10, 1e14])
def test_krippendorff_alpha_ignores_a_shared_offset(offset: float) -> None:
    units = [[1, 2], [4, 5], [7, 9], [3, 3], [8, 6]]
    alpha = stats.krippendorff_alpha_interval([[offset + v for v in u] for u in units])
    assert alpha == pytest.approx(0.858490566, abs=1e-6)  # the krippendorff package's value at every offset


def test_a_confidence_near_one_is_named_as_sent() -> None:
    body = correlate(list(range(10)), {"m": list(range(10))}, confidence=0.999999999, resamples=100)
    assert "0.999999999 interval" in body["metrics"]["m"]["item"]["pearson"]["ci_reason"]


def test_row_by_row_system_kendall_counts_in_the_bootstrap_work_limit() -> None:
    from service.config import Settings
    from service.errors import TooLarge
    from service.limits import check_correlate

    body = {"human": [0.0] * 187, "scores": {f"m{i}": [0.0] * 187 for i in range(32)}, "resamples": 10_000,
            "systems": [f"s{i}" for i in range(186)] + ["s185"], "methods": ["kendall"]}
    with pytest.raises(TooLarge) as caught:  # took 108 s within the limits, 2 cores
        check_correlate(body, Settings())
    assert "system-level Kendall over 186 systems" in caught.value.details["resamples"]
    check_correlate({**body, "methods": ["pearson", "spearman"]}, Settings())  # vectorised: as before
    check_correlate({**body, "systems": [f"s{i % 64}" for i in range(187)]}, Settings())  # all pairs at once
