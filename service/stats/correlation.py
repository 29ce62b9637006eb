"""One correlation between metric scores and human ratings, with its p-value.

r and p come from scipy, except Spearman's p for few items and Kendall's for few items with ties,
which are exact permutation p-values, Spearman's p on up to 50 items and Kendall's for tied inputs on
up to 50, which are Monte Carlo permutation p-values (see `spearman_test`, `kendall_test`). An undefined correlation is
`None` with a `reason`, never NaN: bare NaN is not valid JSON.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from itertools import chain, combinations, permutations
from typing import Any, NamedTuple

import numpy as np
from scipy import stats as sps

METHODS = ("pearson", "spearman", "kendall")
MIN_ITEMS = 3  # fewer points give r = +-1 or no p-value at all
_SPEARMAN_EXACT_MAX = 9  # up to this many items Spearman's p is exact: 9! = 362,880 pairings
# Above that and up to this many items, a rank correlation with ties takes a Monte Carlo permutation p
# over MC_PERMUTATIONS fixed pairings: scipy's approximations assume few ties, and with many (a metric
# at 0 on all items but one) they are far off. The permutations are seeded by n alone, so a p never
# depends on the request's seed.
_PERMUTATION_MAX = 50
MC_PERMUTATIONS = 9_999


def monte_carlo_se(p: float, draws: int, doubled: bool = True) -> float:
    """Standard error of a Monte Carlo p-value from `draws` random draws (binomial): sqrt(p (1 - p) / B) for
    a share of draws; for a two-sided p that doubles the smaller tail's share q, 2 sqrt(q (1 - q) / B)."""
    share = min(p, 1.0) / 2 if doubled else min(p, 1.0)
    return (2 if doubled else 1) * math.sqrt(share * (1 - share) / draws)


class Tested(NamedTuple):
    """A correlation, its two-sided p, p's Monte Carlo standard error where p is a Monte Carlo estimate, and
    whether p sits at the floor of its sample (no sampled pairing as extreme as the observed one)."""

    statistic: float
    p: float
    p_mc_se: float | None = None
    at_floor: bool = False


def _undefined(n: int, reason: str) -> dict[str, Any]:
    """A correlation with no value, and why (callers add their own `ci`)."""
    return {"r": None, "p": None, "n": n, "reason": reason}


def _finite_or_none(value: float) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def correlation(x: Sequence[float], y: Sequence[float], method: str = "pearson") -> dict[str, Any]:
    """r and two-sided p of one method (scipy), or r = None with the reason it is undefined."""
    a = np.asarray(x, dtype=np.float64)
    b = np.asarray(y, dtype=np.float64)
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}")
    n = int(a.size)
    if a.shape != b.shape:
        raise ValueError("x and y must have the same length")
    if n < MIN_ITEMS:
        return _undefined(n, f"too few items (n = {n}, need at least {MIN_ITEMS})")
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return _undefined(n, "constant input: the correlation is undefined")
    if method == "pearson":
        found = Tested(*sps.pearsonr(a, b))
    elif method == "spearman":
        found = spearman_test(a, b)
    else:
        found = kendall_test(a, b)
    r = _finite_or_none(found.statistic)
    p = _finite_or_none(found.p)
    if r is None:
        return _undefined(n, "the correlation is undefined for this input")
    return {"r": r, "p": p, "n": n, **({} if found.p_mc_se is None else {"p_mc_se": found.p_mc_se}),
            **({"p_at_floor": True} if found.at_floor else {})}


