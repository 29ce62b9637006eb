"""The transfer check can fail: a map fitted where good replies are rare is miscalibrated where they are common."""
from __future__ import annotations

import numpy as np
import pytest

from training.calibration.transfer import expected_calibration_error, leave_one_set_out


def test_expected_calibration_error_is_zero_for_matched_shares_and_large_for_wrong_ones():
    p = np.repeat([0.15, 0.55, 0.95], 20)
    good = np.concatenate([np.r_[np.ones(3), np.zeros(17)], np.r_[np.ones(11), np.zeros(9)], np.r_[np.ones(19), 0]])
    assert expected_calibration_error(p, good) == pytest.approx(0.0)
    assert expected_calibration_error(np.full(60, 0.9), np.zeros(60)) == pytest.approx(0.9)


def test_one_map_transfers_between_alike_sets_and_not_across_base_rates():
    rng = np.random.default_rng(1)

    def rated(shift: float, n: int = 3000) -> tuple[np.ndarray, np.ndarray]:
        score = rng.normal(0, 1, n)
        human = 3 + shift + score + rng.normal(0, 1, n)
        return score, human

    alike = {"a": rated(0.0), "b": rated(0.0), "c": rated(0.0)}
    assert leave_one_set_out(alike, {s: rated(0.0) for s in alike}).mean_ece < 0.05
    apart = {"a": rated(-1.5), "b": rated(0.0), "c": rated(1.5)}
    moved = leave_one_set_out(apart, {"a": rated(-1.5), "c": rated(1.5)})
    assert moved.mean_ece > 0.1 and moved.base_rate["a"] < 0.3 < 0.7 < moved.base_rate["c"]
