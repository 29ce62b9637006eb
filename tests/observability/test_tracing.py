"""When tracing is on: only where the standard OTEL_* variables ask for it, with the exporters named."""
from __future__ import annotations

import pytest

from service.observability import tracing


@pytest.mark.parametrize("environ,exporter", [
    ({}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "otlp"),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, "otlp"),
    ({"OTEL_TRACES_EXPORTER": "console"}, "console"),
    ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, None),
    ({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, None),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, None),
])
def test_tracing_is_on_only_where_the_environment_asks(environ, exporter):
    assert tracing.wanted(environ) == exporter


def test_an_exporter_not_shipped_leaves_tracing_off():
    assert tracing.init_tracing({"OTEL_TRACES_EXPORTER": "zipkin"}) is False


def test_off_a_span_records_nothing():
    with tracing.span("anything", rows=3) as span:
        assert not span.is_recording()


TRACED_FRONT = """
import asyncio, sys
from opentelemetry import trace
from service.app import create_app
from service.config import load_server_settings
from service.server.front import Front
from tests.asgi_client import Client

front = Front(create_app({"model_store": sys.argv[1], "load_sync": True}), load_server_settings())
for method, path, query, body in [("GET", "/healthz", b"", b""), ("GET", "/models", b"token=SECRET1&x=1", b""),
                                  ("POST", "/score\\nforged", b"api_key=SECRET2", b"{}"), ("GET", "/zz19313", b"", b""),
                                  ("POST", "/score", b"", b'{"model": "length", "items": [{"context": ["a"], "response": "b"}]}')]:
    client = Client(method, path, body)
    scope = {**client.scope(), "query_string": query}
    asyncio.run(front(scope, client.receive, client.send))
trace.get_tracer_provider().shutdown()  # the batch's spans leave now
"""


def test_traced_requests_are_named_by_route_keep_no_query_values_and_probes_leave_no_span(baseline_store, tmp_path):
    """Span names came from the path a client spells (unbounded, and without a token), URLs carried query
    values the logs drop, and each probe left a root `admission` span."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run([sys.executable, "-c", TRACED_FRONT, str(baseline_store)], cwd=repo, capture_output=True,
                          text=True, timeout=120, env={**env, "OTEL_TRACES_EXPORTER": "console",
                                                       "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    spans, text, at = [], done.stdout, 0
    while (at := text.find("{", at)) >= 0:
        span, at = json.JSONDecoder().raw_decode(text, at)
        spans.append(span)
    servers = sorted(s["name"] for s in spans if s["kind"] == "SpanKind.SERVER")
    assert servers == ["GET /models", "GET unmatched", "POST /score", "POST unmatched"], servers
    assert "SECRET" not in done.stdout and "forged" not in servers
    assert all(s["parent_id"] for s in spans if s["name"] == "admission")  # no probe's root span
    assert sum(s["name"] == "admission" for s in spans) == 4
