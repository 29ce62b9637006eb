"""Whether one calibration map transfers across the judged sets: p(good | score) fitted by logistic
regression on the train partitions of every set but one (a set's aliases left out with it), its expected
calibration error measured on the dev partition of the set left out. "Good" is a human score above the
middle of the set's scale (3 on 1-5). The sets' base rates differ, which is what this measures."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize

from training.data.judgements import ALIASES

GOOD_ABOVE = 3.0  # the middle of the 1-5 scale every set is rescaled to
BINS = 10


def expected_calibration_error(p: np.ndarray, good: np.ndarray, bins: int = BINS) -> float:
    """The item-weighted mean |share good - mean p| over equal-width probability bins."""
    edges = np.minimum((p * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        m = edges == b
        if m.any():
            total += m.sum() * abs(float(good[m].mean()) - float(p[m].mean()))
    return total / len(p)


def logistic(x: np.ndarray, good: np.ndarray, weight: np.ndarray) -> tuple[float, float]:
    """(a, b) of p = 1 / (1 + exp(-(a + b x))), weighted maximum likelihood."""

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        z = theta[0] + theta[1] * x
        p = 1.0 / (1.0 + np.exp(-z))
        eps = 1e-12
        value = -float((weight * (good * np.log(p + eps) + (1 - good) * np.log(1 - p + eps))).sum())
        r = weight * (p - good)
        return value, np.array([r.sum(), (r * x).sum()])

    theta = optimize.minimize(loss, np.zeros(2), jac=True, method="L-BFGS-B").x
    return float(theta[0]), float(theta[1])


@dataclass(frozen=True)
class Transfer:
    """Per left-out set: its dev base rate, the map's mean p there, and its expected calibration error."""

    base_rate: dict[str, float]
    mean_p: dict[str, float]
    ece: dict[str, float]

    @property
    def mean_ece(self) -> float:
        return float(np.mean(list(self.ece.values())))


def leave_one_set_out(train: dict[str, tuple[np.ndarray, np.ndarray]],
                      dev: dict[str, tuple[np.ndarray, np.ndarray]]) -> Transfer:
    """`train`, `dev`: set -> (model scores, human scores). Every set alike in the fit (weights 1/n)."""
    base, mean_p, ece = {}, {}, {}
    for held in dev:
        kin = {held, ALIASES.get(held), *(a for a, o in ALIASES.items() if o == held)}
        fit_sets = [s for s in train if s not in kin]
        x = np.concatenate([train[s][0] for s in fit_sets])
        good = np.concatenate([(train[s][1] > GOOD_ABOVE).astype(float) for s in fit_sets])
        weight = np.concatenate([np.full(len(train[s][0]), 1.0 / len(train[s][0])) for s in fit_sets])
        a, b = logistic(x, good, weight / weight.mean())
        scores, human = dev[held]
        p = 1.0 / (1.0 + np.exp(-(a + b * scores)))
        truth = (human > GOOD_ABOVE).astype(float)
        base[held], mean_p[held] = float(truth.mean()), float(p.mean())
        ece[held] = expected_calibration_error(p, truth)
    return Transfer(base, mean_p, ece)