def spearman(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Spearman's rho and its two-sided p (spearman_test)."""
    return spearman_test(x, y)[:2]


def spearman_test(x: np.ndarray, y: np.ndarray) -> Tested:
    """Spearman's rho (scipy) and its two-sided p: exact up to `_SPEARMAN_EXACT_MAX` items, a Monte Carlo
    permutation p up to `_PERMUTATION_MAX`, above that scipy's t approximation but never below 2/n!.

    scipy's p comes from t on n-2 df, which is infinite (p = 0) whenever |rho| = 1 however few the items,
    and too small in the tails of small samples (.0111 where the exact p is .0149 over 10 items), by
    much more with ties. Up to 9 items, which covers most system-level correlations, p is the exact
    permutation p over all n! pairings, ties included (as R's cor.test); up to 50, tied or not, a Monte
    Carlo one, so that one tie does not change the method."""
    rho, p_t = sps.spearmanr(x, y)
    n = x.size
    if n <= _SPEARMAN_EXACT_MAX:
        return Tested(float(rho), _exact_pairings_p(sps.rankdata(x), sps.rankdata(y)))
    if n <= _PERMUTATION_MAX:
        xc, yc = _centred_ranks(x), _centred_ranks(y)
        if not _tied(x, y) and abs(int(xc @ yc)) == int(xc @ xc):  # perfect: 2 of the n! pairings, exactly
            return Tested(float(rho), _least_p(n))
        return Tested(float(rho), *_sampled_pairings_p(xc[_sampled_pairings(n)] @ yc, int(xc @ yc)))
    return Tested(float(rho), max(float(p_t), _least_p(n)))


def kendall_test(x: np.ndarray, y: np.ndarray) -> Tested:
    """Kendall's tau-b (scipy) and its two-sided p, exact up to `_SPEARMAN_EXACT_MAX` items with ties.

    Without ties scipy's p is already exact for small samples. With ties it falls back to the normal
    approximation, which is far off for a handful of items (5 items, one tie in x, tau-b = 0.84:
    0.019, exact 0.033). Up to 9 items p is then the exact permutation p over all n! pairings, as
    for Spearman: tau-b's denominator depends only on the tie counts, which every pairing keeps,
    so the numerator sum sign(dx) sign(dy), an exact integer, is the statistic. From 10 to
    `_PERMUTATION_MAX` items with ties, p is a Monte Carlo permutation p of the same statistic.
    """
    tau, p_scipy = sps.kendalltau(x, y)
    n = x.size
    tied = _tied(x, y)
    if tied and _SPEARMAN_EXACT_MAX < n <= _PERMUTATION_MAX:
        return Tested(float(tau), *_sampled_pairings_p(*_kendall_sampled_null(x, y)))
    if not tied or n > _SPEARMAN_EXACT_MAX:
        return Tested(float(tau), float(p_scipy))
    # y's doubled ranks in every pairing, small integers: int8 keeps the n! x pairs work in cache.
    paired = np.rint(2 * sps.rankdata(y)).astype(np.int8)[_pairings(n)]
    null = np.zeros(paired.shape[1], dtype=np.int16)  # |S| <= n (n - 1) / 2 = 36
    for i, j in combinations(range(n), 2):
        sign_x = int(np.sign(x[i] - x[j]))
        if sign_x:
            null += sign_x * np.sign(paired[i] - paired[j])
    return Tested(float(tau), _two_sided_p(null))


@lru_cache(maxsize=None)
def _pairings(n: int) -> np.ndarray:
    """(n, n!) int8: column k is the k-th permutation of range(n), the identity first (3.3 MB at n = 9)."""
    flat = np.fromiter(chain.from_iterable(permutations(range(n))), dtype=np.int8, count=n * math.factorial(n))
    return flat.reshape(-1, n).T.copy()


def _exact_pairings_p(x_ranks: np.ndarray, y_ranks: np.ndarray) -> float:
    """Two-sided exact permutation p of the rank correlation over every pairing of x with y.

    This is scipy.stats.permutation_test(permutation_type='pairings', n_resamples=np.inf)'s p
    (twice the smaller tail, capped at 1), computed here because permutation_test builds the n!
    permutations in Python on every call, per metric and level; the table is built once per n and reused. The statistic is sum (2 rx - n - 1)(2 ry - n - 1),
    rho times a constant: average ranks are multiples of 1/2, so it is an exact integer and ties
    compare exactly, with no tolerance.
    """
    n = x_ranks.size
    xc = np.rint(2 * x_ranks - n - 1).astype(np.int64)
    yc = np.rint(2 * y_ranks - n - 1).astype(np.int64)
    table = _pairings(n)
    null = np.zeros(table.shape[1], dtype=np.int64)
    for i in range(n):
        null += xc[table[i]] * yc[i]
    return _two_sided_p(null)


def _tied(x: np.ndarray, y: np.ndarray) -> bool:
    return bool(np.unique(x).size < x.size or np.unique(y).size < y.size)


def _centred_ranks(values: np.ndarray) -> np.ndarray:
    """2 rank - n - 1: average ranks are multiples of 1/2, so these are exact integers."""
    return np.rint(2 * sps.rankdata(values) - values.size - 1).astype(np.int64)


@lru_cache(maxsize=8)
def _sampled_pairings(n: int) -> np.ndarray:
    """(MC_PERMUTATIONS, n) random permutations of range(n), seeded by n (the same on every call)."""
    rng = np.random.default_rng(n)
    return rng.permuted(np.tile(np.arange(n, dtype=np.int16), (MC_PERMUTATIONS, 1)), axis=1)


def _kendall_sampled_null(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, int]:
    """Kendall's S = sum_{i<j} sign(x_i - x_j) sign(y_i - y_j) on every sampled pairing of x with y, and
    the observed S (exact integers; tau-b's denominator is the same in every pairing)."""
    first, second = np.triu_indices(x.size, k=1)
    ranks = np.rint(2 * sps.rankdata(x)).astype(np.int16)  # ties compare exactly; small ints are fast
    sign_y = np.sign(y[first] - y[second]).astype(np.int64)
    observed = int(np.sign(ranks[first] - ranks[second]).astype(np.int64) @ sign_y)
    null = np.empty(MC_PERMUTATIONS, dtype=np.int64)
    pairings = _sampled_pairings(x.size)
    for start in range(0, MC_PERMUTATIONS, 1024):
        paired = ranks[pairings[start:start + 1024]]
        null[start:start + 1024] = np.sign(paired[:, first] - paired[:, second]) @ sign_y
    return null, observed


def _least_p(n: int) -> float:
    """2 / n!: the exact p of a perfect untied rank correlation, the least any n items can attain."""
    return math.exp(math.log(2.0) - math.lgamma(n + 1))


def _sampled_pairings_p(null: np.ndarray, observed: int) -> tuple[float, float | None, bool]:
    """Two-sided Monte Carlo permutation p, as scipy.stats.permutation_test's: twice the smaller tail,
    each counted with the observed pairing ((k + 1) / (B + 1)), capped at 1; with its Monte Carlo
    standard error, and whether it is at its floor.

    Where no sampled pairing is as extreme as the observed one, p is that floor, 2 / (B + 1) (.0002),
    marked `at_floor`: the sample says only that p is smaller. scipy's t or normal
    approximation is not taken there: in that tail it is too small (Spearman on 12 items: t's 3.4e-6
    where 2e7 pairings put p near 1.4e-5).
    """
    tail = min(np.count_nonzero(null >= observed), np.count_nonzero(null <= observed))
    p = min(1.0, 2.0 * (tail + 1) / (null.size + 1))
    return (p, None, True) if tail == 0 else (p, monte_carlo_se(p, null.size), False)


def _two_sided_p(null: np.ndarray) -> float:
    """Twice the smaller tail of an exact integer null over every pairing (the identity first, the
    observed statistic), capped at 1: permutation_test's two-sided p."""
    observed = null[0]
    tail = min(np.count_nonzero(null >= observed), np.count_nonzero(null <= observed))
    return min(1.0, 2.0 * tail / null.size)

