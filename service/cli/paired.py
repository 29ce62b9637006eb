"""Systems compared on the inputs they both answered (`dialscore score --paired-by FIELD`).

Per-system intervals describe each mean alone, so two that overlap are no test: systems that answered
the same inputs differ more clearly input by input. For each model and each pair of systems (a, b), over
the inputs (lines' FIELD) both were scored on, a line's score averaged where a system has several for one
input: the mean difference a - b, its Student-t interval (n - 1 degrees of freedom, the row intervals'
level) and the two-sided paired t-test's p (scipy.stats.ttest_rel's), with p Holm-adjusted over that
model's pairs (significance.holm).
"""
from __future__ import annotations

from collections.abc import Mapping
from itertools import combinations
from typing import Any

import numpy as np
from scipy import stats as sps

from service.cli.intervals import IntervalSettings
from service.stats.bootstrap import TIE_ULPS
from service.stats.human_eval import mean_interval as t_interval
from service.stats.significance import holm

METHOD = ("paired t-test (as scipy.stats.ttest_rel, two-sided) and Student-t interval of the mean difference a - b "
          "over the inputs both systems answered; p_holm Holm-adjusted over the model's pairs")


def compare(a: Mapping[str, float], b: Mapping[str, float], settings: IntervalSettings) -> dict[str, Any]:
    """{n, delta, ci, p} of a - b over the keys both hold; `reason` where there is no test."""
    keys = sorted(set(a) & set(b))
    x, y = np.array([a[k] for k in keys]), np.array([b[k] for k in keys])
    found: dict[str, Any] = {"n": len(keys), "delta": float((x - y).mean()) if keys else None, "ci": None, "p": None}
    if len(keys) < 2:
        return {**found, "reason": "fewer than two inputs both systems answered"}
    # Differences spread by no more than rounding are one value (.3 - .1 and .5 - .3 differ in the last place):
    # t would be rounding over rounding, a p near 1e-32 that also joins the Holm family.
    if np.ptp(x - y) <= TIE_ULPS * np.finfo(np.float64).eps * np.abs(np.r_[x, y]).max():
        return {**found, "ci": [found["delta"]] * 2 if settings.enabled else None,
                "reason": "the differences never vary: no t-test"}
    # ttest_rel's own numbers, from the differences: it warns of precision loss on nearly equal scores
    t = found["delta"] / sps.sem(x - y)
    return {**found, "p": float(2 * sps.t.sf(abs(t), len(keys) - 1)),
            "ci": t_interval(x - y, settings.confidence) if settings.enabled else None}


def compare_systems(scores: Mapping[str, Mapping[str, Mapping[str, list[float]]]], systems: list[str],
                    settings: IntervalSettings) -> dict[str, list[dict[str, Any]]]:
    """{model: [{a, b, n, delta, ci, p, p_holm?, reason?}]} for every pair of `systems` in their order, from
    scores[model][system][input] (a list: several lines of one input are averaged)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for model, by_system in scores.items():
        means = {system: {key: float(np.mean(values)) for key, values in by_system.get(system, {}).items()}
                 for system in systems}
        rows = [{"a": a, "b": b, **compare(means[a], means[b], settings)} for a, b in combinations(systems, 2)]
        tested = [row for row in rows if row["p"] is not None]
        for row, adjusted in zip(tested, holm([row["p"] for row in tested])):
            row["p_holm"] = float(adjusted)
        found[model] = rows
    return found
