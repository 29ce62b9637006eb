"""POST /correlate and POST /human-eval: statistics on numbers the client sends (no models)."""
from __future__ import annotations

from flask import Blueprint, Response, jsonify

from service.api import dataplane
from service.api.context import settings
from service.api.body import load_body
from service.api.schemas import CORRELATE_REQUEST, HUMAN_EVAL_REQUEST

bp = Blueprint("analysis", __name__)


@bp.post("/correlate")
def correlate() -> Response:
    return jsonify(dataplane.correlate(load_body(CORRELATE_REQUEST), settings()))


@bp.post("/human-eval")
def assess() -> Response:
    return jsonify(dataplane.human_eval(load_body(HUMAN_EVAL_REQUEST), settings()))
