"""Agreement between human raters: Krippendorff's alpha, interval and ordinal."""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
from scipy.stats import rankdata


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

    observed = math.fsum(spread(u) / (u.size - 1) for u in pairable)
    values = np.concatenate(pairable)
    expected = spread(values) / (values.size - 1)
    if expected <= 0:
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
