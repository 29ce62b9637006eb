"""The one exception the client raises, with a subclass per kind of failure, read from the contract's error body."""
from __future__ import annotations

import email.utils
import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import requests

BODY_EXCERPT = 500  # characters of a non-JSON error body kept in `details["body"]`


class DialscoreError(Exception):
    """A request that did not succeed: the HTTP status (None when no answer came), the contract's `code`,
    `message` and `details`, how many attempts were made, and the seconds a `Retry-After` header asked for."""

    retry_after: float | None = None

    def __init__(self, status: int | None, code: str, message: str, details: Mapping[str, Any] | None = None,
                 *, attempts: int = 1) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        self.attempts = attempts

    def __str__(self) -> str:
        where = f"HTTP {self.status}" if self.status is not None else "no HTTP answer"
        return f"{self.code} ({where}): {self.message}"

    def __reduce__(self) -> tuple[Any, ...]:  # pickles (multiprocessing) with its keyword argument
        return (_rebuild, (type(self), self.status, self.code, self.message, self.details, self.attempts,
                           self.retry_after))

    def retold(self, message: str, attempts: int) -> DialscoreError:
        """The same error with another message and number of attempts (the last attempt's, told for the call)."""
        return _rebuild(type(self), self.status, self.code, message, self.details, attempts, self.retry_after)

    def rebased(self, field: str, offset: int) -> DialscoreError:
        """The same error with `<field>.<i>` paths in details and message read as `<field>.<i + offset>`:
        an error about one chunk of a split batch, told in the caller's indices."""
        details = {rebase_path(key, field, offset): value for key, value in self.details.items()}
        message = _PATH_IN_TEXT[field].sub(lambda m: f"{field}.{int(m.group(1)) + offset}", self.message)
        if (message, list(details)) == (self.message, list(self.details)):
            return self
        return _rebuild(type(self), self.status, self.code, message, details, self.attempts, self.retry_after)


@contextmanager
def reading_answer(what: str) -> Iterator[None]:
    """Reading a successful answer's JSON: one without the contract's fields, or of other types, raises a
    ServerError `bad_answer` (status 200) instead of the KeyError or TypeError met while reading it."""
    try:
        yield
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise ServerError(200, "bad_answer", f"{what} is JSON but not the service's answer: "
                          f"{type(exc).__name__} {exc} while reading it.") from exc


def _rebuild(cls: type[DialscoreError], status: int | None, code: str, message: str, details: dict[str, Any],
             attempts: int, retry_after: float | None = None) -> DialscoreError:
    error = cls(status, code, message, details, attempts=attempts)
    error.retry_after = retry_after
    return error


class InvalidRequest(DialscoreError):
    """400 `bad_json` or 422 `invalid_request`: `details` maps field paths such as `items.3.reference` to messages."""


class Unauthorized(DialscoreError):
    """401 `unauthorized`: the server has a token and the request lacked it or carried another."""


class NotFound(DialscoreError):
    """404 `not_found`: no such endpoint (a base URL with a wrong path?)."""


class UnknownModel(NotFound):
    """404 `unknown_model`: the server does not serve that model; `details["served"]` lists those it does."""


class TooLarge(DialscoreError):
    """413 `too_large`: over a configured limit that splitting cannot help (one item's turns or characters)."""


class Unavailable(DialscoreError):
    """503: the server cannot take the request now; `retry_after` says when to try again (None: not by waiting)."""


class NotReady(Unavailable):
    """503 `not_ready`: models still loading (with `retry_after`; retried) or failed to load on that server
    (without; not retried). Also a 503 that is not the service's JSON (a proxy with no pod behind it)."""


class Overloaded(Unavailable):
    """503 (or 429) `overloaded`: past the server's admission bound, or the request could not finish within its
    budget; refused before any work, so sending it again after `retry_after` is safe."""


class DeadlineExceeded(Unavailable):
    """503 `deadline_exceeded`: the request's budget ran out while it waited on the server; it was not computed."""


class ShuttingDown(Unavailable):
    """503 `shutting_down`: that pod is stopping; another one answers the request sent again."""


class ServerError(DialscoreError):
    """A 5xx other than 503, an answer that is not the service's JSON (a proxy's HTML page), or a 200 whose JSON
    lacks the service's fields (`bad_answer`)."""


class TransportError(DialscoreError):
    """No HTTP answer: `connection_error` (refused, reset, after the retries), `unknown_host` (a host name with no
    address, not retried), `timeout` (no reply in time), `tls_error` or `request_error`."""


_BY_CODE: dict[str, type[DialscoreError]] = {
    "bad_json": InvalidRequest, "bad_request": InvalidRequest, "invalid_request": InvalidRequest,
    "unauthorized": Unauthorized, "not_found": NotFound, "unknown_model": UnknownModel,
    "too_large": TooLarge, "not_ready": NotReady, "overloaded": Overloaded, "deadline_exceeded": DeadlineExceeded,
    "shutting_down": ShuttingDown, "internal": ServerError,
}
_BY_STATUS: dict[int, type[DialscoreError]] = {400: InvalidRequest, 401: Unauthorized, 404: NotFound,
                                               413: TooLarge, 422: InvalidRequest, 503: NotReady}

_PATH = {field: re.compile(rf"^{field}\.(\d+)(?=\.|$)") for field in ("items", "candidates")}
_PATH_IN_TEXT = {field: re.compile(rf"\b{field}\.(\d+)\b") for field in ("items", "candidates")}


def rebase_path(path: str, field: str, offset: int) -> str:
    """`items.3.reference` -> `items.<3 + offset>.reference` (for `field` "items"); other paths unchanged."""
    return _PATH[field].sub(lambda m: f"{field}.{int(m.group(1)) + offset}", path, count=1)


def error_from_response(response: requests.Response) -> DialscoreError:
    """The typed error for a non-2xx answer; without the contract's JSON body, code `http_<status>`."""
    status = response.status_code
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        code, message = error["code"], str(error.get("message", ""))
        details = error.get("details") if isinstance(error.get("details"), dict) else {}
    else:
        code = f"http_{status}"
        message = (f"HTTP {status} {response.reason or ''} from {response.url} without the service's JSON error "
                   "body (an answer from a proxy in between?).").replace("  ", " ")
        details = {"body": response.text[:BODY_EXCERPT]}
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status) or (ServerError if status >= 500 else DialscoreError)
    error = cls(status, code, message, details)
    error.retry_after = retry_after(response)
    return error


def retry_after(response: requests.Response) -> float | None:
    """Seconds a `Retry-After` header asks for (delta-seconds or an HTTP date); None without one."""
    value = response.headers.get("Retry-After", "").strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
