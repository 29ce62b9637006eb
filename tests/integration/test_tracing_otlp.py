"""Tracing against a real OTLP/HTTP receiver: a live gunicorn exports the spans of one /rerank, which
continue the bot's W3C traceparent, carry the request ID, and form the tree server -> admission,
data plane -> model -> encoder -> ONNX runs; heads run as ONNX row runs under the model."""
from __future__ import annotations

import http.client
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import copy_store
from tests.live_server import running_server

trace_service = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
BOT_SPAN_ID = "00f067aa0ba902b7"
WAIT_S = 30


class Receiver(ThreadingHTTPServer):
    """An OTLP/HTTP trace receiver: decodes each export (protobuf) into a list of plain span dicts."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.spans: list[dict] = []
        self.lock = threading.Lock()

    def wait_for(self, name: str) -> list[dict]:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            with self.lock:
                if any(s["name"] == name for s in self.spans):
                    return list(self.spans)
            time.sleep(0.1)
        raise AssertionError(f"no span {name!r} in {WAIT_S} s: {[s['name'] for s in self.spans]}")


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        assert self.path == "/v1/traces" and self.headers["Content-Type"] == "application/x-protobuf"
        request = trace_service.ExportTraceServiceRequest.FromString(body)
        spans = []
        for resource_spans in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource_spans.resource.attributes}["service.name"]
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    spans.append({"name": span.name, "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                                  "parent": span.parent_span_id.hex(), "service": service,
                                  "attributes": {a.key: _value(a.value) for a in span.attributes}})
        with self.server.lock:  # type: ignore[attr-defined]
            self.server.spans.extend(spans)  # type: ignore[attr-defined]
        answer = trace_service.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: object) -> None:
        pass


def _value(value) -> object:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


@pytest.fixture(scope="module")
def receiver():
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()


def test_one_rerank_exports_its_span_tree_continuing_the_bots_trace(receiver, tmp_path):
    store = copy_store(tmp_path / "model_store", ("unref-minilm",))
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{receiver.server_address[1]}",
           "OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_SERVICE_NAME": "dialscore-under-test"}
    with running_server(store, env, workers=1) as server:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        body = {"model": "unref-minilm", "context": ["how was your weekend?"],
                "candidates": ["i don't know.", "great, i went hiking with my sister!", "fine."]}
        conn.request("POST", "/rerank", json.dumps(body), {
            "Content-Type": "application/json", "X-Request-ID": "bot-req-42",
            "traceparent": f"00-{TRACE_ID}-{BOT_SPAN_ID}-01"})
        answer = conn.getresponse()
        assert answer.status == 200, answer.read()
        answer.read()
        conn.close()
        spans = receiver.wait_for("POST /rerank")
        time.sleep(0.5)  # the batch may still hold the request's last child spans
        spans = [s for s in receiver.spans if s["trace_id"] == TRACE_ID]
    by_id = {s["span_id"]: s for s in spans}
    [root] = [s for s in spans if s["name"] == "POST /rerank"]
    assert root["parent"] == BOT_SPAN_ID and root["service"] == "dialscore-under-test"
    assert root["attributes"]["dialscore.request_id"] == "bot-req-42"

    def parent_name(span: dict) -> str:
        return by_id[span["parent"]]["name"] if span["parent"] in by_id else "?"

    names = [s["name"] for s in spans]
    for name in ("admission", "dataplane.rerank", "model", "encoder", "onnx.run", "onnx.rows"):
        assert name in names, names
    [admission] = [s for s in spans if s["name"] == "admission"]
    assert admission["parent"] == root["span_id"] and admission["attributes"]["lane"] == "scoring"
    [plane] = [s for s in spans if s["name"] == "dataplane.rerank"]
    assert _ancestors(plane, by_id)[-1] == root["span_id"]
    [model] = [s for s in spans if s["name"] == "model"]
    assert parent_name(model) == "dataplane.rerank" and model["attributes"]["model"] == "unref-minilm"
    assert {parent_name(s) for s in spans if s["name"] == "encoder"} == {"model"}
    assert {parent_name(s) for s in spans if s["name"] == "onnx.run"} == {"encoder"}  # across the encoder's threads
    assert {parent_name(s) for s in spans if s["name"] == "onnx.rows"} == {"model"}  # the heads


def _ancestors(span: dict, by_id: dict) -> list[str]:
    chain = []
    while span["parent"] in by_id:
        chain.append(span["parent"])
        span = by_id[span["parent"]]
    return chain
