"""Bootstrap distributions of correlations: percentile intervals and paired comparisons.

Our own rather than scipy.stats.bootstrap because one index matrix is shared by every metric: the
paired bootstrap between two metrics then needs no extra resampling, and the human scores are
ranked once per resample matrix rather than once per metric (scipy resamples each call
independently). A resample is handled as the multiplicity of each item in it, so Pearson,
Spearman and Kendall over thousands of resamples are a few matrix products. The system level
resamples the systems, the items within each system (`stratified_indices`) or both (designs.py).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import sparse
from scipy import stats as sps

from service.stats.correlation import correlation, monte_carlo_se

# Below this many items most resamples hold two or three distinct points, whose correlations are
# +-1: the intervals and paired-bootstrap p-values would be artefacts, so none are given.
MIN_BOOTSTRAP = 8
# Resamples are processed in chunks so that a 10,000-item request stays within ~100 MB.
_CHUNK_CELLS = 2_000_000
_PAIRWISE_MAX = 64  # up to this many points Kendall's tau is computed over all pairs at once
_WEIGHTED_KENDALL_MAX = 2000  # up to this many items the bootstrap tau uses one n x n sign matrix
ZERO_TOLERANCE = 1e-12  # bootstrap_p: a resampled statistic this close to 0 is 0 (rounding, not a side)


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


# What one scipy call per resample costs, in the item-resamples of the vectorised paths: system-level
# Kendall over more than _PAIRWISE_MAX systems goes row by row.
ROW_CALL_ITEMS = 2000


def bootstrap_work_items(items: int, systems: int | None, methods: Sequence[str]) -> int:
    """The item count a /correlate bootstrap's time grows with, for the limit on items x resamples x
    metrics: the items, plus the row-by-row Kendall calls of a system level past _PAIRWISE_MAX
    systems, which would otherwise pass the limit at a fraction of its cost."""
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


def _kendall_counted(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Kendall tau-b of each resample given as item counts, by scipy on the resample's values (tau-b
    depends on the multiset, not its order); NaN where a side is constant."""
    out = np.full(weights.shape[0], np.nan)
    items = np.arange(x.size)
    for i, counts in enumerate(weights.astype(np.int64)):
        rows = np.repeat(items, counts)
        if np.ptp(x[rows]) > 0 and np.ptp(y[rows]) > 0:
            out[i] = sps.kendalltau(x[rows], y[rows]).statistic
    return out


def _kendall_weighted(x: np.ndarray, y: np.ndarray, weights: np.ndarray, tied_x: np.ndarray,
                      tied_y: np.ndarray) -> np.ndarray:
    """Kendall tau-b of every bootstrap resample, each given as item counts (a row of `weights`).

    A resample holding item i w_i times has S = w^T P w / 2 with P_ij = sign(x_i-x_j) sign(y_i-y_j)
    (copies of one item are tied and count zero), so all resamples cost one matrix product instead
    of B calls to scipy; ties enter tau-b's denominator as `tied_x`, `tied_y` (pairs per resample).
    """
    total = weights.sum(axis=1)
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
        total = self.weights.sum(axis=1, keepdims=True)
        average = np.cumsum(counts, axis=1) - (counts - 1) / 2  # 1-based average rank of each group
        return average[:, self.groups.group] - (total + 1) / 2


