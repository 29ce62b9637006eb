"""POST /human-eval: what the endpoint passes on to service/stats/human_eval.py."""
from __future__ import annotations

import pytest
from scipy import stats as sps


def _ratings() -> list[dict]:
    """Two raters; on `fun` the quality-control system is clearly worse, on `robotic` (reversed:
    100 - score) clearly better, so which criteria the test pools decides every rater's p."""
    fun = {"good": [60.0, 70.0, 80.0], "degraded": [10.0, 20.0, 30.0]}
    robotic = {"good": [60.0, 70.0, 80.0], "degraded": [10.0, 20.0, 30.0]}  # reversed: 40..20 and 90..70
    return [{"rater": rater, "system": system, "item": f"{rater}-{system}-{i}",
             "scores": {"fun": fun[system][i], "robotic": robotic[system][i]}}
            for rater in ("r1", "r2") for system in ("good", "degraded") for i in range(3)]


def test_human_eval_pools_the_qc_criteria_the_body_names(client):
    """POST /human-eval passes `qc_criteria` on: the quality-control test of each rater is the one-sided
    rank-sum test (Ji et al. 2022) of the QC system's against the other systems' scores on the named
    criteria (here the reversed `robotic` alone); by default, on those not reversed (`fun`)."""
    body = {"ratings": _ratings(), "reverse": ["robotic"], "qc_system": "degraded", "scale": [0, 100]}
    named = client.post("/human-eval", json={**body, "qc_criteria": ["robotic"]})
    assert named.status_code == 200, named.get_json()
    expected = sps.mannwhitneyu([90.0, 80.0, 70.0], [40.0, 30.0, 20.0], alternative="less").pvalue
    assert named.get_json()["raters"]["p"] == {"r1": pytest.approx(expected), "r2": pytest.approx(expected)}
    default = client.post("/human-eval", json=body).get_json()
    expected = sps.mannwhitneyu([10.0, 20.0, 30.0], [60.0, 70.0, 80.0], alternative="less").pvalue
    assert default["raters"]["p"] == {"r1": pytest.approx(expected), "r2": pytest.approx(expected)}


def test_a_reverse_entry_no_rating_scores_is_answered_with_a_warning(client):
    """As API.md's example needs, an unused `reverse` entry is not refused; the answer warns of it, as
    `python -m service.analysis human-eval --reverse` does, so a misspelling does not pass unseen."""
    body = {"ratings": _ratings(), "reverse": ["robtic"], "qc_system": "degraded", "scale": [0, 100]}
    response = client.post("/human-eval", json=body)
    assert response.status_code == 200, response.get_json()
    answer = response.get_json()
    assert answer["reversed"] == []
    assert len(answer["warnings"]) == 1 and "'robtic'" in answer["warnings"][0]


@pytest.mark.parametrize("key", ["rater", "system", "item"])
@pytest.mark.parametrize("label", ["   ", "\t\n"])
def test_a_blank_rater_system_or_item_is_422(client, key, label):
    """As /correlate's blank system labels: "   " is no system (or rater) to rank."""
    ratings = _ratings()
    ratings[4] = {**ratings[4], key: label}
    response = client.post("/human-eval", json={"ratings": ratings, "qc_system": "degraded"})
    assert response.status_code == 422, response.get_json()
    assert response.get_json()["error"]["details"] == {f"ratings.4.{key}": f"Must name the {key} (not blank)."}


def test_a_system_without_an_interval_is_answered_with_the_reason(client):
    """`overall_z_ci` null said nothing of why; `overall_z_ci_reason` does, and the documented schema holds it."""
    from service.api.schemas import HumanEvalResponseSchema

    ratings = [{"rater": "r1", "system": "A", "item": f"a{i}", "scores": {"fun": 60.0 + 7 * i}} for i in range(3)]
    ratings.append({"rater": "r1", "system": "lone", "item": "l0", "scores": {"fun": 50.0}})
    response = client.post("/human-eval", json={"ratings": ratings})
    assert response.status_code == 200, response.get_json()
    body = HumanEvalResponseSchema().load(response.get_json())  # raises on a field the schema does not name
    systems = {s["system"]: s for s in body["systems"]}
    assert systems["lone"]["overall_z_ci"] is None
    assert systems["lone"]["overall_z_ci_reason"] == "one dialogue (a t interval needs two)"
    assert body["intervals"]["resampled"].startswith("nothing: ")
