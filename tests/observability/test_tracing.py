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
