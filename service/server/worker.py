"""The gunicorn worker: gthread, with gunicorn's own error answers in the contract's JSON and a
deadline for each request to arrive whole (ContractErrorThreadWorker)."""
from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http import HTTPStatus
from typing import Any

from gunicorn import util
from gunicorn.http.body import ChunkedReader, EOFReader, LengthReader
from gunicorn.workers.gthread import ThreadWorker

from service.config import load_server_settings
from service.errors import ANSWER_HEADERS, RequestTimeout

# Contract codes for the statuses gunicorn answers itself. 414 and 431 are limits (gunicorn's
# `limit_request_*` settings), so they share the contract's limit code.
CODES = {400: "bad_request", 403: "forbidden", 414: "too_large", 417: "expectation_failed",
         431: "too_large", 500: "internal", 501: "not_implemented"}

# What a person can do about each; gunicorn's own text goes into `details.reason`.
MESSAGES = {
    400: "The request is not valid HTTP/1.1 (request line, header or chunked body); send a well-formed request.",
    403: "The request was refused before it reached the service.",
    414: "The request line is longer than the server accepts; send inputs in the JSON body, not the URL.",
    417: "The Expect header names an expectation the server does not meet; send the request without it.",
    431: "The request's headers are too many or too long; send fewer or shorter headers.",
    500: "The server failed while reading the request; this is a bug, please report it.",
    501: "The request's Transfer-Encoding is not supported; send the body with Content-Length or chunked.",
}


def error_body(status: int, reason: str) -> dict[str, Any]:
    """The contract's error object for a status gunicorn answered; `reason` is gunicorn's text."""
    code = CODES.get(status, "bad_request" if 400 <= status < 500 else "internal")
    message = MESSAGES.get(status, "The request could not be read.")
    details = {"reason": reason} if reason else {}
    return {"error": {"code": code, "message": message, "details": details}}


def write_contract_error(sock: socket.socket, status_int: int, reason: str, mesg: str,
                         body: dict[str, Any] | None = None) -> None:
    """Drop-in for `gunicorn.util.write_error`: the same status line, a JSON body (`body`, else one
    made from the status and gunicorn's text), then close."""
    # Imported here, not at the top: the master imports this module, and must not fix the metrics'
    # multiprocess mode before gunicorn.conf.py sets PROMETHEUS_MULTIPROC_DIR.
    from service import metrics

    body = body or error_body(status_int, mesg)
    metrics.ERRORS.labels(body["error"]["code"]).inc()
    payload = json.dumps(body).encode("utf-8")
    if reason == "Bad Request" and status_int != 400:  # gunicorn's phrase for its 501 (unknown Transfer-Encoding)
        reason = HTTPStatus(status_int).phrase
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
            + "".join(f"{name}: {value}\r\n" for name, value in ANSWER_HEADERS.items()) + "\r\n")
    # gunicorn's reason phrases are ASCII; latin-1 is what it writes its own status lines in.
    util.write_nonblock(sock, head.encode("latin-1") + payload)


class ReadDeadlineSocket:
    """A client socket whose reads share one deadline while armed; everything else is the socket's.

    Armed by the worker for each request it takes up and disarmed when that request is done, so
    the app's time between reads, keep-alive waits and the response's writes are not counted.
    """

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._deadline: float | None = None
        self._seconds = 0.0
        self.request: Any = None  # gunicorn's Request being read, told to close once its body stalls

    def arm(self, seconds: float) -> None:
        self._seconds = seconds
        self._deadline = time.monotonic() + seconds

    def disarm(self) -> None:
        self._deadline = None

    @contextmanager
    def draining(self, seconds: float) -> Iterator[None]:
        """A block under a short deadline of its own; the request's deadline is back after it."""
        saved = (self._deadline, self._seconds)
        self.arm(seconds)
        try:
            yield
        finally:
            self._deadline, self._seconds = saved

    def _timed_out(self) -> RequestTimeout:
        # The rest of the body is never read, so the connection cannot carry another request: the
        # app's 408 must say `Connection: close` (it said keep-alive and the server then closed).
        if self.request is not None:
            self.request.must_close = True
        return RequestTimeout(self._seconds)

    def _before_read(self) -> None:
        if self._deadline is not None:
            remaining = self._deadline - time.monotonic()
            if remaining <= 0:
                raise self._timed_out()
            self._sock.settimeout(remaining)

    def _read(self, method: str, *args: Any) -> Any:
        self._before_read()
        try:
            return getattr(self._sock, method)(*args)
        except TimeoutError:
            if self._deadline is None:
                raise
            raise self._timed_out() from None
        finally:
            if self._deadline is not None:
                self._sock.settimeout(None)  # writes in between are not held to the read deadline

    def recv(self, *args: Any) -> bytes:
        return self._read("recv", *args)

    def recv_into(self, *args: Any) -> int:
        return self._read("recv_into", *args)

    def fileno(self) -> int:
        return self._sock.fileno()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


