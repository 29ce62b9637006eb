"""M_H's regression: M_H = sum_i lambda_i * z_i + lambda_0 on standardised proxies, fitted by least
squares, with the paper's leave-bot-out folds."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import linalg


@dataclass(frozen=True)
class Linear:
    """Standardisation and coefficients; `predict` is what the service computes."""

    mean: np.ndarray
    scale: np.ndarray
    coefficients: np.ndarray
    intercept: float
    # The proxies' range in the fitting data: a proxy beyond it is taken at its edge, so that one
    # turn ("ha" x 1000: laughter z = 18,000) cannot set the score; the fitting data is unchanged.
    low: np.ndarray
    high: np.ndarray

    def standardise(self, x: np.ndarray) -> np.ndarray:
        x = np.clip(np.where(np.isnan(x), self.mean, x), self.low, self.high)
        return (x - self.mean) / self.scale

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.standardise(np.atleast_2d(x)) @ self.coefficients + self.intercept


def fit(x: np.ndarray, y: np.ndarray, ridge: float = 0.0) -> Linear:
    """Least squares on standardised proxies; `ridge` adds ridge * ||lambda||^2 (not the intercept)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    mean = np.nanmean(x, axis=0)
    mean = np.where(np.isnan(mean), 0.0, mean)
    filled = np.where(np.isnan(x), mean, x)
    scale = filled.std(axis=0)
    scale = np.where(scale > 1e-12, scale, 1.0)
    z = (filled - mean) / scale
    design = np.hstack([z, np.ones((len(z), 1))])
    target = y
    if ridge > 0:
        penalty = np.sqrt(ridge) * np.eye(z.shape[1], z.shape[1] + 1)
        design = np.vstack([design, penalty])
        target = np.concatenate([y, np.zeros(z.shape[1])])
    solution, *_ = linalg.lstsq(design, target)
    low, high = filled.min(axis=0), filled.max(axis=0)
    return Linear(mean, scale, solution[:-1], float(solution[-1]), low, high)


@dataclass(frozen=True)
class LeaveBotOut:
    bots: list[str]
    folds: list[Linear]  # folds[k] was fitted without bots[k]
    predictions: np.ndarray  # out-of-fold prediction of every conversation


def leave_bot_out(x: np.ndarray, y: np.ndarray, bots: Sequence[str], ridge: float = 0.0) -> LeaveBotOut:
    """One fold per bot: train on the others, predict the held-out bot's conversations."""
    bots_array = np.asarray(bots)
    names = sorted(set(bots))
    if len(names) < 2:
        raise ValueError("leave-bot-out needs conversations of at least two bots")
    predictions = np.full(len(y), np.nan)
    folds = []
    for name in names:
        held = bots_array == name
        model = fit(x[~held], y[~held], ridge)
        predictions[held] = model.predict(x[held])
        folds.append(model)
    return LeaveBotOut(names, folds, predictions)


def coefficient_stability(folds: Sequence[Linear], names: Sequence[str]) -> dict[str, dict[str, float]]:
    """Mean, standard deviation, min and max of each standardised coefficient across folds."""
    table = np.array([f.coefficients for f in folds])
    intercepts = np.array([f.intercept for f in folds])
    out = {}
    for i, name in enumerate(list(names)):
        column = table[:, i]
        out[name] = {"mean": float(column.mean()), "sd": float(column.std(ddof=1)) if len(column) > 1 else 0.0,
                     "min": float(column.min()), "max": float(column.max()),
                     "same_sign": bool(np.all(column > 0) or np.all(column < 0))}
    out["intercept"] = {"mean": float(intercepts.mean()),
                        "sd": float(intercepts.std(ddof=1)) if len(intercepts) > 1 else 0.0,
                        "min": float(intercepts.min()), "max": float(intercepts.max()), "same_sign": True}
    return out
