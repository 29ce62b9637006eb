"""POST /score and POST /rerank."""
from __future__ import annotations

from flask import Blueprint, Response, jsonify

from service.api import dataplane
from service.api.context import settings, store
from service.api.body import load_body
from service.api.schemas import RERANK_REQUEST, SCORE_REQUEST

bp = Blueprint("scoring", __name__)


@bp.post("/score")
def score() -> Response:
    return jsonify(dataplane.score(store(), load_body(SCORE_REQUEST), settings()))


@bp.post("/rerank")
def rerank() -> Response:
    return jsonify(dataplane.rerank(store(), load_body(RERANK_REQUEST), settings()))
