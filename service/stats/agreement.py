"""Agreement between human raters: Krippendorff's alpha, interval and ordinal, and its bootstrap."""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
from scipy import sparse
from scipy.stats import rankdata

# Resamples are weighed in chunks of about this many cells (rows x items, or x distinct ratings).
_CHUNK_CELLS = 2_000_000


def krippendorff_alpha_interval(units: Iterable[Sequence[float]]) -> float | None:
    """Krippendorff's alpha with the interval metric, from its definition (Krippendorff 2011).

    `units` holds each item's ratings, any number per item; items with fewer than two are left out.
    alpha = 1 - D_o / D_e, with D_o = sum_u (1/(m_u-1)) sum_{i!=j in u} (v_i-v_j)^2 / N and
    D_e = sum_{i!=j} (v_i-v_j)^2 / (N(N-1)) over the N pairable values, the latter in the centred form
    2 m sum (v - mean v)^2, which does not cancel when the ratings share a large offset. None where it is
    undefined (no pairable item, or no variation). Written here because the `krippendorff` package is not a
    service dependency."""
    pairable = [np.asarray(u, dtype=np.float64) for u in units]
    pairable = [u for u in pairable if u.size >= 2]
    if not pairable:
        return None
    def spread(v: np.ndarray) -> float:
        # Exactly rounded sums (math.fsum): the same alpha whatever the order of the items or of an
        # item's ratings (plain sums move the 16th digit when rows are shuffled).
        mean = math.fsum(v.tolist()) / v.size
        return 2 * v.size * math.fsum(((v - mean) ** 2).tolist())

    values = np.concatenate(pairable)
    if values.min() == values.max():  # tested as such: a rounded mean leaves equal ratings a spread of ~1e-33
        return None
    pairable, values = about_median(pairable), values - np.median(values)
    observed = math.fsum(spread(u) / (u.size - 1) for u in pairable)
    expected = spread(values) / (values.size - 1)
    if expected <= 0:  # spreads under ~1e-154 square to nothing
        return None
    return float(1.0 - observed / expected)



def krippendorff_alpha_ordinal(units: Iterable[Sequence[float]]) -> float | None:
    """Krippendorff's alpha with the ordinal metric (Krippendorff 2011), for ratings on a scale whose steps
    need not be equal (Likert items): the interval alpha of each value's mid-rank among the pairable values.

    The ordinal distance between values c and k, sum_{g=c..k} n_g - (n_c + n_k) / 2 with n_g how many
    pairable values equal g, is the difference of c's and k's mid-ranks in that pool, so this is that
    distance exactly, and any increasing relabelling of the scale leaves it as it was. None where undefined."""
    pairable = [np.asarray(u, dtype=np.float64) for u in units]
    pairable = [u for u in pairable if u.size >= 2]
    if not pairable:
        return None
    ranks = rankdata(np.concatenate(pairable))  # average ranks: equal values share one
    return krippendorff_alpha_interval(np.split(ranks, np.cumsum([u.size for u in pairable])[:-1]))


def about_median(pairable: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The items' ratings less the median of them all (exact for ratings near it): a mean rounded at a large
    shared offset is off by an ulp of it, which spreads tiny beside the offset do not forgive."""
    median = np.median(np.concatenate(pairable))
    return [u - median for u in pairable]


def pairable_units(units: Iterable[Sequence[float]]) -> list[np.ndarray]:
    """The items with two ratings or more: the only ones alpha reads."""
    return [u for u in (np.asarray(v, dtype=np.float64) for v in units) if u.size >= 2]


def bootstrap_alphas(pairable: Sequence[np.ndarray], indices: np.ndarray, ordinal: bool = False) -> np.ndarray:
    """Alpha (interval, or `ordinal`) on each resample of the pairable items, a row of `indices` drawing
    items with replacement; NaN where a resample's ratings never vary (AlphaResamples)."""
    return AlphaResamples(pairable).alphas(indices, ordinal)


class AlphaResamples:
    """The pairable items' sums that every resample's alpha reads, computed once for any number of draws.

    Each resample is read as its items' multiplicities w: the interval alpha's sums of squares are
    w-weighted sums of each item's own, about its mean, and of its mean's about the resample's; the
    ordinal alpha's mid-ranks come from the w-weighted counts of each distinct rating. Equal, up to
    rounding, to the functions above on the resampled items (tests/stats/test_agreement.py)."""

    def __init__(self, pairable: Sequence[np.ndarray]) -> None:
        self.count = len(pairable)
        self.sizes = np.array([u.size for u in pairable], dtype=np.float64)
        values = np.concatenate(pairable)
        starts = np.r_[0, np.cumsum(self.sizes.astype(np.int64))[:-1]]
        self.lows, self.highs = np.minimum.reduceat(values, starts), np.maximum.reduceat(values, starts)
        shifted = about_median(pairable)
        self.means = np.array([math.fsum(u.tolist()) / u.size for u in shifted])
        self.within = np.array([math.fsum(((u - m) ** 2).tolist()) for u, m in zip(shifted, self.means)])
        distinct, code = np.unique(values, return_inverse=True)
        owner = np.repeat(np.arange(self.count), self.sizes.astype(np.int64))
        self.counts = sparse.csr_matrix((np.ones(values.size), (owner, code)), shape=(self.count, distinct.size))

    def alphas(self, indices: np.ndarray, ordinal: bool = False) -> np.ndarray:
        sizes, alphas = self.sizes, np.empty(len(indices))
        step = max(1, _CHUNK_CELLS // (max(self.count, self.counts.shape[1]) if ordinal else self.count))
        for start in range(0, len(indices), step):
            rows = indices[start:start + step]
            offsets = rows + self.count * np.arange(len(rows))[:, None]
            w = np.bincount(offsets.ravel(), minlength=rows.size).reshape(len(rows), self.count).astype(np.float64)
            pooled = w @ sizes
            if ordinal:
                tally = np.asarray((self.counts.T @ w.T).T)  # each distinct rating's count in the resample
                ranks = np.cumsum(tally, axis=1) - (tally - 1) / 2 - (pooled[:, None] + 1) / 2  # mid-ranks, centred
                item1 = np.asarray((self.counts @ ranks.T).T)
                within = np.asarray((self.counts @ (ranks**2).T).T) - item1**2 / sizes
                pooled_ss = (tally * ranks**2).sum(axis=1)
            else:  # within the items, plus between their means and the resample's: no large offset cancels
                within = self.within
                centre = (w @ (sizes * self.means)) / pooled
                pooled_ss = w @ within + (w * sizes * (self.means - centre[:, None]) ** 2).sum(axis=1)
            observed = (w * (within * 2 * sizes / (sizes - 1))).sum(axis=1)
            expected = 2 * pooled * pooled_ss / (pooled - 1)
            varies = np.where(w > 0, self.highs, -np.inf).max(axis=1) > np.where(w > 0, self.lows, np.inf).min(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                alphas[start:start + step] = np.where(varies, 1.0 - observed / expected, np.nan)
        return alphas
