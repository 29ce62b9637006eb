"""Per-request plumbing: request IDs and the optional bearer token (API.md, Conventions).

A caller's `X-Request-ID` is kept (one ID follows a request through a chatbot, an ingress and this
service), else one is made; it is echoed in the response and stamped on every log record. With
DIALSCORE_API_TOKEN set, every endpoint but the kubelet's probes (/healthz, /readyz, which carry no
credentials), the API page (/docs/) and the document it reads (/openapi.json) needs `Authorization: Bearer <token>`, compared in constant time; the variable may hold
several comma-separated tokens, so that a rotation reaches the pods before the clients.
"""
from __future__ import annotations

import hmac
import logging
from typing import Any

from flask import Flask, Response, g, jsonify, request
from opentelemetry import trace

from service.observability import metrics
from service.errors import REQUEST_ID_HEADER, Unauthorized, error_body, request_id
from service.store.readiness import PROBE_PATHS, V2_PROBE_PATHS

REQUEST_ID_ATTRIBUTE = "dialscore.request_id"
# Open without a token: the probes (v1's and the Open Inference Protocol's), and what a browser loads before its user can enter one.
OPEN_PATHS = PROBE_PATHS | V2_PROBE_PATHS | {"/openapi.json", "/docs"}
OPEN_PREFIX = "/docs/"

log = logging.getLogger(__name__)



def init_app(app: Flask) -> None:
    """Install the hooks; call before any other `before_request` so that 401s carry a request ID.

    Says once per process whether the token is required: Kubernetes mounts the token's Secret as
    optional, so a missing or misnamed Secret would otherwise open the service without a word."""
    if _configured_token(app):
        log.info("bearer token required on every endpoint but %s", ", ".join(sorted(OPEN_PATHS | {OPEN_PREFIX})))
    else:
        log.warning("no DIALSCORE_API_TOKEN: every endpoint is open to whoever can reach the port")
    app.before_request(_assign_request_id)
    app.before_request(_require_token)
    app.after_request(_echo_request_id)


def _assign_request_id() -> None:
    g.request_id = request_id(request.headers.get(REQUEST_ID_HEADER))
    trace.get_current_span().set_attribute(REQUEST_ID_ATTRIBUTE, g.request_id)  # the request's server span


def _echo_request_id(response: Response) -> Response:
    assigned = g.get("request_id")
    if assigned:
        response.headers[REQUEST_ID_HEADER] = assigned
    return response


def _configured_token(app: Flask) -> str:
    settings = app.config.get("SETTINGS")
    token = getattr(settings, "api_token", None) if settings is not None else None
    return token if token is not None else str(app.config.get("API_TOKEN", ""))


def _matches(offered: bytes, configured: str) -> bool:
    """Whether `offered` is one of the comma-separated configured tokens; every one is compared,
    each in constant time, so the timing says nothing about which one came close."""
    matched = False
    for token in configured.split(","):
        matched |= bool(token) and hmac.compare_digest(offered, token.encode())
    return matched


def _require_token() -> Any:
    from flask import current_app

    token = _configured_token(current_app)
    if not token or request.path in OPEN_PATHS or request.path.startswith(OPEN_PREFIX):
        return None
    scheme, _, offered = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer" and _matches(offered.strip().encode(), token):
        return None
    error = Unauthorized("This endpoint needs the header `Authorization: Bearer <token>` with the configured token.")
    metrics.ERRORS.labels(error.code).inc()  # answered here, not by the app's error handler
    response = jsonify(error_body(error, request.path))
    response.status_code = error.status
    response.headers["WWW-Authenticate"] = 'Bearer realm="dialscore"'
    return response
