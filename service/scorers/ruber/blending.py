"""RUBER's combination (Tao et al. 2018, eq. 8 and section 3.3): min-max normalisation with calibration
bounds, then one of the paper's four blends of the referenced and unreferenced scores."""
from __future__ import annotations

import numpy as np

BLENDS = ("min", "max", "geometric", "arithmetic")


def normalise(value: np.ndarray, bounds: list[float]) -> np.ndarray:
    """Min-max normalisation (the paper's eq. 8) with calibration bounds, clipped to [0, 1]."""
    lo, hi = float(bounds[0]), float(bounds[1])
    return np.clip((np.asarray(value, dtype=np.float64) - lo) / max(hi - lo, 1e-12), 0.0, 1.0)


def blend(s_ref: np.ndarray, s_unref: np.ndarray, how: str) -> np.ndarray:
    """Combine normalised scores (the paper's four heuristics)."""
    if how == "min":
        return np.minimum(s_ref, s_unref)
    if how == "max":
        return np.maximum(s_ref, s_unref)
    if how == "geometric":
        return np.sqrt(s_ref * s_unref)
    if how == "arithmetic":
        return (s_ref + s_unref) / 2.0
    raise ValueError(f"unknown blend {how!r}")


def normalise_min_max(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """`normalise` with the bounds given apart, as ruber-minilm's manifest keeps them."""
    return normalise(values, [lo, hi])