DRAIN_BYTES = 64 * 1024  # the most of an unread body read so that the connection can be kept
DRAIN_SECONDS = 0.05  # for what the client has already sent: it is in the socket's buffer


def body_unread(body: Any) -> bool:
    """Whether the app left part of the request body unread (gunicorn's three body readers)."""
    reader = getattr(body, "reader", None)
    if isinstance(reader, LengthReader):
        return reader.length > 0
    if isinstance(reader, ChunkedReader):
        return reader.parser is not None  # set to None once the last chunk was read
    if isinstance(reader, EOFReader):
        return not reader.finished
    return False


def drain(body: Any, sock: Any) -> bool:
    """Read the rest of a small body that has already arrived; True when the body was read to its end."""
    reader = getattr(body, "reader", None)
    if not isinstance(sock, ReadDeadlineSocket) or (isinstance(reader, LengthReader) and reader.length > DRAIN_BYTES):
        return False
    try:
        with sock.draining(DRAIN_SECONDS):
            read = 0
            while read <= DRAIN_BYTES:
                chunk = body.read(8192)
                if not chunk:
                    return True
                read += len(chunk)
    except Exception:  # noqa: BLE001 - a stall (RequestTimeout), a bad chunk, a reset: the connection ends
        return False
    return False


def read_timeout() -> float:
    """DIALSCORE_READ_TIMEOUT (seconds, default 10): 1 MiB, the body limit, in 10 s is 100 KB/s."""
    return load_server_settings().read_timeout


class ContractErrorThreadWorker(ThreadWorker):
    """gunicorn's gthread worker, with two changes.

    Its own answers (a malformed request line or header, 414, 431, 501) are the contract's JSON,
    not gunicorn's HTML page (`gunicorn.util.write_error`, which has no setting: benoitc/gunicorn#993),
    since a client parses every error as `{"error": {...}}`; status, reason and logging stay
    gunicorn's, and each is counted in `dialscore_errors_total`. The replacement is installed in the
    worker process only, where `gunicorn.workers.base` is the one caller of `write_error`.

    A request has DIALSCORE_READ_TIMEOUT seconds, from when a thread takes it up, to arrive whole,
    else 408 and the connection closes: gthread reads with blocking calls and no deadline, so a few
    slow clients would hold every thread, /healthz included (ReadDeadlineSocket). The deadline bounds
    the harm of one slow client; a pod open to untrusted clients still wants a buffering proxy in
    front (docs/deploy.md).
    """

    def init_process(self) -> None:
        util.write_error = write_contract_error
        self.read_timeout = read_timeout()
        super().init_process()

    def handle(self, conn: Any) -> Any:
        if not self.cfg.is_ssl and not isinstance(conn.sock, ReadDeadlineSocket):
            conn.sock = ReadDeadlineSocket(conn.sock)  # TLS would wrap it again in conn.init(); none is served
        armed = isinstance(conn.sock, ReadDeadlineSocket)
        if armed:
            conn.sock.arm(self.read_timeout)
        try:
            return super().handle(conn)
        finally:
            if armed:
                conn.sock.disarm()

    def load_wsgi(self) -> None:
        super().load_wsgi()
        app = self.wsgi

        def close_if_body_unread(environ: dict[str, Any], start_response: Any) -> Any:
            # An answer given without reading the whole body (a 401, a 404, a GET with a body) leaves
            # gunicorn to drain the rest before the next request; a client that never sends it would get
            # an unasked 408 at the read deadline, which a pipelining client takes for its next answer.
            # A small rest that has already arrived is read here and the connection kept; otherwise the
            # answer says `Connection: close` (before its headers go out) and is the last.
            result = app(environ, start_response)
            body, sock = environ.get("wsgi.input"), environ.get("gunicorn.socket")
            if body_unread(body) and not drain(body, sock):
                request = getattr(sock, "request", None)
                if request is not None:
                    request.must_close = True
            return result

        self.wsgi = close_if_body_unread

    def handle_request(self, req: Any, conn: Any) -> Any:
        if isinstance(conn.sock, ReadDeadlineSocket):
            conn.sock.request = req
        try:
            return super().handle_request(req, conn)
        finally:
            if isinstance(conn.sock, ReadDeadlineSocket):
                conn.sock.request = None

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        # RequestTimeout is not an OSError, which gunicorn would log as a socket failure with a traceback:
        # it reaches here from the header read; from the body read the app answers it (service/api).
        if isinstance(exc, RequestTimeout):
            self.log.info("request not received within %.0f s from %s; answered 408", self.read_timeout,
                          addr[0] if addr else "?")
            try:
                write_contract_error(client, exc.status, "Request Timeout", "", exc.body())  # as the app's 408
                # gunicorn then closes "gracefully", lingering up to 2 s in the worker's main loop for
                # the client to close first; a client that stalled would not, so both sides end here.
                client.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        super().handle_error(req, client, addr, exc)
