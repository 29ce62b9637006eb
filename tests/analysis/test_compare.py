"""Comparisons with upstream results, and agreement between raters of the same systems."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from service.analysis.compare import compare_with_upstream, pairwise_rater_agreement
from service.analysis.inputs import HumanEvalInput
from service.stats.human_eval import assess

SYSTEMS = ("A", "B", "C", "QC")


def ratings_for(rater: str, assignment: str, fun: list[float]) -> list[dict]:
    return [{"rater": rater, "system": s, "item": f"{assignment}:{k}", "scores": {"fun": v, "dull": 100 - v}}
            for k, (s, v) in enumerate(zip(SYSTEMS, fun))]


DATA = HumanEvalInput(
    ratings_for("w1", "a1", [80, 60, 40, 5]) + ratings_for("w2", "a2", [70, 65, 30, 10])
    + ratings_for("w3", "a3", [20, 90, 55, 60]) + ratings_for("w4", "a4", [50, 10, 80, 70]),
    reverse=["dull"], qc_system="QC")


def test_compare_with_upstream_counts_agreement_and_z_differences() -> None:
    result = assess(DATA.ratings, DATA.reverse, DATA.scale, DATA.qc_system, alpha=0.3)
    ours = set(result["raters"]["passed"])
    reversed_w1 = np.array([80, 80, 60, 60, 40, 40, 5, 5], dtype=float)  # fun and 100 - dull, per dialogue
    z_a1 = (80 - reversed_w1.mean()) / reversed_w1.std(ddof=1)
    upstream = {"passed": sorted(ours | {"w3"}), "failed": sorted({"w1", "w2", "w4"} - ours - {"w3"}),
                "z": {"a1:0": {"fun": z_a1 + 1e-3, "dull": z_a1}}}
    comparison = compare_with_upstream(DATA, result, upstream)
    assert ours == {"w1", "w2"}  # w3 and w4 rated the QC bot above ordinary systems
    assert comparison["workers"] == 4 and comparison["agree"] == 3
    assert comparison["disagreements"] == [{"rater": "w3", "p": result["raters"]["p"]["w3"],
                                            "ours": "fail", "upstream": "pass"}]
    assert comparison["z_compared"] == 2
    assert comparison["z_max_abs_diff"] == pytest.approx(1e-3, abs=1e-9)


def test_pairwise_rater_agreement_correlates_raters_of_the_same_systems() -> None:
    result = assess(DATA.ratings, DATA.reverse, DATA.scale, DATA.qc_system, alpha=0.3)
    assert set(result["raters"]["passed"]) == {"w1", "w2"}
    pairs = pairwise_rater_agreement(DATA, result)

    def mean_z(fun: list[float]) -> np.ndarray:
        values = np.array([[v, v] for v in fun], dtype=float)  # dull reversed is fun again
        return ((values - values.mean()) / values.std(ddof=1)).mean(axis=1)

    assert pairs["passed"] == [pytest.approx(sps.pearsonr(mean_z([80, 60, 40, 5]), mean_z([70, 65, 30, 10])).statistic)]
    assert pairs["failed"] == [pytest.approx(sps.pearsonr(mean_z([20, 90, 55, 60]), mean_z([50, 10, 80, 70])).statistic)]
