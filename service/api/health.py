"""Liveness, readiness, discovery, metrics and the OpenAPI document."""
from __future__ import annotations

from flask import Blueprint, Response, jsonify

from service import metrics
from service.api import dataplane, settings, store
from service.api.openapi import openapi_document
from service.errors import NotReady

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz():
    return jsonify({"status": "ok"})


@bp.get("/readyz")
def readyz():
    ready, details = dataplane.readiness(store(), settings())
    if not ready:
        if "failed" in details:
            names = ", ".join(details["failed"])
            raise NotReady(f"Not ready: {names} failed to load; see details and the log.", details)
        if "workers" in details:
            raise NotReady(f"Not ready: {details['workers_ready']} of {details['workers']} workers have loaded "
                           "their models.", details)
        raise NotReady("Not ready: models are still loading.", details)
    return jsonify({"status": "ready", **details})


@bp.get("/models")
def models():
    s = store()
    return jsonify({"models": s.describe(), "limits": settings().limits(),
                    "failed": dict(sorted(s.public_failures.items())), "loading": not s.loaded})


@bp.get("/metrics")
def prometheus():
    body, content_type = metrics.exposition()
    return Response(body, content_type=content_type)


@bp.get("/openapi.json")
def openapi():
    return jsonify(openapi_document())
