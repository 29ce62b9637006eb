"""Liveness, readiness, discovery, metrics and the OpenAPI document."""
from __future__ import annotations

from flask import Blueprint, Response, jsonify

from service.observability import metrics
from service.api import dataplane
from service.api.context import settings, store
from service.api.openapi import openapi_document

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz() -> Response:
    return jsonify({"status": "ok"})


@bp.get("/readyz")
def readyz() -> Response:
    return jsonify(dataplane.ready(store()))


@bp.get("/models")
def models() -> Response:
    return jsonify(dataplane.models(store(), settings()))


@bp.get("/metrics")
def prometheus() -> Response:
    body, content_type = metrics.exposition()
    return Response(body, content_type=content_type)


@bp.get("/openapi.json")
def openapi() -> Response:
    return jsonify(openapi_document())
