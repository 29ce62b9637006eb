"""Williams' test: is one metric's correlation with the humans higher than another's?"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats as sps

MIN_WILLIAMS = 4  # Williams' t has n - 3 degrees of freedom


def williams_test(r12: float, r13: float, r23: float, n: int, alternative: str = "two-sided") -> dict[str, Any]:
    """Williams' (1959) t for r12 vs r13, two correlations sharing variable 1 (here: the humans).

    t = (r12 - r13) sqrt((n-1)(1+r23)) / sqrt(2K(n-1)/(n-3) + (r12+r13)^2/4 (1-r23)^3),
    K = 1 - r12^2 - r13^2 - r23^2 + 2 r12 r13 r23, with n - 3 degrees of freedom (Steiger 1980,
    eq. 7; the test Graham & Baldwin 2014 recommend for comparing metrics). `alternative`:
    'two-sided', 'greater' (r12 > r13) or 'less'.
    """
    if n < MIN_WILLIAMS:
        return {"t": None, "df": None, "p": None, "reason": f"too few items (n = {n}, need at least {MIN_WILLIAMS})"}
    k = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
    denominator = 2 * k * (n - 1) / (n - 3) + ((r12 + r13) ** 2 / 4) * (1 - r23) ** 3
    df = n - 3
    if not denominator > 0:
        return {"t": None, "df": df, "p": None,
                "reason": "the two metrics are perfectly correlated with each other: the test is undefined"}
    t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23) / denominator)
    if alternative == "two-sided":
        p = 2 * sps.t.sf(abs(t), df)
    elif alternative == "greater":
        p = sps.t.sf(t, df)
    elif alternative == "less":
        p = sps.t.cdf(t, df)
    else:
        raise ValueError(f"unknown alternative {alternative!r}")
    return {"t": float(t), "df": df, "p": float(min(1.0, p))}


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values, in the order given: the family-wise error rate is held at any
    level alpha (adjusted p < alpha) under any dependence between the tests.

    A few lines of numpy because scipy has none (scipy.stats.false_discovery_control is Benjamini-Hochberg's,
    which bounds the false discovery rate, not the chance of any false claim)."""
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    return adjusted
