"""Errors carry their HTTP status and contract code; one handler writes `{"error": {...}}`."""
from __future__ import annotations

import json
import re
import uuid
from typing import Any


class ServiceError(Exception):
    """Base: 500 `internal`. Subclasses name their status and code (API.md, Conventions)."""

    status = 500
    code = "internal"

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        message = message if len(message) <= 10 * MAX_ECHO else message[: 10 * MAX_ECHO] + "..."
        super().__init__(message)
        self.message = message
        self.details = _bounded(details or {})
        self.headers: dict[str, str] = {}  # sent with the JSON answer (app.py)

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


# Open Inference Protocol v2 paths (service/api/inference_v2.py) answer errors in that protocol's form.
V2_PREFIX = "/v2"


def error_body(error: ServiceError, path: str) -> dict[str, Any]:
    """The error as the path's protocol writes it: the contract's object, or v2's `{"error": message}`."""
    if path == V2_PREFIX or path.startswith(V2_PREFIX + "/"):
        where = "; ".join(f"{field}: {_plain(problem)}" for field, problem in list(error.details.items())[:3])
        return {"error": f"{error.message} ({where})" if where else error.message}
    return error.body()


def _plain(value: Any) -> str:
    """A detail as a sentence reads it: a list as its items joined, not Python's repr of it; a message's
    full stop dropped, a name's own final dot (a model named "..") kept."""
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    text = str(value)
    return text.removesuffix(".") if " " in text else text


# Every answer, the app's and the server's own errors (service/server/) alike, is JSON (or the
# metrics text) about one request: no browser may read it as another type, no cache may keep it.
ANSWER_HEADERS = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
# Every answer echoes the caller's request ID where it is short and printable (it cannot forge log
# lines or headers), else a new one: the app's (api/middleware.py) and the worker's own (server/front.py).
REQUEST_ID_HEADER = "X-Request-ID"
VALID_REQUEST_ID = re.compile(r"[A-Za-z0-9._:/+=@-]{1,128}")


def contract_answer(error: ServiceError, request_id_value: str, path: str = "") -> tuple[list[tuple[bytes, bytes]], bytes]:
    """The headers and JSON body of the server's own answer for `error` (the app's: app.py), in the form
    of the protocol `path` belongs to (error_body)."""
    payload = json.dumps(error_body(error, path)).encode()
    headers = {"content-type": "application/json", "content-length": str(len(payload)), **ANSWER_HEADERS,
               **error.headers, REQUEST_ID_HEADER: request_id_value}
    return [(name.lower().encode(), value.encode("latin-1")) for name, value in headers.items()], payload


def request_id(offered: str | None) -> str:
    """The caller's request ID where VALID_REQUEST_ID takes it, else a new one."""
    return offered if offered and VALID_REQUEST_ID.fullmatch(offered) else uuid.uuid4().hex

MAX_DETAILS = 100  # entries of `details` an error answers with
MAX_ECHO = 200  # characters of a client's string (a field path, a model name) echoed back


def _clip(value: Any) -> Any:
    return value if not isinstance(value, str) or len(value) <= MAX_ECHO else value[:MAX_ECHO] + "..."


def _bounded(details: dict[str, Any]) -> dict[str, Any]:
    """At most MAX_DETAILS entries, long strings cut, so an error is never larger than the request
    deserves (90,000 unknown keys fit in a 1 MB body; a model name may be 100 KB)."""
    kept = {_clip(k): _clip(v) for k, v in list(details.items())[:MAX_DETAILS]}
    if len(details) > MAX_DETAILS:
        kept["more"] = f"{len(details) - MAX_DETAILS} more not shown; fix these first."
    return kept


class FieldsError(ValueError):
    """Input the schema cannot catch, by field: `.fields` maps paths such as 'human.3' or
    'ratings.3.scores.fun' to a message; str() is field_summary. The HTTP layer turns it into a
    422 with the fields as details; the command line prints them all."""

    def __init__(self, fields: dict[str, str]) -> None:
        super().__init__(field_summary(fields))
        self.fields = fields


