"""Answers the worker writes to a socket itself, in the contract's JSON: gunicorn's own errors
(write_contract_error) and the refusals and 408s of the event loop (write_answer)."""
from __future__ import annotations

import json
import socket
from http import HTTPStatus
from typing import Any

from gunicorn import util

from service.errors import ANSWER_HEADERS, REQUEST_ID_HEADER, ServiceError

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




def answer_bytes(error: ServiceError, request_id_value: str) -> bytes:
    """A whole HTTP/1.1 answer for `error` that closes the connection."""
    payload = json.dumps(error.body()).encode("utf-8")
    headers = {"Connection": "close", "Content-Type": "application/json", "Content-Length": str(len(payload)),
               **ANSWER_HEADERS, **error.headers, REQUEST_ID_HEADER: request_id_value}
    head = f"HTTP/1.1 {error.status} {HTTPStatus(error.status).phrase}\r\n" + "".join(
        f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
    return head.encode("latin-1") + payload


def write_answer(sock: socket.socket, error: ServiceError, request_id_value: str) -> bool:
    """Write `error` without blocking the loop and end the connection; False where the client is gone
    or its socket cannot take the answer at once (a few hundred bytes: only a client that reads nothing)."""
    from service import metrics  # not at import: see write_contract_error

    metrics.ERRORS.labels(error.code).inc()
    data = answer_bytes(error, request_id_value)
    try:
        sent = sock.send(data)
        if sent == len(data):
            sock.shutdown(socket.SHUT_WR)
            return True
    except OSError:
        pass
    return False
