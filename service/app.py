"""create_app: the Flask application factory that gunicorn and the tests use."""
from __future__ import annotations

import logging
import time
from typing import Any

from flask import Flask, Response, g, jsonify, request
from flask.json.provider import DefaultJSONProvider
from werkzeug.exceptions import HTTPException
from werkzeug.routing import WebsocketMismatch

from service.observability import metrics
from service.api import analysis, docs_page, health, inference_v2, middleware, scoring
from service.config import load_settings
from service.errors import (ANSWER_HEADERS, BadJson, BadRequest, error_body, MethodNotAllowed, NotFound, ServiceError,
                            TooLarge)
from service.store.model_store import init_store

log = logging.getLogger(__name__)


class ServiceFlask(Flask):
    """Flask, with OPTIONS answered 204 and no body: Flask's own answer is a 200 with an empty
    text/html body, and every body this service sends is JSON (API.md)."""

    def make_default_options_response(self) -> Response:
        response = super().make_default_options_response()
        response.headers["Allow"] = ", ".join(sorted(response.allow))  # werkzeug's: a set, in hash order
        response.status_code = 204
        response.headers.pop("Content-Type", None)
        return response


def create_app(config: dict[str, Any] | None = None) -> Flask:
    """Settings: defaults, then DIALSCORE_* environment variables, then `config` (tests)."""
    settings = load_settings(config)
    app = ServiceFlask(__name__)
    app.config["SETTINGS"] = settings
    # One byte over the limit: werkzeug stops reading a chunked body there silently, and load_body
    # refuses what is longer than the limit (service/api/body.py).
    app.config["MAX_CONTENT_LENGTH"] = settings.max_body_bytes + 1
    app.json = StrictJSONProvider(app)
    for blueprint in (health.bp, scoring.bp, analysis.bp, docs_page.bp, inference_v2.bp):
        app.register_blueprint(blueprint)
    middleware.init_app(app)  # first: request IDs and the token check precede everything else
    _install_error_handlers(app)
    _install_answer_headers(app)
    _install_request_metrics(app)
    init_store(app, background=not settings.load_sync)
    return app


class StrictJSONProvider(DefaultJSONProvider):
    """Flask's JSON with keys in the order the code writes them, and no NaN or Infinity.

    Python's json writes a non-finite float as `NaN`, which is not JSON: strict parsers reject the
    whole body and lenient ones hand the client a NaN score. The contract promises finite floats,
    so one that slips through must fail the request as a logged 500, never reach the client.
    """

    sort_keys = False

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        kwargs.setdefault("allow_nan", False)
        return super().dumps(obj, **kwargs)


def _error_response(error: ServiceError, headers: dict[str, str] | None = None) -> Response:
    metrics.ERRORS.labels(error.code).inc()
    response = jsonify(error_body(error, request.path))
    response.status_code = error.status
    for key, value in {**error.headers, **(headers or {})}.items():
        response.headers[key] = value
    return response


def _install_error_handlers(app: Flask) -> None:
    @app.errorhandler(ServiceError)
    def service_error(error: ServiceError) -> Response:
        return _error_response(error)

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException) -> Response:
        if error.code == 500:
            # Flask's own 500 for an exception raised outside the view (serialising a returned
            # dict, say); Flask has logged it. The contract's code for a bug is `internal`.
            original = getattr(error, "original_exception", None) or error
            return _error_response(_internal(original))
        if error.code == 404:
            return _error_response(NotFound(f"No endpoint {request.path}; see /openapi.json."))
        if error.code == 405:
            methods = sorted(error.valid_methods or [])  # type: ignore[attr-defined]  # werkzeug: a set, in hash order
            allowed = ", ".join(methods)
            return _error_response(MethodNotAllowed(f"{request.method} is not allowed on {request.path}; "
                                                    f"use {allowed}.", {"allowed": methods}),
                                   {"Allow": allowed})
        if error.code == 413:
            limit = app.config["SETTINGS"].max_body_bytes  # served, the front refuses it first (server/front.py)
            return _error_response(TooLarge(f"The body is over the {limit}-byte limit.", {"max_body_bytes": limit}))
        if isinstance(error, WebsocketMismatch):  # routing's 400 for `Upgrade: websocket`
            return _error_response(BadRequest("This service does not speak WebSocket; send the request without "
                                              "`Upgrade: websocket`."))
        if error.code == 400:
            return _error_response(BadJson("The request could not be read as JSON."))
        wrapped = ServiceError(error.description or "HTTP error")
        wrapped.status, wrapped.code = error.code or 500, (error.name or "error").lower().replace(" ", "_")
        return _error_response(wrapped)

    @app.errorhandler(Exception)
    def unexpected(error: Exception) -> Response:
        log.exception("internal error on %s %s", request.method, request.path)
        return _error_response(_internal(error))


def _internal(error: BaseException) -> ServiceError:
    """The 500 for a bug: names the exception's type, never its message (it may hold paths or data)."""
    return ServiceError("The service failed on this request; it is a bug, please report it.",
                        {"type": type(error).__name__})


def _rule_of_wrong_method(app: Flask, response: Response) -> str:
    """The route a 405 was sent to (matched again with a method it allows), else "unmatched".

    Routing leaves `url_rule` unset when only the method is wrong, but the path did match a route,
    so the label stays one of the app's own routes: a client cannot invent new series with it.
    """
    allowed = [m for m in response.allow if m not in ("HEAD", "OPTIONS")]
    if response.status_code != 405 or not allowed:
        return "unmatched"
    try:
        rule, _ = app.url_map.bind("").match(request.path, method=allowed[0], return_rule=True)
    except HTTPException:
        return "unmatched"
    return rule.rule


def _install_answer_headers(app: Flask) -> None:
    @app.after_request
    def no_sniffing_no_caching(response: Response) -> Response:
        for name, value in ANSWER_HEADERS.items():  # errors.ANSWER_HEADERS says why
            response.headers.setdefault(name, value)
        return response


def _install_request_metrics(app: Flask) -> None:
    @app.before_request
    def start_timer() -> None:
        g.started = time.perf_counter()
        metrics.label_request_model("")

    @app.after_request
    def record(response: Response) -> Response:
        endpoint = request.url_rule.rule if request.url_rule else _rule_of_wrong_method(app, response)
        metrics.REQUESTS.labels(endpoint, metrics.method_label(request.method), str(response.status_code)).inc()
        started = g.get("started")
        if started is not None:
            metrics.LATENCY.labels(endpoint, metrics.request_model()).observe(time.perf_counter() - started)
        return response
