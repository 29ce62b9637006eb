"""POST /correlate and POST /human-eval: statistics on numbers the client sends (no models)."""
from __future__ import annotations

from flask import Blueprint, jsonify

from service import stats
from service.api import limits, settings
from service.api.body import load_body
from service.api.schemas import CORRELATE_REQUEST, HUMAN_EVAL_REQUEST
from service.errors import InvalidRequest
from service.stats import human_eval

bp = Blueprint("analysis", __name__)


@bp.post("/correlate")
def correlate():
    body = load_body(CORRELATE_REQUEST)
    limits.check_correlate(body, settings())
    try:
        result = stats.correlate(body["human"], body["scores"], systems=body["systems"], methods=body["methods"],
                                 confidence=body["confidence"], resamples=body["resamples"], seed=body["seed"])
    except stats.StatsInputError as exc:
        raise InvalidRequest(str(exc) or "The numbers cannot be correlated as given.", exc.fields) from None
    return jsonify(result)


@bp.post("/human-eval")
def assess():
    body = load_body(HUMAN_EVAL_REQUEST)
    limits.check_human_eval(body, settings())
    try:
        result = human_eval.assess(body["ratings"], reverse=body["reverse"], scale=tuple(body["scale"]),
                                   qc_system=body["qc_system"], alpha=body["alpha"],
                                   qc_criteria=body["qc_criteria"])
    except human_eval.HumanEvalInputError as exc:
        raise InvalidRequest(str(exc) or "The ratings cannot be assessed as given.", exc.fields) from None
    return jsonify(result)
