"""service.stats.agreement against Krippendorff's published example and the krippendorff package, and its
bootstrap against alpha on the resampled items written out."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service import stats
from service.stats import agreement
from tests.stats.samples import RNG


# Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 coders x 12 units with missing values.
CODERS = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]
PUBLISHED_UNITS = [[c[u] for c in CODERS if c[u] is not None] for u in range(12)]


def test_krippendorff_alpha_matches_krippendorffs_published_example() -> None:
    assert stats.krippendorff_alpha_interval(PUBLISHED_UNITS) == pytest.approx(0.849, abs=5e-4)  # alpha(interval)


def test_ordinal_alpha_matches_krippendorffs_published_example() -> None:
    # alpha(ordinal) = 0.815 in the paper, 0.8153875 by the krippendorff package
    assert stats.krippendorff_alpha_ordinal(PUBLISHED_UNITS) == pytest.approx(0.8153875, abs=1e-7)


@pytest.mark.parametrize("levels", [3, 5, 7, 101])
def test_ordinal_alpha_matches_the_krippendorff_package(levels: int) -> None:
    krippendorff = pytest.importorskip("krippendorff")
    truth = RNG.normal(size=40)
    matrix = np.clip(np.round((truth[None, :] + RNG.normal(scale=0.8, size=(3, 40))) * levels / 4 + levels / 2),
                     0, levels - 1)
    matrix[RNG.random(size=matrix.shape) < 0.2] = np.nan
    units = [col[~np.isnan(col)] for col in matrix.T]
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="ordinal")
    assert stats.krippendorff_alpha_ordinal(units) == pytest.approx(expected, abs=1e-10)


def test_ordinal_alpha_does_not_see_the_scales_spacing() -> None:
    """An increasing relabelling (1..5 as 1, 2, 4, 8, 50) moves the interval alpha, never the ordinal one."""
    units = [[1, 2], [4, 5], [5, 5, 4], [3, 3], [2, 1, 1], [5, 3]]
    spaced = [[{1: 1, 2: 2, 3: 4, 4: 8, 5: 50}[v] for v in u] for u in units]
    assert stats.krippendorff_alpha_ordinal(spaced) == stats.krippendorff_alpha_ordinal(units)
    assert stats.krippendorff_alpha_interval(spaced) != pytest.approx(stats.krippendorff_alpha_interval(units))
    assert stats.krippendorff_alpha_ordinal([[1.0], [2.0]]) is None
    assert stats.krippendorff_alpha_ordinal([[3.0, 3.0], [3.0, 3.0]]) is None


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


@pytest.mark.parametrize("rating", [0.1, 1000001.1359892514, 1e15 / 3])
def test_equal_ratings_that_no_mean_rounds_to_exactly_are_undefined(rating: float) -> None:
    """Ten equal ratings whose rounded mean is not the rating itself leave a spread of ~1e-33, not none."""
    for function in (stats.krippendorff_alpha_interval, stats.krippendorff_alpha_ordinal):
        assert function([[rating, rating]] * 5) is None
    assert np.isnan(agreement.bootstrap_alphas([np.array([rating, rating])] * 5, np.zeros((1, 5), int))).all()


def _exact_alpha(units: list[list[float]]) -> float | None:
    """Alpha's definition in rationals: every pair of values, no rounding until the end."""
    units = [[Fraction(v) for v in u] for u in units if len(u) >= 2]
    values = [v for u in units for v in u]
    if not units or min(values) == max(values):
        return None
    observed = sum(sum((a - b) ** 2 for a in u for b in u) / (len(u) - 1) for u in units)
    expected = sum((a - b) ** 2 for a in values for b in values) / (len(values) - 1)
    return float(1 - observed / expected)


_NEAR_AN_OFFSET = st.lists(st.lists(st.integers(-3, 3).map(lambda k: 1e6 + k * 2.0**-32), min_size=1, max_size=4),
                           min_size=1, max_size=8)


@settings(max_examples=100, deadline=None)
@given(units=st.one_of(_NEAR_AN_OFFSET, st.lists(st.lists(st.floats(-1e6, 1e6).map(lambda v: round(v, 6)), min_size=1, max_size=4),
                                                 min_size=1, max_size=8)))
def test_krippendorff_alpha_is_its_definition_computed_exactly(units: list[list[float]]) -> None:
    """Ratings a few ulps apart on an offset of 1e6 are as exact as any: alpha is read about their median."""
    expected = _exact_alpha(units)
    found = stats.krippendorff_alpha_interval(units)
    assert (found is None) == (expected is None)
    if expected is not None:
        assert found == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("offset", [0.0, 1e6, 1e8, 1e10, 1e14])
def test_krippendorff_alpha_ignores_a_shared_offset(offset: float) -> None:
    units = [[1, 2], [4, 5], [7, 9], [3, 3], [8, 6]]
    alpha = stats.krippendorff_alpha_interval([[offset + v for v in u] for u in units])
    assert alpha == pytest.approx(0.858490566, abs=1e-6)  # the krippendorff package's value at every offset


def test_krippendorff_alpha_does_not_depend_on_the_order_of_items_or_ratings() -> None:
    rng = np.random.default_rng(7)
    units = [list(rng.normal(size=rng.integers(2, 5)) * 1.7 + 3.3) for _ in range(40)]
    alpha = stats.krippendorff_alpha_interval(units)
    for _ in range(10):
        shuffled = [list(rng.permutation(u)) for u in rng.permutation(np.array(units, dtype=object))]
        assert stats.krippendorff_alpha_interval(shuffled) == alpha


def _alpha_or_nan(function, units) -> float:
    value = function(units)
    return float("nan") if value is None else value


_UNITS = st.lists(st.one_of(st.lists(st.integers(1, 5).map(float), min_size=2, max_size=4),
                            st.lists(st.floats(-1e3, 1e3, allow_nan=False).map(lambda v: v + 1e6), min_size=2,
                                     max_size=4)), min_size=1, max_size=12)


@settings(max_examples=150, deadline=None)
@given(units=_UNITS, seed=st.integers(0, 2**32 - 1))
def test_bootstrap_alphas_are_alpha_on_the_resampled_items(units: list[list[float]], seed: int) -> None:
    """Read from multiplicities, each resample's alpha equals alpha on its items written out, interval and
    ordinal, also for resamples whose ratings never vary (NaN) and ratings on a large offset."""
    pairable = agreement.pairable_units(units)
    draws = np.random.default_rng(seed).integers(0, len(pairable), size=(20, len(pairable)))
    for ordinal, function in ((False, stats.krippendorff_alpha_interval), (True, stats.krippendorff_alpha_ordinal)):
        expected = [_alpha_or_nan(function, [pairable[i] for i in row]) for row in draws]
        found = agreement.bootstrap_alphas(pairable, draws, ordinal)
        assert np.isnan(found).tolist() == np.isnan(expected).tolist()
        assert found == pytest.approx(expected, abs=1e-8, nan_ok=True)


def test_bootstrap_alphas_in_chunks_equal_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    units = agreement.pairable_units([RNG.normal(size=3) for _ in range(30)])
    draws = RNG.integers(0, 30, size=(50, 30))
    whole = [agreement.bootstrap_alphas(units, draws, ordinal) for ordinal in (False, True)]
    monkeypatch.setattr(agreement, "_CHUNK_CELLS", 7 * 90)  # 7 rows a chunk, the last one shorter
    for ordinal, one_pass in zip((False, True), whole):
        np.testing.assert_allclose(agreement.bootstrap_alphas(units, draws, ordinal), one_pass, rtol=1e-12)
