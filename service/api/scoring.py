"""POST /score and POST /rerank."""
from __future__ import annotations

from flask import Blueprint, g, jsonify

from service.api import dataplane, limits, settings, store
from service.api.body import load_body
from service.api.schemas import RERANK_REQUEST, SCORE_REQUEST

bp = Blueprint("scoring", __name__)


@bp.post("/score")
def score():
    body = load_body(SCORE_REQUEST)
    names = body.get("models") or [body["model"]]
    g.model = _metrics_label(names)
    over = limits.check_items(body["items"], settings(), check_reference=_reads_reference(names),
                              skip_items=body["on_invalid"] == "skip")
    return jsonify(dataplane.score(store(), body, settings(), over))


@bp.post("/rerank")
def rerank():
    body = load_body(RERANK_REQUEST)
    g.model = _metrics_label([body["model"]])
    over = limits.check_rerank(body, settings(), check_reference=_reads_reference([body["model"]]),
                               skip_candidates=body["on_invalid"] == "skip")
    return jsonify(dataplane.rerank(store(), body, settings(), over))


def _metrics_label(names: list[str]) -> str:
    """The latency histogram's `model` label: a served model's name, "several", or "" otherwise.

    Client-chosen strings never become label values: every unknown name would add a series for
    the life of the process (and one that is not valid Unicode broke GET /metrics).
    """
    served = [name for name in dict.fromkeys(names) if store().get(name) is not None]
    if len(served) > 1:
        return "several"
    return served[0] if served else ""


def _reads_reference(names: list[str]) -> bool:
    """Whether a requested model reads `reference`: the contract has the others ignore it, so its
    size limit does not apply to them. Names not (yet) served count as reading it; they fail later."""
    scorers = [store().get(name) for name in names]
    return any(scorer is None or scorer.reads_reference for scorer in scorers)