def _weighted_pearson(weights: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each resample given as item multiplicities, for fixed values x, y (n,).

    Two passes: deviations from each resample's own mean. One-pass moments (sums of squares less the
    squared mean) cancel where one value lies far from the spread of the rest, which turned
    resamples with no constant side into NaN.
    """
    total = weights.sum(axis=1)
    xc = x - (weights @ x / total)[:, None]
    yc = y - (weights @ y / total)[:, None]
    weighted_x = weights * xc
    sxy = np.einsum("ij,ij->i", weighted_x, yc)
    sxx = np.einsum("ij,ij->i", weighted_x, xc)
    syy = np.einsum("ij,ij->i", weights * yc, yc)
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
                            methods: Sequence[str], indices: np.ndarray,
                            item_inputs: np.ndarray | None = None) -> dict[str, dict[str, np.ndarray]]:
    """{method: {metric: correlation with the humans on every resample (row of `indices`)}}.

    A row of `indices` draws items, or with `item_inputs` (each item's input id) inputs, each bringing
    all its items. Every metric shares the rows: differences between metrics are a paired bootstrap. A
    resample is each item's multiplicity in it: Pearson and Spearman are weighted sums over the original
    items (ranks from cumulative counts, no sort per resample), Kendall one matrix product up to
    `_WEIGHTED_KENDALL_MAX` items and scipy per resample beyond. NaN marks a resample where a side was
    constant.
    """
    h = np.asarray(human, dtype=np.float64)
    columns = {name: np.asarray(values, dtype=np.float64) for name, values in metrics.items()}
    resamples, n = indices.shape[0], h.size
    chunk = max(1, _CHUNK_CELLS // max(n, 1))
    out = {method: {name: np.empty(resamples) for name in columns} for method in methods}
    groups = {name: _TieGroups(values) for name, values in columns.items()}
    human_groups = _TieGroups(h)
    centred = {name: values - values.mean() for name, values in columns.items()}
    h_centred = h - h.mean()
    for start in range(0, resamples, chunk):
        part = slice(start, start + chunk)
        idx = indices[part]
        weights = _counts(idx, n) if item_inputs is None else _counts(idx, idx.shape[1])[:, item_inputs]
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
                    r = _kendall_counted(h, values, weights)
                r[constant] = np.nan
                out[method][name][part] = r
    return out


def bootstrap_distribution(human: Sequence[float], metrics: dict[str, Sequence[float]], method: str,
                           indices: np.ndarray) -> dict[str, np.ndarray]:
    """{metric: correlation with the humans on every resample} for one method (see bootstrap_distributions)."""
    return bootstrap_distributions(human, metrics, [method], indices)[method]


def min_resamples(confidence: float) -> int:
    """Fewest resamples whose percentile interval has a resample beyond each tail: 2 / (1 - confidence) (40 at
    0.95). With fewer, both ends are the sample's extremes or a single value, which need not contain r."""
    return math.ceil(2.0 / (1.0 - confidence) - 1e-9)


# Most resamples whose correlation may be undefined (a side constant in them) before an interval is
# refused. The rest are the resamples that happened to draw the items that vary: an interval from
# them alone describes those, and can leave out the estimate itself when a third are dropped (a metric
# at 0 on 9 of 10 items).
MAX_UNDEFINED_SHARE = 0.05
UNDEFINED_REASON = (f"the correlation is undefined in more than {MAX_UNDEFINED_SHARE:.0%} of the bootstrap resamples "
                    "(a side is constant in them, e.g. a metric that is the same on most items): an interval from "
                    "the rest would describe only the resamples that drew the items that vary")


def without_items_reason(empty: np.ndarray, labels: Sequence[str], answered: Sequence[int], input_count: int) -> str:
    """Why a system-level correlation resampled by inputs is undefined where systems had no items:
    `empty` (resamples, systems) from designs.systems_without_items, `answered` each system's inputs."""
    resamples = empty.shape[0]
    hit = int(empty.any(axis=1).sum())
    counts = empty.sum(axis=0)
    worst = np.argsort(-counts, kind="stable")[:3]
    named = "; ".join(f"{labels[s]!r} in {int(counts[s])} of them (it answered {answered[s]} of the {input_count} inputs)"
                      for s in worst if counts[s])
    more = " and others" if np.count_nonzero(counts) > 3 else ""
    cause = (f"in {hit} of the {resamples} resamples a system had no item, none of the inputs it answered having "
             f"been drawn, and so no mean: {named}{more}")
    advice = ("name as `inputs` only inputs that every system answered, or leave `inputs` out to resample items "
              "within each system")
    if hit > MAX_UNDEFINED_SHARE * resamples:
        return (f"the correlation is undefined in more than {MAX_UNDEFINED_SHARE:.0%} of the bootstrap resamples: "
                f"{cause}; {advice}")
    return f"{UNDEFINED_REASON}; besides, {cause}"


def _mostly_defined(distribution: np.ndarray, finite: np.ndarray) -> bool:
    return finite.size > 0 and distribution.size - finite.size <= MAX_UNDEFINED_SHARE * distribution.size


def percentile_interval(distribution: np.ndarray, confidence: float = 0.95) -> list[float] | None:
    """Percentile interval of a bootstrap distribution, ignoring undefined (NaN) resamples; None where
    more than MAX_UNDEFINED_SHARE of them are undefined."""
    finite = distribution[np.isfinite(distribution)]
    if not _mostly_defined(distribution, finite):
        return None
    tail = (1.0 - confidence) / 2.0 * 100.0
    lo, hi = np.percentile(finite, [tail, 100.0 - tail])
    return [float(lo), float(hi)]


def bootstrap_p(distribution: np.ndarray) -> dict[str, Any]:
    """Two-sided p of r = 0 from a bootstrap distribution: the dual of its percentile interval, so a
    (1 - alpha) interval excludes 0 where p < alpha (up to interpolation).

    With k the resamples on the smaller side of 0 (one within ZERO_TOLERANCE of 0 counts on both) among
    B defined ones, p = (2k + 1) / (B + 1), capped at 1 (the +1 counts the sample itself). At k = 0 it
    is the floor 1 / (B + 1), `at_floor`: below what B resamples resolve. None where more than
    MAX_UNDEFINED_SHARE are undefined, as for the interval. `mc_se`: p's Monte Carlo error;
    `defined`: B, where fewer than the resamples given.
    """
    finite = distribution[np.isfinite(distribution)]
    if not _mostly_defined(distribution, finite):
        return {"p": None, "at_floor": False}
    # A resample whose statistic is 0 but for rounding (coarse ratings often give r = 0 exactly, computed
    # as +-1e-17 by sums whose order the rows decide) counts on both sides, as an exact 0 does.
    zero = np.abs(finite) <= ZERO_TOLERANCE
    k = min(int(np.count_nonzero((finite < 0) | zero)), int(np.count_nonzero((finite > 0) | zero)))
    p = min(1.0, (2 * k + 1) / (finite.size + 1))
    found = {"p": p, "at_floor": k == 0, "mc_se": monte_carlo_se(p, finite.size)}
    if finite.size < distribution.size:  # B in p's formula is these, not the resamples asked for
        found["defined"] = int(finite.size)
    return found


def p_fields(found: dict[str, Any]) -> dict[str, Any]:
    """bootstrap_p's defined p as an answer's fields: p, p_at_floor, p_mc_se, and resamples_defined where
    some resamples left the statistic undefined (p counts the others)."""
    fields = {"p": found["p"], "p_at_floor": found["at_floor"], "p_mc_se": found["mc_se"]}
    if "defined" in found:
        fields["resamples_defined"] = found["defined"]
    return fields


def paired_bootstrap_from(deltas: np.ndarray, confidence: float = 0.95) -> dict[str, Any]:
    """Two-sided p and interval for a difference of correlations from its paired bootstrap deltas.

    p is bootstrap_p of the deltas, the dual of their percentile interval, as a system-level
    correlation's: a (1 - alpha) interval excludes 0 where p < alpha. The null-shifted count (Efron &
    Tibshirani 1993, 16.4; Berg-Kirkpatrick et al. 2012 in NLP) assumes deltas symmetric about their
    centre; a difference of correlations is bounded (|delta| <= 2), and with few systems its deltas
    pile up against the bound, where that count loses a tail and halves p.
    """
    found = bootstrap_p(deltas)  # None where too many deltas are undefined, as the interval
    if found["p"] is None:
        return {"p": None, "ci": None, "reason": UNDEFINED_REASON}
    return {**p_fields(found), "ci": percentile_interval(deltas, confidence)}


def paired_bootstrap(human: Sequence[float], a: Sequence[float], b: Sequence[float], method: str = "pearson",
                     confidence: float = 0.95, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Is r(human, a) different from r(human, b)? Paired bootstrap over items, any method."""
    ra = correlation(a, human, method)
    rb = correlation(b, human, method)
    if ra["r"] is None or rb["r"] is None:
        return {"delta": None, "p": None, "ci": None, "reason": ra.get("reason") or rb.get("reason")}
    dist = bootstrap_distribution(human, {"a": a, "b": b}, method, resample_indices(len(human), resamples, seed))
    delta = ra["r"] - rb["r"]
    return {"delta": delta, **paired_bootstrap_from(dist["a"] - dist["b"], confidence)}


def stratified_indices(groups: np.ndarray, count: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples, n) indices that resample items within each system, keeping every system's size.

    Position j of every row holds an item of position j's own system. The draws are made system by system
    in id order (/correlate numbers systems by content: designs.by_content), each system's members in item
    order (one stable sort): changing that changes every seed's numbers."""
    rng = np.random.default_rng(seed)
    n = groups.size
    out = np.empty((resamples, n), dtype=np.int64)
    order = np.argsort(groups, kind="stable")
    bounds = np.cumsum(np.bincount(groups, minlength=count))
    for members in np.split(order, bounds[:-1]):
        draws = rng.integers(0, members.size, size=(resamples, members.size))
        out[:, members] = members[draws]
    return out


TIE_ULPS = 8  # system means this close (in units of the last place of the larger) are one value


def decimal_ties(values: np.ndarray) -> np.ndarray:
    """System means (along the last axis) that differ by at most TIE_ULPS units in the last place made
    equal (each run takes its smallest), so means equal in decimal are equal in binary too:
    (.2 + .1 + .3) / 3 and (.1 + .4 + .1) / 3 differ by one ulp as doubles, and Spearman and Kendall
    would rank them apart. The tolerance is relative to each pair, not a grid of significant digits,
    which would round away real differences under a large shared offset; Pearson moves by about 1e-16.
    Means spaced within TIE_ULPS one after another form one run: differences that small are rounding,
    not what anyone said."""
    out = np.array(values, dtype=np.float64, copy=True)
    if out.ndim == 0 or out.shape[-1] < 2:
        return out
    order = np.argsort(out, axis=-1, kind="stable")
    ranked = np.take_along_axis(out, order, axis=-1)
    with np.errstate(invalid="ignore", over="ignore"):
        gap = np.diff(ranked, axis=-1)
        scale = np.maximum(np.abs(ranked[..., 1:]), np.abs(ranked[..., :-1]))
        tied = gap <= TIE_ULPS * np.finfo(np.float64).eps * scale  # NaN and inf never tie
    starts = np.concatenate([np.ones(ranked.shape[:-1] + (1,), dtype=bool), ~tied], axis=-1)
    first = np.maximum.accumulate(np.where(starts, np.arange(ranked.shape[-1]), 0), axis=-1)
    np.put_along_axis(out, order, np.take_along_axis(ranked, first, axis=-1), axis=-1)
    return out


def _system_sum_matrix(columns: Sequence[np.ndarray], groups: np.ndarray, count: int) -> sparse.csr_array:
    """(n, len(columns) x count) sparse matrix holding column k's value of item i at (i, k count + groups[i]).

    A row of item multiplicities times it gives every column's per-system sums at once. Sparse, because a
    dense items x systems one-hot grows with the square of a large request."""
    n = groups.size
    rows = np.tile(np.arange(n), len(columns))
    cols = np.concatenate([groups + k * count for k in range(len(columns))])
    return sparse.csr_array((np.concatenate(columns), (rows, cols)), shape=(n, len(columns) * count))


SLOT_ITEMS_STREAM = 2  # the seed's stream for each drawn system's own items (designs.py's slots use 1)


class _SlotItems:
    """Each drawn system (a slot of a resample) with its own resample of its items, drawn with
    replacement from that system's items independently of every other slot, a copy of the same
    system included: the second stage of a two-stage (cluster) bootstrap (Davison and Hinkley 1997,
    section 3.8). The draws run slot by slot in row order from one generator, whose bounded
    integers are the same however the slots are split into chunks."""

    def __init__(self, values: np.ndarray, groups: np.ndarray, count: int, seed: int) -> None:
        self.values = np.ascontiguousarray(values.T)  # (columns, items): a slot's draws are summed along a row
        self.order = np.argsort(groups, kind="stable")  # items system by system, each in item order
        self.sizes = np.bincount(groups, minlength=count)
        self.starts = np.cumsum(self.sizes) - self.sizes
        self.rng = np.random.default_rng((seed, SLOT_ITEMS_STREAM))

    def means(self, slots: np.ndarray) -> np.ndarray:
        """(rows, columns, systems) means of each slot's own resample of its system's items."""
        flat = slots.ravel()
        sizes = self.sizes[flat]  # every system has an item, so no slot's run of draws is empty
        local = self.rng.integers(0, np.repeat(sizes, sizes))
        picked = self.order[np.repeat(self.starts[flat], sizes) + local]
        # Exact sums of integer ratings, then one division: equal draws give equal means.
        sums = np.add.reduceat(np.take(self.values, picked, axis=1), np.cumsum(sizes) - sizes, axis=1)
        means = (sums / sizes).reshape(self.values.shape[0], *slots.shape).transpose(1, 0, 2)
        return decimal_ties(means)


def system_bootstrap_distributions(human: np.ndarray, metrics: dict[str, np.ndarray], methods: Sequence[str],
                                   groups: np.ndarray, count: int, indices: np.ndarray | None,
                                   slots: np.ndarray | None = None, inputs: np.ndarray | None = None,
                                   slot_seed: int | None = None) -> dict[str, dict[str, np.ndarray]]:
    """{method: {metric: system-level correlation with the humans on every resample}}.

    `indices` (resamples, items) resample items within each system (stratified: every system keeps its
    size); with `inputs` (each item's input, 0..m-1) they are (resamples, m) draws of inputs, each
    bringing every item of that input; None keeps the items. `slots` (resamples, systems) resample the
    systems (designs.py), or None; with `slot_seed` instead of `indices` each slot draws its own items
    (_SlotItems). A system's mean is a sum of its drawn items' values divided by their count: summing
    first keeps equal means exactly equal (integer ratings), which ranks depend on. A system none of
    whose inputs was drawn has no mean (NaN). Memory O(chunk x (items + systems)).
    """
    if indices is None and slots is None:
        raise ValueError("give item indices, system slots or both")
    if slot_seed is not None and (slots is None or indices is not None):
        raise ValueError("slot_seed draws each slot's items: give slots and no item indices")
    n = groups.size
    resamples = (indices if indices is not None else slots).shape[0]
    names = list(metrics)
    columns = [np.ones(n), human, *(metrics[name] for name in names)]  # the first sums to each system's size
    stacked = _system_sum_matrix(columns, groups, count)
    chunk = max(1, _CHUNK_CELLS // max(n, len(columns) * count, 1))
    out = {method: {name: np.empty(resamples) for name in names} for method in methods}

    def means_of(weights: np.ndarray) -> np.ndarray:
        sums = np.asarray(weights @ stacked).reshape(weights.shape[0], len(columns), count)
        with np.errstate(invalid="ignore", divide="ignore"):
            return decimal_ties(sums[:, 1:] / sums[:, :1])

    slot_items = (None if slot_seed is None else
                  _SlotItems(np.stack([human, *(metrics[name] for name in names)], axis=1), groups, count, slot_seed))
    observed = means_of(np.ones((1, n))) if indices is None else None
    for start in range(0, resamples, chunk):
        part = slice(start, start + chunk)
        if slot_items is not None:
            means = slot_items.means(slots[part])
        elif indices is None:
            means = np.broadcast_to(observed, (slots[part].shape[0],) + observed.shape[1:])
        elif inputs is None:
            means = means_of(_counts(indices[part], n))
        else:
            means = means_of(_counts(indices[part], indices.shape[1])[:, inputs])
        if slots is not None and slot_items is None:
            means = np.take_along_axis(means, slots[part][:, None, :], axis=2)
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
