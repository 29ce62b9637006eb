"""OpenTelemetry tracing: off unless the standard OTEL_* variables ask for it; a provider per worker.

`OTEL_EXPORTER_OTLP_ENDPOINT` (or `..._TRACES_ENDPOINT`) or `OTEL_TRACES_EXPORTER` (`otlp`, `console`)
turns it on; the OTLP/HTTP exporter and the resource read the other OTEL_* variables themselves
(service name, headers, batch delays). The provider is made in each worker after gunicorn forks, since
the batch processor's thread does not survive a fork. Off, `span` is the API's no-op: no SDK is
imported and nothing is recorded.
"""
from __future__ import annotations

import atexit
import functools
import logging
import os
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

from opentelemetry import trace

log = logging.getLogger(__name__)

SWITCHES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER")
EXPORTERS = ("otlp", "console")
DEFAULT_SERVICE_NAME = "dialscore"
TRACER = trace.get_tracer("dialscore")  # a proxy: records once a provider is set, a no-op before
_initialised_in: int | None = None  # the pid whose provider is set
F = TypeVar("F", bound=Callable[..., Any])
_OFF = nullcontext(trace.INVALID_SPAN)
QUERY_ATTRIBUTES = frozenset({"http.url", "http.target", "url.full", "url.query"})  # both HTTP conventions'


def wanted(environ: Mapping[str, str]) -> str | None:
    """The exporter the environment asks for (`otlp` or `console`), or None: tracing stays off."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return None
    if exporter:
        return exporter
    return "otlp" if any(environ.get(name, "").strip() for name in SWITCHES[:2]) else None


def init_tracing(environ: Mapping[str, str] = os.environ) -> bool:
    """Set this process's tracer provider where the environment asks for one; whether tracing is on."""
    global _initialised_in
    exporter_name = wanted(environ)
    if exporter_name is None:
        return False
    if _initialised_in == os.getpid():
        return True
    if exporter_name not in EXPORTERS:
        log.warning("OTEL_TRACES_EXPORTER=%s is not one of %s: tracing stays off", exporter_name, ", ".join(EXPORTERS))
        return False
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

    if exporter_name == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter: Any = OTLPSpanExporter()
    else:
        exporter = ConsoleSpanExporter()
    resource = Resource.create({SERVICE_NAME: environ.get("OTEL_SERVICE_NAME", DEFAULT_SERVICE_NAME)})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    atexit.register(provider.shutdown)  # the batch's last spans leave with the worker
    _initialised_in = os.getpid()
    log.info("tracing on: %s exporter, service %s", exporter_name, resource.attributes.get(SERVICE_NAME))
    return True


def server_spans(app: Any, untraced_paths: str, name_of: Callable[[dict], str]) -> Any:
    """`app` (ASGI) inside a server span per request, continuing the caller's W3C traceparent, where
    OTEL_* asks for tracing; None where it does not. `untraced_paths`: comma-separated (the probes).
    A span is named `name_of(scope)` (method and route: `POST /score`), never by the path a client spells,
    which would make span names without bound; its URLs keep query names, not values, as the logs do."""
    if not init_tracing():
        return None
    from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware

    from service.observability.logs import query_names, without_query_values

    def named(scope: dict) -> tuple[str, dict]:
        return name_of(scope), {}

    def without_values(span: trace.Span, scope: dict) -> None:
        given = getattr(span, "attributes", None) or {}
        for key in QUERY_ATTRIBUTES & set(given):
            value = str(given[key])
            span.set_attribute(key, query_names(value) if key == "url.query" else without_query_values(value))

    return OpenTelemetryMiddleware(app, excluded_urls=untraced_paths, exclude_spans=["receive", "send"],
                                   default_span_details=named, server_request_hook=without_values)


def traced(name: str) -> Callable[[F], F]:
    """A decorator: the function runs inside a span called `name`."""
    def wrap(function: F) -> F:
        @functools.wraps(function)
        def inner(*args: Any, **kwargs: Any) -> Any:
            with span(name):
                return function(*args, **kwargs)
        return inner  # type: ignore[return-value]
    return wrap


def record(name: str, started: float, **attributes: Any) -> None:
    """A span that began at `started` (time.monotonic()) and ends now, a child of the current span:
    for a wait measured before anything could run inside it (a request's admission). None where the
    request is not traced (the probes): it would be a root span of its own."""
    if _initialised_in is None or not trace.get_current_span().is_recording():
        return
    begun = time.time_ns() - int((time.monotonic() - started) * 1e9)
    TRACER.start_span(name, start_time=begun, attributes=attributes).end()


def span(name: str, **attributes: Any) -> AbstractContextManager[trace.Span]:
    """A child of the current span (the request's), with `attributes` (None values left out). Off, a
    shared no-op: a request's few dozen spans then cost nothing measurable."""
    if _initialised_in is None:
        return _OFF
    return TRACER.start_as_current_span(name, attributes={k: v for k, v in attributes.items() if v is not None})
