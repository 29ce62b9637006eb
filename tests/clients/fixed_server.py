"""A loopback server that answers each path with a fixed JSON body: answers the real service never gives."""
from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Fixed(BaseHTTPRequestHandler):
    """Answers 200 with the JSON its server's `answers` holds for the path."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        payload = json.dumps(self.server.answers[self.path]).encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.do_GET()


@contextmanager
def answering(answers: dict[str, object]) -> Iterator[str]:
    """A loopback server answering each path in `answers` with 200 and that JSON."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Fixed)
    server.answers = answers  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
