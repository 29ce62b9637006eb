"""service.stats.significance against a published worked example."""
from __future__ import annotations

import pytest

from service import stats


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
