"""The gunicorn worker: gthread, with gunicorn's own error answers in the contract's JSON.

gunicorn answers some requests before the app sees them: a malformed request line or header,
a request line over `limit_request_line` (414), headers over `limit_request_fields` or
`limit_request_field_size` (431), an unsupported transfer coding (501). Its answer is an HTML page
(`gunicorn.util.write_error`), and gunicorn has no setting for it (benoitc/gunicorn#993), so a
client that parses every error as `{"error": {...}}` (API.md, Conventions) broke on exactly the
requests it most needs told what was wrong. This worker writes those answers in the contract's
format, keeps gunicorn's status, reason and logging, and counts them in `dialscore_errors_total`.

The replacement is installed in the worker process only, where `gunicorn.workers.base` is the one
caller of `write_error`.
"""
from __future__ import annotations

import json
import socket
from typing import Any

from gunicorn import util
from gunicorn.workers.gthread import ThreadWorker

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


def write_contract_error(sock: socket.socket, status_int: int, reason: str, mesg: str) -> None:
    """Drop-in for `gunicorn.util.write_error`: the same status line, a JSON body, then close."""
    from service import metrics  # imported late: the worker sets PROMETHEUS_MULTIPROC_DIR first

    body = error_body(status_int, mesg)
    metrics.ERRORS.labels(body["error"]["code"]).inc()
    payload = json.dumps(body).encode("utf-8")
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n")
    # gunicorn's reason phrases are ASCII; latin-1 is what it writes its own status lines in.
    util.write_nonblock(sock, head.encode("latin-1") + payload)


class ContractErrorThreadWorker(ThreadWorker):
    """gunicorn's gthread worker whose pre-app error answers follow the contract (module docstring)."""

    def init_process(self) -> None:
        util.write_error = write_contract_error
        super().init_process()
