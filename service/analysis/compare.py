"""Compare a human-eval reproduction with the per-rater results published alongside the data."""
from __future__ import annotations

from typing import Any

import numpy as np

from service.analysis.inputs import HumanEvalInput
from service.stats.human_eval import oriented_scores, rows_by, standardise


def _z_scores(data: HumanEvalInput, criteria: list[str]) -> np.ndarray:
    """Each rating's per-rater z-scores, computed exactly as `assess` does."""
    raw = oriented_scores(data.ratings, criteria, data.reverse, data.scale)
    z, _, _ = standardise(raw, rows_by(np.array([r["rater"] for r in data.ratings], dtype=object)))
    return z


def compare_with_upstream(data: HumanEvalInput, result: dict[str, Any], upstream: dict[str, Any]) -> dict[str, Any]:
    """Pass/fail agreement per worker and the largest z-score difference against `upstream`.

    `upstream`: {"passed": [...], "failed": [...], "z": {item: {criterion: z}}} as the Ji et al.
    JSON importer returns it. z-scores are compared on items both sides have, with `data`'s
    reversal applied first; upstream adds 1e-6 to every standard deviation, so differences of
    that order are expected.
    """
    ours_passed = set(result["raters"]["passed"])
    up_passed = set(upstream["passed"])
    workers = sorted(up_passed | set(upstream["failed"]))
    disagreements = [
        {"rater": w, "p": result["raters"]["p"].get(w), "ours": "pass" if w in ours_passed else "fail",
         "upstream": "pass" if w in up_passed else "fail"}
        for w in workers if (w in ours_passed) != (w in up_passed)
    ]
    per_worker = [
        {"rater": w, "p": result["raters"]["p"].get(w), "ours": "pass" if w in ours_passed else "fail",
         "upstream": "pass" if w in up_passed else "fail"}
        for w in workers
    ]
    missing = [w for w in workers if w not in result["raters"]["p"] and w not in ours_passed]
    agree = len(workers) - len(disagreements)
    comparison: dict[str, Any] = {"workers": len(workers), "agree": agree,
                                  "agreement": agree / len(workers) if workers else 0.0,
                                  "disagreements": disagreements, "missing": missing, "per_worker": per_worker,
                                  "z_compared": 0, "z_max_abs_diff": None}
    if upstream.get("z"):
        criteria = result["criteria"]
        z = _z_scores(data, criteria)
        diffs = []
        for row, rating in enumerate(data.ratings):
            theirs = upstream["z"].get(rating["item"])
            if not theirs:
                continue
            for j, name in enumerate(criteria):
                if theirs.get(name) is not None:
                    diffs.append(abs(z[row, j] - theirs[name]))
        if diffs:
            comparison["z_compared"] = len(diffs)
            comparison["z_max_abs_diff"] = float(max(diffs))
    return comparison


def pairwise_rater_agreement(data: HumanEvalInput, result: dict[str, Any]) -> dict[str, list[float]]:
    """Pearson r between two assignments' per-dialogue mean z-scores, for assignments that rated
    the same set of systems (Ji et al.'s Figure 2), split by whether both raters passed or both failed.

    Follows upstream's mturk_statistics.py: an assignment is the part of an item id before ':'
    (as the Ji et al. importers write it), its dialogues are ordered by system name, and pairs are
    formed within each group of assignments with the same systems. Pairs mixing a passed and a
    failed rater, and undefined correlations (a constant side), are left out.
    """
    from itertools import combinations

    from scipy import stats as sps

    criteria = result["criteria"]
    z = _z_scores(data, criteria)
    per_dialogue = z.mean(axis=1)
    assignments: dict[str, list[tuple[str, float, str]]] = {}
    for row, rating in enumerate(data.ratings):
        key = rating["item"].split(":")[0]
        assignments.setdefault(key, []).append((rating["system"], per_dialogue[row], rating["rater"]))
    groups: dict[tuple[str, ...], list[tuple[str, np.ndarray]]] = {}
    for dialogues in assignments.values():
        dialogues.sort(key=lambda d: d[0])
        systems = tuple(d[0] for d in dialogues)
        groups.setdefault(systems, []).append((dialogues[0][2], np.array([d[1] for d in dialogues])))
    passed = set(result["raters"]["passed"])
    out: dict[str, list[float]] = {"passed": [], "failed": []}
    for members in groups.values():
        for (rater_a, za), (rater_b, zb) in combinations(members, 2):
            if (rater_a in passed) != (rater_b in passed) or np.ptp(za) == 0 or np.ptp(zb) == 0:
                continue
            out["passed" if rater_a in passed else "failed"].append(float(sps.pearsonr(za, zb).statistic))
    return out
