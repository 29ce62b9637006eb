"""POST /score and POST /rerank."""
from __future__ import annotations

from flask import Blueprint, g, jsonify

from service import handlers, limits
from service.api import load_body, settings, store
from service.schemas import RERANK_REQUEST, SCORE_REQUEST

bp = Blueprint("scoring", __name__)


@bp.post("/score")
def score():
    body = load_body(SCORE_REQUEST)
    g.model = body.get("model") or ",".join(body.get("models", []))
    limits.check_items(body["items"], settings())
    return jsonify(handlers.score(store(), body))


@bp.post("/rerank")
def rerank():
    body = load_body(RERANK_REQUEST)
    g.model = body["model"]
    limits.check_rerank(body, settings())
    return jsonify(handlers.rerank(store(), body))
