"""service.stats.bootstrap against scipy on each resample, and its seeded draws."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from service import stats
from service.stats import bootstrap
from tests.stats.samples import GOOD, HUMAN, POOR, RNG, SCIPY


@pytest.mark.parametrize("method", stats.METHODS)
@pytest.mark.parametrize("n", [12, 80])
@pytest.mark.parametrize("weighted_max", [2000, 0])  # Kendall by item weights, or scipy per resample
def test_bootstrap_distribution_is_scipy_on_each_resample(method: str, n: int, weighted_max: int,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bootstrap, "_WEIGHTED_KENDALL_MAX", weighted_max)
    human = np.round(HUMAN[:n] if n <= 40 else np.r_[HUMAN, HUMAN[: n - 40]], 1)  # ties included
    metric = np.round(human + RNG.normal(size=n), 1)
    indices = stats.resample_indices(n, 60, seed=3)
    dist = stats.bootstrap_distribution(human, {"m": metric}, method, indices)["m"]
    for row, idx in enumerate(indices):
        expected = SCIPY[method](metric[idx], human[idx]).statistic
        assert dist[row] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("outlier", [1e4, 1e7, 1e9])
def test_item_pearson_resamples_keep_their_precision_beside_a_far_outlier(outlier: float) -> None:
    """One-pass moments cancelled: at 1e7 a tenth of the resamples had r NaN, none with a constant side."""
    human = np.arange(1.0, 13.0)
    metric = np.r_[outlier, 1e-3 * np.arange(1, 12) + np.random.default_rng(0).normal(0, 3e-3, 11)]
    indices = stats.resample_indices(12, 500, seed=1)
    dist = stats.bootstrap_distribution(human, {"m": metric}, "pearson", indices)["m"]
    expected = [sps.pearsonr(metric[idx], human[idx]).statistic for idx in indices]
    np.testing.assert_allclose(dist, expected, atol=1e-6)


@pytest.mark.parametrize("k", [5, 30, 70])  # all pairs at once up to 64 points, scipy per row above
def test_kendall_rows_is_scipy_on_each_row(k: int) -> None:
    x = RNG.integers(0, 4, size=(25, k)).astype(float)  # many ties
    y = x + RNG.integers(0, 3, size=(25, k))
    x[0] = 1.0  # a constant row is undefined
    got = bootstrap._kendall_rows(x, y)
    assert np.isnan(got[0])
    for row in range(1, 25):
        if np.ptp(x[row]) == 0 or np.ptp(y[row]) == 0:
            assert np.isnan(got[row])
        else:
            assert got[row] == pytest.approx(sps.kendalltau(x[row], y[row]).statistic, abs=1e-12)


def test_the_percentile_interval_agrees_with_scipy_bootstrap() -> None:
    """The interval /correlate reports: its resamples, distribution and percentiles, as correlate builds it."""
    def pearson(x, y, axis=-1):
        return bootstrap._pearson_rows(np.atleast_2d(x), np.atleast_2d(y)).reshape(np.shape(x)[:-1])

    draws = stats.resample_indices(len(GOOD), 4000, seed=1)
    ours = stats.percentile_interval(stats.bootstrap_distribution(HUMAN, {"x": GOOD}, "pearson", draws)["x"])
    theirs = sps.bootstrap((GOOD, HUMAN), pearson, paired=True, vectorized=True, n_resamples=4000,
                           method="percentile", rng=np.random.default_rng(2)).confidence_interval
    assert ours[0] == pytest.approx(theirs.low, abs=0.02)
    assert ours[1] == pytest.approx(theirs.high, abs=0.02)
    r = stats.correlation(GOOD, HUMAN)["r"]
    assert ours[0] < r < ours[1]


def test_paired_bootstrap_separates_a_better_metric_and_not_a_copy() -> None:
    better = stats.paired_bootstrap(HUMAN, GOOD, POOR, "spearman", resamples=500)
    assert better["delta"] > 0 and better["p"] < 0.01
    assert better["ci"][0] > 0
    copy = stats.paired_bootstrap(HUMAN, GOOD, GOOD, "kendall", resamples=200)
    assert copy["delta"] == 0 and copy["p"] == 1.0


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
    assert np.array_equal(stats.stratified_indices(groups, 9, 30, seed), _stratified_reference(groups, 9, 30, seed))


@pytest.mark.parametrize("method", stats.METHODS)
def test_system_bootstrap_is_each_resamples_system_means(method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bootstrap, "_CHUNK_CELLS", 300)  # several chunks of resamples
    human = RNG.integers(1, 6, size=45).astype(float)  # Likert ratings: system means tie exactly
    metrics = {"good": human + RNG.normal(scale=0.5, size=45), "poor": RNG.integers(0, 3, size=45).astype(float)}
    groups = np.r_[RNG.integers(0, 6, size=38), np.arange(7)]
    indices = stats.stratified_indices(groups, 7, 50, seed=4)
    got = stats.system_bootstrap_distributions(human, metrics, [method], groups, 7, indices)[method]
    for row, idx in enumerate(indices):
        h = bootstrap.decimal_ties(np.array([human[idx][groups == g].mean() for g in range(7)]))
        for name, values in metrics.items():
            m = bootstrap.decimal_ties(np.array([values[idx][groups == g].mean() for g in range(7)]))
            if np.ptp(h) == 0 or np.ptp(m) == 0:
                assert np.isnan(got[name][row])
            else:
                assert got[name][row] == pytest.approx(SCIPY[method](m, h).statistic, abs=1e-12)


def test_row_by_row_system_kendall_counts_in_the_bootstrap_work_limit() -> None:
    from service.config import Settings
    from service.errors import TooLarge
    from service.api.limits import check_correlate

    body = {"human": [0.0] * 187, "scores": {f"m{i}": [0.0] * 187 for i in range(32)}, "resamples": 10_000,
            "systems": [f"s{i}" for i in range(186)] + ["s185"], "methods": ["kendall"]}
    with pytest.raises(TooLarge) as caught:  # took 108 s within the limits, 2 cores
        check_correlate(body, Settings())
    assert "system-level Kendall over 186 systems" in caught.value.details["resamples"]
    check_correlate({**body, "methods": ["pearson", "spearman"]}, Settings())  # vectorised: as before
    check_correlate({**body, "systems": [f"s{i % 64}" for i in range(187)]}, Settings())  # all pairs at once


def test_system_means_that_tie_in_decimal_tie_in_binary() -> None:
    """(.2 + .1 + .3) / 3 and (.1 + .4 + .1) / 3 are one ulp apart as doubles; ranks must see a tie."""
    means = np.array([(.2 + .1 + .3) / 3, (.1 + .4 + .1) / 3, 1e-300, -2.5e300, 0.0, np.nan, 1 / 3])
    assert means[0] != means[1]
    tied = bootstrap.decimal_ties(means)
    assert tied[0] == tied[1] == pytest.approx(0.2, abs=1e-15)
    assert tied[2] == 1e-300 and tied[3] == -2.5e300 and tied[4] == 0.0
    assert np.isnan(tied[5]) and tied[6] == 1 / 3


def test_real_differences_under_a_large_shared_offset_are_kept():
    """A grid of 12 significant digits rounded 1e6 + 1e-7 k to one value (Spearman 1.0 became .775)."""
    means = 1e6 + 1e-7 * np.arange(4.0)
    np.testing.assert_array_equal(bootstrap.decimal_ties(means), means)
    rows = np.stack([means, means[::-1]])  # the bootstrap's (resamples, systems) layout
    np.testing.assert_array_equal(bootstrap.decimal_ties(rows), rows)


def test_percentile_interval_cuts_half_the_leftover_mass_from_each_tail() -> None:
    """A 95% interval is the 2.5th to 97.5th percentile; numpy's linear percentiles of this grid
    fall on its points, so the ends are exact (a 90% interval reported as 95% is .05 / .95)."""
    grid = np.arange(1001) / 1000.0
    assert bootstrap.percentile_interval(grid, 0.95) == pytest.approx([0.025, 0.975], abs=1e-12)
    assert bootstrap.percentile_interval(grid, 0.90) == pytest.approx([0.05, 0.95], abs=1e-12)


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_a_resample_where_either_side_is_constant_is_undefined_as_scipy_says(method: str) -> None:
    """A metric the same on 9 of 10 items is constant in about 35% of resamples (0.9 ** 10): each must be NaN,
    as scipy's is, never a rounding-error r, so that correlate refuses the interval; the human side too."""
    human = [4.2, 0.3, 1.7, 2.2, 4.8, 2.8, 1.3, 1.2, 4.4, 1.1]
    spike = [0.55] + [0.05] * 9
    indices = np.random.default_rng(0).integers(0, 10, size=(400, 10))
    for h, m in ((human, spike), (spike, human)):
        got = bootstrap.bootstrap_distributions(h, {"m": m}, [method], indices)[method]["m"]
        constant = np.array([np.ptp(np.asarray(h)[row]) == 0 or np.ptp(np.asarray(m)[row]) == 0 for row in indices])
        assert 0.2 < constant.mean() < 0.5
        assert np.isnan(got[constant]).all() and not np.isnan(got[~constant]).any()
    entry = stats.correlate(human, {"m": spike}, methods=["pearson"], resamples=1000, seed=0)["metrics"]["m"]["item"]
    assert entry["pearson"]["ci"] is None and "undefined" in entry["pearson"]["ci_reason"]


def test_system_rows_that_are_constant_are_undefined() -> None:
    """One system drawn for every place of a system-level resample: its row is constant, its r undefined."""
    rows = bootstrap._pearson_rows(np.array([[0.1, 0.1, 0.1], [0.1, 0.2, 0.4]]), np.array([[0.7, 0.7, 0.7], [0.7, 0.36, 0.95]]))
    assert np.isnan(rows[0]) and rows[1] == pytest.approx(sps.pearsonr([0.1, 0.2, 0.4], [0.7, 0.36, 0.95])[0])
