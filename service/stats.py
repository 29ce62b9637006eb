"""Correlations between metric scores and human judgements, with intervals and significance tests.

Pure functions (no Flask) behind `POST /correlate` and `python -m service.analysis correlate`.
Point estimates and their p-values come from scipy, except Spearman's p for few items and
Kendall's for few items with ties (exact; see `spearman`, `kendall`). The bootstrap is our own because one index matrix is shared by every metric: the
paired bootstrap between two metrics then needs no extra resampling, and the human scores are
ranked once per resample matrix rather than once per metric (scipy.stats.bootstrap resamples each
call independently). Undefined values are `None` with a
`reason`, never NaN: bare NaN is not valid JSON.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import chain, combinations, permutations
from typing import Any

import numpy as np
from scipy import sparse
from scipy import stats as sps

METHODS = ("pearson", "spearman", "kendall")
MIN_ITEMS = 3  # fewer points give r = +-1 or no p-value at all
MIN_WILLIAMS = 4  # Williams' t has n - 3 degrees of freedom
# Below this many items most resamples hold two or three distinct points, whose correlations are
# +-1: the intervals and paired-bootstrap p-values would be artefacts, so none are given.
MIN_BOOTSTRAP = 8
# Resamples are processed in chunks so that a 10,000-item request stays within ~100 MB.
_CHUNK_CELLS = 2_000_000
_PAIRWISE_MAX = 64  # up to this many points Kendall's tau is computed over all pairs at once
_WEIGHTED_KENDALL_MAX = 2000  # up to this many items the bootstrap tau uses one n x n sign matrix
_SPEARMAN_EXACT_MAX = 9  # up to this many items Spearman's p is exact: 9! = 362,880 pairings, ~10 ms


class StatsInputError(ValueError):
    """Input the schema cannot catch (mismatched lengths, NaN/inf, too few items): becomes a 422.

    `.fields` maps field paths such as 'scores.adem' or 'human.3' to a message.
    """

    def __init__(self, fields: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in fields.items()))
        self.fields = fields


# --- single correlations ------------------------------------------------------------------------
def _undefined(n: int, reason: str, **extra: Any) -> dict[str, Any]:
    return {"r": None, "p": None, "ci": None, "n": n, **extra, "reason": reason}


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
        return {"r": None, "p": None, "n": n, "reason": f"too few items (n = {n}, need at least {MIN_ITEMS})"}
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return {"r": None, "p": None, "n": n, "reason": "constant input: the correlation is undefined"}
    if method == "pearson":
        statistic, pvalue = sps.pearsonr(a, b)
    elif method == "spearman":
        statistic, pvalue = spearman(a, b)
    else:
        statistic, pvalue = kendall(a, b)
    r = _finite_or_none(statistic)
    p = _finite_or_none(pvalue)
    if r is None:
        return {"r": None, "p": None, "n": n, "reason": "the correlation is undefined for this input"}
    return {"r": r, "p": p, "n": n}


def spearman(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Spearman's rho (scipy) and its two-sided p: exact up to `_SPEARMAN_EXACT_MAX` items, above
    that scipy's t approximation but never below 2/n!.

    scipy.stats.spearmanr takes p from t = rho sqrt((n-2)/(1-rho^2)) on n-2 df, which is infinite,
    p = 0, whenever |rho| = 1 however few the items (three items ranked alike: p = 0, exact 1/3),
    and too small in the tails of small samples (n = 9, rho = 0.667: 0.050, exact 0.059). Up to 9
    items, which covers most system-level correlations, p is therefore the exact permutation p over
    all n! pairings, ties included (R's cor.test is exact up to 9 too). Above, the approximation
    errs by less and the cost of enumerating grows n-fold per item, so it is kept, floored at 2/n!:
    the exact p of |rho| = 1 for untied ranks and the least any n items can attain (one pairing in
    each tail). The floor underflows to 0 past 170 items, as the exact value does.
    """
    rho, p_t = sps.spearmanr(x, y)
    n = x.size
    if n <= _SPEARMAN_EXACT_MAX:
        return float(rho), _exact_pairings_p(sps.rankdata(x), sps.rankdata(y))
    return float(rho), max(float(p_t), math.exp(math.log(2.0) - math.lgamma(n + 1)))


