"""A reverse proxy on a loopback port, in front of a real server as an ingress would be.

It forwards each request to its upstream as it is; it answers `busy` requests with 503 and a
`Retry-After` header first (a deployment draining its pods; with `refusal`, the service's own JSON error of
that code, its details `refusal_details`), and answers an HTML 502, as nginx does, when the upstream cannot
be reached. `arrivals` records when each request came (time.monotonic()), `received` its headers,
`exchanges` its method, path and the status answered.
"""
from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

BAD_GATEWAY = b"<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center></body></html>"
UNAVAILABLE = b"<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>"


class Proxy(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream_port: int) -> None:
        super().__init__(("127.0.0.1", 0), _Forward)
        self.upstream_port = upstream_port
        self.busy = 0  # requests still to answer with 503
        self.retry_after: str | None = None  # the header sent with those 503s
        self.refusal: str | None = None  # their contract error code; None: a proxy's HTML page
        self.refusal_details: dict[str, object] = {}  # the `details` of that error
        self.delay = 0.0  # seconds each forwarded request is held first (a slow upstream)
        self.arrivals: list[float] = []
        self.received: list[dict[str, str]] = []
        self.exchanges: list[tuple[str, str, int]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Forward(BaseHTTPRequestHandler):
    server: Proxy
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # quiet: pytest shows the failures
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:
            self.server.arrivals.append(time.monotonic())
            self.server.received.append(dict(self.headers.items()))
            busy = self.server.busy > 0
            self.server.busy -= busy
        if busy:
            extra = {"Retry-After": self.server.retry_after} if self.server.retry_after else {}
            if self.server.refusal is None:
                return self._answer(503, "text/html", UNAVAILABLE, extra)
            error = {"code": self.server.refusal, "message": "Refused by the test's proxy.",
                     "details": self.server.refusal_details}
            return self._answer(503, "application/json", json.dumps({"error": error}).encode(), extra)
        time.sleep(self.server.delay)
        upstream = http.client.HTTPConnection("127.0.0.1", self.server.upstream_port, timeout=60)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
            upstream.request(self.command, self.path, body=body or None, headers=headers)
            answer = upstream.getresponse()
            payload = answer.read()
        except OSError:
            return self._answer(502, "text/html", BAD_GATEWAY, {})
        finally:
            upstream.close()
        self._answer(answer.status, answer.getheader("Content-Type") or "application/octet-stream", payload, {})

    def _answer(self, status: int, content_type: str, payload: bytes, extra: dict[str, str]) -> None:
        with self.server.lock:
            self.server.exchanges.append((self.command, self.path, status))
        self.send_response(status)
        for name, value in {"Content-Type": content_type, "Content-Length": str(len(payload)), **extra}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


@contextmanager
def proxy(upstream_port: int) -> Iterator[Proxy]:
    """A running proxy to `upstream_port` on 127.0.0.1, shut down afterwards."""
    server = Proxy(upstream_port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
