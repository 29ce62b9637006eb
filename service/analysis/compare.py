"""Compare a human-eval reproduction with the per-rater results published alongside the data."""
from __future__ import annotations

from typing import Any

import numpy as np

from service.analysis.inputs import HumanEvalInput
from service.human_eval import standardise


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
        lo, hi = data.scale
        raw = np.array([[float(r["scores"][c]) for c in criteria] for r in data.ratings])
        for j, name in enumerate(criteria):
            if name in data.reverse:
                raw[:, j] = lo + hi - raw[:, j]
        z, _, _ = standardise(raw, np.array([r["rater"] for r in data.ratings], dtype=object))
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