def kendall(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Kendall's tau-b (scipy) and its two-sided p, exact up to `_SPEARMAN_EXACT_MAX` items with ties.

    Without ties scipy's p is already exact for small samples. With ties it falls back to the normal
    approximation, which is far off for a handful of items (5 items, one tie in x, tau-b = 0.84:
    0.019, exact 0.033). Up to 9 items p is then the exact permutation p over all n! pairings, as
    for Spearman: tau-b's denominator depends only on the tie counts, which every pairing keeps,
    so the numerator sum sign(dx) sign(dy), an exact integer, is the statistic.
    """
    tau, p_scipy = sps.kendalltau(x, y)
    n = x.size
    tied = np.unique(x).size < n or np.unique(y).size < n
    if not tied or n > _SPEARMAN_EXACT_MAX:
        return float(tau), float(p_scipy)
    # y's doubled ranks in every pairing, small integers: int8 keeps the n! x pairs work in cache.
    paired = np.rint(2 * sps.rankdata(y)).astype(np.int8)[_pairings(n)]
    null = np.zeros(paired.shape[1], dtype=np.int16)  # |S| <= n (n - 1) / 2 = 36
    for i, j in combinations(range(n), 2):
        sign_x = int(np.sign(x[i] - x[j]))
        if sign_x:
            null += sign_x * np.sign(paired[i] - paired[j])
    return float(tau), _two_sided_p(null)


@lru_cache(maxsize=None)
def _pairings(n: int) -> np.ndarray:
    """(n, n!) int8: column k is the k-th permutation of range(n), the identity first (3.3 MB at n = 9)."""
    flat = np.fromiter(chain.from_iterable(permutations(range(n))), dtype=np.int8, count=n * math.factorial(n))
    return flat.reshape(-1, n).T.copy()


def _exact_pairings_p(x_ranks: np.ndarray, y_ranks: np.ndarray) -> float:
    """Two-sided exact permutation p of the rank correlation over every pairing of x with y.

    This is scipy.stats.permutation_test(permutation_type='pairings', n_resamples=np.inf)'s p
    (twice the smaller tail, capped at 1), computed here because permutation_test builds the n!
    permutations in Python on every call: 60 ms at n = 8 and 0.4 s at n = 9, per metric and
    level; the table is built once per n and reused. The statistic is sum (2 rx - n - 1)(2 ry - n - 1),
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


def _two_sided_p(null: np.ndarray) -> float:
    """Twice the smaller tail of an exact integer null over every pairing (the identity first, the
    observed statistic), capped at 1: permutation_test's two-sided p."""
    observed = null[0]
    tail = min(np.count_nonzero(null >= observed), np.count_nonzero(null <= observed))
    return min(1.0, 2.0 * tail / null.size)


# --- vectorised statistics over resample matrices -----------------------------------------------
def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each row pair of two (B, n) arrays; NaN where a row is constant."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    num = np.einsum("ij,ij->i", xc, yc)
    den = np.sqrt(np.einsum("ij,ij->i", xc, xc) * np.einsum("ij,ij->i", yc, yc))
    constant = (np.ptp(x, axis=1) == 0) | (np.ptp(y, axis=1) == 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = num / den
    r[constant] = np.nan
    return np.clip(r, -1.0, 1.0)


# What one scipy call per resample costs, in the item-resamples of the vectorised paths (0.34 ms
# against ~0.2 us): system-level Kendall over more than _PAIRWISE_MAX systems goes row by row.
ROW_CALL_ITEMS = 2000


def bootstrap_work_items(items: int, systems: int | None, methods: Sequence[str]) -> int:
    """The item count a /correlate bootstrap's time grows with, for the limit on items x resamples x
    metrics: the items, plus the row-by-row Kendall calls of a system level past _PAIRWISE_MAX
    systems (187 items in 186 systems, 32 metrics, 10,000 resamples took 108 s within the limits)."""
    if systems is not None and systems > _PAIRWISE_MAX and "kendall" in methods:
        return items + ROW_CALL_ITEMS
    return items


def _kendall_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall tau-b of each row pair of two (B, k) arrays; NaN where a row is constant.

    Small k (system level): all pairs at once. Larger k: scipy's O(k log k) routine row by row.
    """
    rows, k = x.shape
    if k <= _PAIRWISE_MAX:
        upper = np.triu_indices(k, 1)
        sx = np.sign(x[:, :, None] - x[:, None, :])[:, upper[0], upper[1]]
        sy = np.sign(y[:, :, None] - y[:, None, :])[:, upper[0], upper[1]]
        pairs = k * (k - 1) / 2
        untied_x = pairs - np.count_nonzero(sx == 0, axis=1)
        untied_y = pairs - np.count_nonzero(sy == 0, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            tau = np.einsum("ij,ij->i", sx, sy) / np.sqrt(untied_x * untied_y)
        tau[(untied_x == 0) | (untied_y == 0)] = np.nan
        return np.clip(tau, -1.0, 1.0)
    out = np.full(rows, np.nan)
    for i in range(rows):
        if np.ptp(x[i]) == 0 or np.ptp(y[i]) == 0:
            continue
        out[i] = sps.kendalltau(x[i], y[i]).statistic
    return out


def _kendall_weighted(x: np.ndarray, y: np.ndarray, weights: np.ndarray, tied_x: np.ndarray,
                      tied_y: np.ndarray) -> np.ndarray:
    """Kendall tau-b of every bootstrap resample, each given as item counts (a row of `weights`).

    A resample holding item i w_i times has S = w^T P w / 2 with P_ij = sign(x_i-x_j) sign(y_i-y_j)
    (copies of one item are tied and count zero), so all resamples cost one matrix product instead
    of B calls to scipy; ties enter tau-b's denominator as `tied_x`, `tied_y` (pairs per resample).
    """
    total = weights[0].sum()
    pairs = total * (total - 1) / 2
    # float32 is exact here: every partial sum is an integer of magnitude at most n^2 < 2^24.
    sign = (np.sign(x[:, None] - x[None, :]) * np.sign(y[:, None] - y[None, :])).astype(np.float32)
    s = np.einsum("ij,ij->i", (weights.astype(np.float32) @ sign).astype(np.float64), weights) / 2
    untied_x = pairs - tied_x
    untied_y = pairs - tied_y
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = s / np.sqrt(untied_x * untied_y)
    tau[(untied_x == 0) | (untied_y == 0)] = np.nan
    return np.clip(tau, -1.0, 1.0)


def _counts(indices: np.ndarray, n: int) -> np.ndarray:
    """(B, n) multiplicities of each item in each resample."""
    rows = indices.shape[0]
    flat = (indices + np.arange(rows)[:, None] * n).ravel()
    return np.bincount(flat, minlength=rows * n).reshape(rows, n).astype(np.float64)


def resample_indices(n: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples, n) bootstrap indices from numpy's PCG64 seeded with `seed`: same seed, same draws."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(resamples, n))


class _TieGroups:
    """Items grouped by equal value, in ascending order: what resampled ranks and ties need.

    A bootstrap resample only repeats or drops original items, so the order of the values never
    changes; with the items' multiplicities (`weights`) a resample's average ranks and tie counts
    follow from cumulative sums over these groups, without sorting each resample again.
    """

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self.order = np.argsort(values, kind="stable")
        ordered = values[self.order]
        new_group = np.r_[True, ordered[1:] != ordered[:-1]]
        self.starts = np.flatnonzero(new_group)
        self.distinct = self.starts.size == values.size
        self.group = np.empty(values.size, dtype=np.int64)
        self.group[self.order] = np.cumsum(new_group) - 1


class _Resampled:
    """One variable on one chunk of resamples: counts per distinct value, ranks and ties, each
    computed at most once and shared by every method that needs it."""

    def __init__(self, groups: _TieGroups, weights: np.ndarray) -> None:
        self.groups = groups
        self.weights = weights
        self._counts: np.ndarray | None = None

    @property
    def counts(self) -> np.ndarray:
        """(B, distinct values) how often each value occurs in each resample."""
        if self._counts is None:
            ordered = self.weights[:, self.groups.order]
            self._counts = ordered if self.groups.distinct else np.add.reduceat(ordered, self.groups.starts, axis=1)
        return self._counts

    @property
    def constant(self) -> np.ndarray:
        """Which resamples hold a single distinct value."""
        source = self.weights if self.groups.distinct else self.counts
        return np.count_nonzero(source, axis=1) <= 1

    @property
    def tied_pairs(self) -> np.ndarray:
        """Pairs of equal values in each resample: sum over values of c(c-1)/2."""
        counts = self.counts
        return (counts * (counts - 1)).sum(axis=1) / 2

    def centred_ranks(self) -> np.ndarray:
        """(B, n) average rank of each item within each resample minus the mean rank (N+1)/2."""
        counts = self.counts
        total = self.weights[0].sum()
        average = np.cumsum(counts, axis=1) - (counts - 1) / 2  # 1-based average rank of each group
        return average[:, self.groups.group] - (total + 1) / 2


def _weighted_pearson(weights: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each resample given as item multiplicities, for fixed values x, y (n,).

    Sums of products are matrix-vector products over the original items; x and y should be
    centred on their overall means so that the one-pass moments lose no precision.
    """
    total = weights[0].sum()
    mx, my = weights @ x / total, weights @ y / total
    sxy = weights @ (x * y) - total * mx * my
    sxx = weights @ (x * x) - total * mx * mx
    syy = weights @ (y * y) - total * my * my
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip(sxy / np.sqrt(sxx * syy), -1.0, 1.0)


def _weighted_rank_pearson(weighted_x: np.ndarray, sxx: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Spearman rho of each resample from centred ranks (their weighted mean is exactly zero):
    `weighted_x` = weights * x ranks and `sxx` its sum of squares, shared by every metric."""
    sxy = np.einsum("ij,ij->i", weighted_x, y)
    syy = np.einsum("ij,ij->i", weights * y, y)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip(sxy / np.sqrt(sxx * syy), -1.0, 1.0)


def bootstrap_distributions(human: Sequence[float], metrics: dict[str, Sequence[float]],
                            methods: Sequence[str], indices: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """{method: {metric: correlation with the humans on every resample (row of `indices`)}}.

    The same rows are used for every metric, which is what makes differences between metrics a
    paired bootstrap. A resample is handled as the multiplicity of each item in it: Pearson and
    Spearman are then weighted sums over the original items (ranks from cumulative counts, no sort
    per resample; the humans' once per chunk for all metrics), Kendall one matrix product up to
    `_WEIGHTED_KENDALL_MAX` items and scipy per resample beyond. NaN marks a resample where a side
    was constant.
    """
    h = np.asarray(human, dtype=np.float64)
    columns = {name: np.asarray(values, dtype=np.float64) for name, values in metrics.items()}
    resamples, n = indices.shape
    chunk = max(1, _CHUNK_CELLS // max(n, 1))
    out = {method: {name: np.empty(resamples) for name in columns} for method in methods}
    groups = {name: _TieGroups(values) for name, values in columns.items()}
    human_groups = _TieGroups(h)
    centred = {name: values - values.mean() for name, values in columns.items()}
    h_centred = h - h.mean()
    for start in range(0, resamples, chunk):
        part = slice(start, start + chunk)
        idx = indices[part]
        weights = _counts(idx, n)
        hr = _Resampled(human_groups, weights)
        if "spearman" in methods:
            h_ranks = hr.centred_ranks()
            h_weighted = weights * h_ranks
            h_sxx = np.einsum("ij,ij->i", h_weighted, h_ranks)
        for name, values in columns.items():
            mr = _Resampled(groups[name], weights)
            constant = hr.constant | mr.constant
            for method in methods:
                if method == "pearson":
                    r = _weighted_pearson(weights, h_centred, centred[name])
                elif method == "spearman":
                    r = _weighted_rank_pearson(h_weighted, h_sxx, mr.centred_ranks(), weights)
                elif n <= _WEIGHTED_KENDALL_MAX:
                    r = _kendall_weighted(h, values, weights, hr.tied_pairs, mr.tied_pairs)
                else:
                    r = _kendall_rows(h[idx], values[idx])
                r[constant] = np.nan
                out[method][name][part] = r
    return out


def bootstrap_distribution(human: Sequence[float], metrics: dict[str, Sequence[float]], method: str,
                           indices: np.ndarray) -> dict[str, np.ndarray]:
    """{metric: correlation with the humans on every resample} for one method (see bootstrap_distributions)."""
    return bootstrap_distributions(human, metrics, [method], indices)[method]


def min_resamples(confidence: float) -> int:
    """Fewest resamples whose percentile interval has a resample beyond each tail: 2 / (1 - confidence)
    (40 at 0.95). With fewer, both ends are the sample's extremes or a single value: one resample gave
    an interval [x, x] that did not contain r."""
    return math.ceil(2.0 / (1.0 - confidence) - 1e-9)


def percentile_interval(distribution: np.ndarray, confidence: float = 0.95) -> list[float] | None:
    """Percentile interval of a bootstrap distribution, ignoring undefined (NaN) resamples.

    None when fewer than half of the resamples were defined: an interval from the rest would be
    conditioned on an unusual subset of the data.
    """
    finite = distribution[np.isfinite(distribution)]
    if finite.size == 0 or finite.size < 0.5 * distribution.size:
        return None
    tail = (1.0 - confidence) / 2.0 * 100.0
    lo, hi = np.percentile(finite, [tail, 100.0 - tail])
    return [float(lo), float(hi)]


def bootstrap_ci(x: Sequence[float], y: Sequence[float], method: str = "pearson", confidence: float = 0.95,
                 resamples: int = 1000, seed: int = 0) -> list[float] | None:
    """Seeded percentile bootstrap interval for one correlation (items resampled with replacement)."""
    n = len(x)
    if n < MIN_ITEMS:
        return None
    dist = bootstrap_distribution(y, {"x": x}, method, resample_indices(n, resamples, seed))["x"]
    return percentile_interval(dist, confidence)


def paired_bootstrap_from(delta_hat: float, deltas: np.ndarray, confidence: float = 0.95) -> dict[str, Any]:
    """Two-sided p and interval for a difference of correlations from its paired bootstrap deltas.

    p is the share of resamples whose delta lies at least |delta_hat| away from delta_hat (the
    bootstrap distribution shifted to the null of no difference; Koehn 2004, Graham et al. 2014),
    with the +1 correction so that p is never exactly 0 from finitely many resamples.
    """
    finite = deltas[np.isfinite(deltas)]
    if finite.size == 0 or finite.size < 0.5 * deltas.size:
        return {"p": None, "ci": None, "reason": "too many resamples with an undefined correlation"}
    extreme = int(np.count_nonzero(np.abs(finite - delta_hat) >= abs(delta_hat) - 1e-12))
    p = min(1.0, (extreme + 1) / (finite.size + 1))
    return {"p": p, "ci": percentile_interval(finite, confidence)}


def paired_bootstrap(human: Sequence[float], a: Sequence[float], b: Sequence[float], method: str = "pearson",
                     confidence: float = 0.95, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Is r(human, a) different from r(human, b)? Paired bootstrap over items, any method."""
    ra = correlation(a, human, method)
    rb = correlation(b, human, method)
    if ra["r"] is None or rb["r"] is None:
        return {"delta": None, "p": None, "ci": None, "reason": ra.get("reason") or rb.get("reason")}
    dist = bootstrap_distribution(human, {"a": a, "b": b}, method, resample_indices(len(human), resamples, seed))
    delta = ra["r"] - rb["r"]
    return {"delta": delta, **paired_bootstrap_from(delta, dist["a"] - dist["b"], confidence)}


# --- Williams' test --------------------------------------------------------------------------------
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


# --- agreement between raters ---------------------------------------------------------------------
def krippendorff_alpha_interval(units: Iterable[Sequence[float]]) -> float | None:
    """Krippendorff's alpha with the interval metric, from its definition (Krippendorff 2011).

    `units` holds the ratings of each item, any number per item; rater identity is not needed.
    Items with fewer than two ratings are not pairable and are left out. alpha = 1 - D_o / D_e with
    D_o = sum_u (1/(m_u-1)) sum_{i!=j in u} (v_i-v_j)^2 / N and D_e = sum_{i!=j} (v_i-v_j)^2 / (N(N-1))
    over all N pairable values; sum_{i!=j} (v_i-v_j)^2 = 2 m sum (v - mean v)^2 keeps it O(N). The
    centred form, not 2 m sum v^2 - 2 (sum v)^2: that one cancels catastrophically when the ratings
    share a large offset (alpha 1.14 at an offset of 1e8, "never vary" at 1e10).
    None when it is undefined (no pairable item, or no variation at all).
    Written here rather than imported because the `krippendorff` package is not a service dependency.
    """
    pairable = [np.asarray(u, dtype=np.float64) for u in units]
    pairable = [u for u in pairable if u.size >= 2]
    if not pairable:
        return None
    def spread(v: np.ndarray) -> float:
        return 2 * v.size * float(np.sum((v - v.mean()) ** 2))

    observed = sum(spread(u) / (u.size - 1) for u in pairable)
    values = np.concatenate(pairable)
    expected = spread(values) / (values.size - 1)
    if expected <= 0:
        return None
    return float(1.0 - observed / expected)


# --- the /correlate body ---------------------------------------------------------------------------
def _check_inputs(human: Any, scores: dict[str, Any], systems: Any, methods: Sequence[str],
                  confidence: float, resamples: int) -> tuple[np.ndarray, list[np.ndarray] | None]:
    """Validate and average the human ratings; returns (per-item means, per-item ratings or None)."""
    errors: dict[str, str] = {}
    if not isinstance(human, (list, tuple)) or len(human) == 0:
        raise StatsInputError({"human": "Give at least one human rating."})
    nested = any(isinstance(h, (list, tuple)) for h in human)
    units: list[np.ndarray] | None = None
    if nested:
        units = []
        for i, item in enumerate(human):
            values = np.asarray(item if isinstance(item, (list, tuple)) else [item], dtype=np.float64)
            if values.size == 0:
                errors[f"human.{i}"] = "Give at least one rating for every item."
            elif not np.all(np.isfinite(values)):
                errors[f"human.{i}"] = "Ratings must be finite numbers (no NaN or infinity)."
            units.append(values)
        # fsum: the exactly rounded sum, so one item's ratings give the same mean in any order (and
        # items with equal ratings tie exactly, which Spearman's and Kendall's ranks depend on).
        means = np.array([math.fsum(u.tolist()) / u.size if u.size and np.all(np.isfinite(u)) else np.nan
                          for u in units])
    else:
        means = np.asarray(human, dtype=np.float64)
        for i in np.flatnonzero(~np.isfinite(means)):
            errors[f"human.{i}"] = "Ratings must be finite numbers (no NaN or infinity)."
    n = len(human)
    if not scores:
        errors["scores"] = "Give the scores of at least one metric."
    for name, values in (scores or {}).items():
        if len(values) != n:
            errors[f"scores.{name}"] = f"Has {len(values)} scores for {n} human ratings."
            continue
        bad = np.flatnonzero(~np.isfinite(np.asarray(values, dtype=np.float64)))
        if bad.size:
            errors[f"scores.{name}.{int(bad[0])}"] = "Scores must be finite numbers (no NaN or infinity)."
    if systems is not None and len(systems) != n:
        errors["systems"] = f"Has {len(systems)} labels for {n} human ratings."
    if not methods or any(method not in METHODS for method in methods):
        errors["methods"] = f"Give one or more of: {', '.join(METHODS)}."
    if not 0 < confidence < 1:
        errors["confidence"] = "Must lie strictly between 0 and 1."
    if resamples < 0:
        errors["resamples"] = "Must not be negative."
    if errors:
        raise StatsInputError(errors)
    return means, units


def _level(human: np.ndarray, metrics: dict[str, np.ndarray], methods: Sequence[str], confidence: float,
           no_bootstrap: str | None, indices_for: Any) -> tuple[dict[str, dict], list[dict]]:
    """Correlations, intervals and pairwise comparisons at one level (item or system).

    `indices_for(method)` returns {metric name: bootstrap distribution of its correlation}, every
    metric on the same resamples; it is not called when `no_bootstrap` gives a reason not to.
    """
    n = int(human.size)
    results: dict[str, dict[str, Any]] = {name: {} for name in metrics}
    comparisons: list[dict[str, Any]] = []
    for method in methods:
        point = {name: correlation(values, human, method) for name, values in metrics.items()}
        dist = indices_for(method) if no_bootstrap is None else None
        for name, res in point.items():
            if res["r"] is None:
                results[name][method] = {**res, "ci": None}
                continue
            ci = percentile_interval(dist[name], confidence) if dist is not None else None
            entry = {"r": res["r"], "p": res["p"], "ci": ci, "n": n}
            if ci is None:
                entry["ci_reason"] = no_bootstrap or "too many resamples with an undefined correlation"
            results[name][method] = entry
        for a, b in combinations(metrics, 2):
            ra, rb = point[a]["r"], point[b]["r"]
            base = {"a": a, "b": b, "method": method}
            if ra is None or rb is None:
                reason = f"r is undefined for {a if ra is None else b}"
                if method == "pearson":
                    comparisons.append({**base, "delta": None, "p": None, "test": "williams", "reason": reason})
                comparisons.append({**base, "delta": None, "p": None, "ci": None, "test": "paired_bootstrap",
                                    "reason": reason})
                continue
            delta = ra - rb
            if method == "pearson":
                r_ab = correlation(metrics[a], metrics[b], "pearson")["r"]
                if r_ab is None:
                    comparisons.append({**base, "delta": delta, "p": None, "test": "williams",
                                        "reason": "one metric is constant"})
                else:
                    w = williams_test(ra, rb, r_ab, n)
                    entry = {**base, "delta": delta, "p": w["p"], "t": w["t"], "df": w["df"], "test": "williams"}
                    if "reason" in w:
                        entry["reason"] = w["reason"]
                    comparisons.append(entry)
            if dist is None:
                comparisons.append({**base, "delta": delta, "p": None, "ci": None, "test": "paired_bootstrap",
                                    "reason": no_bootstrap})
            else:
                comparisons.append({**base, "delta": delta, "test": "paired_bootstrap",
                                    **paired_bootstrap_from(delta, dist[a] - dist[b], confidence)})
    return results, comparisons


def _system_means(values: np.ndarray, groups: np.ndarray, count: int) -> np.ndarray:
    """Per-system means from exactly rounded sums: the same whatever the order of a system's items
    (bincount adds in item order, so reordering one system's .3, .2, .1 moved Spearman from .738
    to .600 by breaking a tie between system means)."""
    order = np.argsort(groups, kind="stable")
    bounds = np.cumsum(np.bincount(groups, minlength=count))
    return np.array([math.fsum(values[members].tolist()) / members.size if members.size else np.nan
                     for members in np.split(order, bounds[:-1])])


def binary_rescaled(values: np.ndarray) -> np.ndarray:
    """`values` times the power of two that brings their largest magnitude into [0.5, 1).

    Every statistic here is unchanged by a positive scale, and a power of two scales exactly, so on
    ordinary data nothing moves by a bit; but sums of squares of values near 1e-300 underflow, and
    denormals (5e-324 x 1..10) carry a few bits each, which gave r = .988 where the same data at
    scale 1 gives .939 and bootstrap intervals "undefined" (found by a probe, 2026-11-22)."""
    finite = values[np.isfinite(values)]
    largest = float(np.abs(finite).max()) if finite.size else 0.0
    if largest == 0.0:
        return values
    return np.ldexp(values, -int(np.frexp(largest)[1]))


def correlate(human: list[float] | list[list[float]], scores: dict[str, list[float]],
              systems: list[str] | None = None, methods: Sequence[str] = METHODS,
              confidence: float = 0.95, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The body of a /correlate 200 response: per metric, level and method {r, p, ci, n}, comparisons, agreement.

    Item level uses every item; system level (when `systems` is given) correlates per-system means,
    its bootstrap resampling items within each system so every system stays present. Every
    comparison carries `test`: 'williams' (Pearson only) or 'paired_bootstrap' (every method).
    """
    methods = list(dict.fromkeys(methods))
    means, units = _check_inputs(human, scores, systems, methods, confidence, resamples)
    means = binary_rescaled(means)
    metrics = {name: binary_rescaled(np.asarray(values, dtype=np.float64)) for name, values in scores.items()}
    n = int(means.size)
    if n < MIN_ITEMS:
        raise StatsInputError({"human": f"Give at least {MIN_ITEMS} items (got {n})."})
    cache: dict[str, dict[str, np.ndarray]] = {}
    needed = min_resamples(confidence)
    no_bootstrap = ("resampling is off (resamples = 0)" if resamples == 0 else
                    f"too few resamples for a {confidence:.12g} interval (resamples = {resamples}, need at least "
                    f"{needed})" if resamples < needed else
                    f"too few items for a bootstrap (n = {n}, need at least {MIN_BOOTSTRAP})"
                    if n < MIN_BOOTSTRAP else None)
    indices = resample_indices(n, resamples, seed) if no_bootstrap is None else None

    def item_distribution(method: str) -> dict[str, np.ndarray]:
        if not cache:  # every method in one pass: resample counts and ranks are shared
            cache.update(bootstrap_distributions(means, metrics, methods, indices))
        return cache[method]

    item, comparisons = _level(means, metrics, methods, confidence, no_bootstrap, item_distribution)
    for entry in comparisons:
        entry["level"] = "item"
    body: dict[str, Any] = {"n": n, "metrics": {name: {"item": item[name]} for name in metrics}}

    if systems is not None:
        labels, groups = np.unique(np.asarray([str(s) for s in systems]), return_inverse=True)
        count = labels.size
        sys_human = _system_means(means, groups, count)
        sys_metrics = {name: _system_means(values, groups, count) for name, values in metrics.items()}
        # Resampling items within each system cannot move a system with one item: if none has two,
        # every resample is the sample itself and an interval would be a zero-width [r, r].
        sys_no_bootstrap = no_bootstrap or ("every system has a single item, so resampling within systems "
                                            "cannot vary" if count == n else None)
        sys_indices = _stratified_indices(groups, count, resamples, seed) if sys_no_bootstrap is None else None
        sys_cache: dict[str, dict[str, np.ndarray]] = {}

        def system_distribution(method: str) -> dict[str, np.ndarray]:
            if not sys_cache:  # every method in one pass: the resampled system means are shared
                sys_cache.update(system_bootstrap_distributions(means, metrics, methods, groups, count, sys_indices))
            return sys_cache[method]

        system, sys_comparisons = _level(sys_human, sys_metrics, methods, confidence, sys_no_bootstrap,
                                         system_distribution)
        for entry in sys_comparisons:
            entry["level"] = "system"
            _say_systems(entry)
        for name in metrics:
            body["metrics"][name]["system"] = system[name]
            for entry in system[name].values():
                _say_systems(entry)
        comparisons += sys_comparisons
        body["systems"] = {"count": int(count), "labels": [str(label) for label in labels]}
    body["comparisons"] = comparisons
    if units is not None:
        alpha = krippendorff_alpha_interval(units)
        body["agreement"] = {"krippendorff_alpha": alpha,
                             "raters_per_item": float(np.mean([u.size for u in units])),
                             "metric": "interval"}
        if alpha is None:
            body["agreement"]["reason"] = "no item has two ratings, or the ratings never vary"
    else:
        body["agreement"] = None
    return body


def _say_systems(entry: dict[str, Any]) -> None:
    """System-level reasons count systems, not items (the bootstrap's items stay items)."""
    if entry.get("reason", "").startswith("too few items (n ="):
        entry["reason"] = entry["reason"].replace("too few items", "too few systems", 1)


def _stratified_indices(groups: np.ndarray, count: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples, n) indices that resample items within each system, keeping every system's size.

    Position j of every row holds an item of position j's own system. The draws are made system by
    system in label order, each system's members in item order: changing that changes every seed's
    numbers. Members come from one stable sort (was a scan of all items per system: O(n x systems)).
    """
    rng = np.random.default_rng(seed)
    n = groups.size
    out = np.empty((resamples, n), dtype=np.int64)
    order = np.argsort(groups, kind="stable")
    bounds = np.cumsum(np.bincount(groups, minlength=count))
    for members in np.split(order, bounds[:-1]):
        draws = rng.integers(0, members.size, size=(resamples, members.size))
        out[:, members] = members[draws]
    return out


def _system_sum_matrix(columns: Sequence[np.ndarray], groups: np.ndarray, count: int) -> sparse.csr_array:
    """(n, len(columns) x count) sparse matrix holding column k's value of item i at (i, k count + groups[i]).

    A row of item multiplicities times it gives every column's per-system sums at once. Sparse:
    the dense items x systems one-hot it replaces took 6.7 GiB at 30,000 items and systems.
    """
    n = groups.size
    rows = np.tile(np.arange(n), len(columns))
    cols = np.concatenate([groups + k * count for k in range(len(columns))])
    return sparse.csr_array((np.concatenate(columns), (rows, cols)), shape=(n, len(columns) * count))


def system_bootstrap_distributions(human: np.ndarray, metrics: dict[str, np.ndarray], methods: Sequence[str],
                                   groups: np.ndarray, count: int,
                                   indices: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """{method: {metric: system-level correlation with the humans on every row of stratified `indices`}}.

    Stratified resampling keeps every system's size, so a resample's system means are its item
    multiplicities times the values, summed per system (one sparse product for the humans and all
    metrics) and divided by the sizes. Summing before dividing keeps equal means exactly equal
    (integer ratings), which the ranks of Spearman and Kendall depend on. Rows go in chunks of
    `_CHUNK_CELLS`: memory O(chunk x (items + systems)) however many resamples or systems.
    """
    resamples, n = indices.shape
    names = list(metrics)
    stacked = _system_sum_matrix([human, *(metrics[name] for name in names)], groups, count)
    sizes = np.bincount(groups, minlength=count)
    chunk = max(1, _CHUNK_CELLS // max(n, (len(names) + 1) * count, 1))
    out = {method: {name: np.empty(resamples) for name in names} for method in methods}
    for start in range(0, resamples, chunk):
        part = slice(start, start + chunk)
        weights = _counts(indices[part], n)
        means = np.asarray(weights @ stacked).reshape(weights.shape[0], len(names) + 1, count) / sizes
        rows = {name: means[:, k + 1] for k, name in enumerate(names)}
        for method in methods:
            for name, dist in _distribution_from_rows(means[:, 0], rows, method).items():
                out[method][name][part] = dist
    return out


def _distribution_from_rows(human_rows: np.ndarray, metric_rows: dict[str, np.ndarray], method: str) -> dict:
    """Correlations per row for already-resampled (B, k) arrays (system means per resample)."""
    if method == "spearman":
        hr = sps.rankdata(human_rows, axis=1)
        return {name: _pearson_rows(hr, sps.rankdata(rows, axis=1)) for name, rows in metric_rows.items()}
    if method == "pearson":
        return {name: _pearson_rows(human_rows, rows) for name, rows in metric_rows.items()}
    return {name: _kendall_rows(human_rows, rows) for name, rows in metric_rows.items()}