def field_summary(fields: dict[str, str]) -> str:
    """One sentence for `message` when `details` holds the field errors: the field itself where there
    is one, else their count and the first: joined, 300 out-of-scale ratings made one message too
    long to read, cut off mid-word."""
    if len(fields) == 1:
        [(path, text)] = fields.items()
        return f"{_clip(path)}: {_clip(text)}"
    path, text = next(iter(fields.items()))
    return f"{len(fields)} fields are invalid (see details); the first, {_clip(path)}: {_clip(text)}"


class BadJson(ServiceError):
    """400: the body is not JSON, or not a JSON object."""

    status, code = 400, "bad_json"


class Unauthorized(ServiceError):
    """401: a token is configured and the request lacks it or carries another."""

    status, code = 401, "unauthorized"


class UnknownModel(ServiceError):
    """404: the named model is not served here (no such model, or one needing a component not built here); a model
    that failed to load is NotReady (503)."""

    status, code = 404, "unknown_model"


class NotFound(ServiceError):
    """404: no such endpoint."""

    status, code = 404, "not_found"


class MethodNotAllowed(ServiceError):
    """405: the endpoint exists but not for this method."""

    status, code = 405, "method_not_allowed"


class RequestTimeout(ServiceError):
    """408: the request did not arrive whole within DIALSCORE_READ_TIMEOUT (service/server/worker.py)."""

    status, code = 408, "request_timeout"

    def __init__(self, seconds: float) -> None:
        super().__init__(f"The request did not arrive whole within {seconds:g} s (the server's read timeout); "
                         "send it without pausing.", {"read_timeout_s": seconds})


class TooLarge(ServiceError):
    """413: body, items, candidates, turns or characters over the configured limits."""

    status, code = 413, "too_large"


class UriTooLong(TooLarge):
    """414 `too_large`: the request line is over DIALSCORE_MAX_REQUEST_LINE."""

    status = 414


class HeadersTooLarge(TooLarge):
    """431 `too_large`: more header fields than DIALSCORE_MAX_HEADERS, or one over DIALSCORE_MAX_HEADER_BYTES."""

    status = 431


class BadRequest(ServiceError):
    """400 `bad_request`: not valid HTTP/1.1, as the server's parser (h11) found it, or an upgrade the service
    does not speak."""

    status, code = 400, "bad_request"


class InvalidRequest(ServiceError):
    """422: schema violations; details map field paths such as `items.3.reference` to messages."""

    status, code = 422, "invalid_request"


class NotReady(ServiceError):
    """503: models are still loading (`retry_after`: seconds, sent as `Retry-After`), or one failed to
    load (none: waiting will not load it)."""

    status, code = 503, "not_ready"

    def __init__(self, message: str, details: dict[str, Any] | None = None, retry_after: int | None = None) -> None:
        super().__init__(message, details)
        if retry_after is not None:
            self.headers["Retry-After"] = str(retry_after)


class Refused(ServiceError):
    """503 with `Retry-After`: work refused before it started, so a client may send it again (elsewhere)."""

    status = 503

    def __init__(self, message: str, details: dict[str, Any] | None = None, retry_after: int = 1) -> None:
        super().__init__(message, details)
        self.headers["Retry-After"] = str(max(1, int(retry_after)))


class Overloaded(Refused):
    """503 `overloaded`: the worker's queue is full, or the request could not finish within its budget."""

    code = "overloaded"


class DeadlineExceeded(Refused):
    """503 `deadline_exceeded`: the request's budget ran out while it waited; it was not computed."""

    code = "deadline_exceeded"


class ShuttingDown(Refused):
    """503 `shutting_down`: the server got SIGTERM; another pod (or this one's replacement) will answer."""

    code = "shutting_down"


class BadHeader(ServiceError):
    """400 `bad_request`: a header the service reads (X-Request-Timeout) holds a value it cannot use."""

    status, code = 400, "bad_request"
