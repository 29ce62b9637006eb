"""One request to the service: JSON out and in, the bearer token, and retries while the server cannot answer yet.

Every endpoint is safe to repeat: scoring, re-ranking and the analyses are pure functions of the request
(the service keeps no state between requests), so a POST that may or may not have reached the server is
retried like a GET.
"""
from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import random
import socket
import threading
import time
import unicodedata
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

import requests
from urllib3.exceptions import NameResolutionError, NewConnectionError, ReadTimeoutError

from dialscore_client.errors import (BODY_EXCERPT, DialscoreError, InvalidRequest, ServerError, TransportError,
                                     error_from_response)

log = logging.getLogger("dialscore_client")

# 502: a proxy whose pod went away (a restart); 503 without the service's JSON: a proxy with no ready pod behind
# it. The service's own 503s are retried by code (`retryable`). Every other status is the answer.
RETRY_STATUSES = frozenset({502, 503})
RETRY_CODES = frozenset({"overloaded", "shutting_down", "deadline_exceeded"})  # refused before any work was done
FIRST_BACKOFF = 0.25  # seconds before the second attempt; doubled each time, up to MAX_BACKOFF
MAX_BACKOFF = 4.0
# seconds: a longer Retry-After (a wrong header, a far HTTP date) is taken as this (waited up to a quarter more)
MAX_RETRY_AFTER = 120.0
MIN_ATTEMPT = 0.1  # seconds an attempt needs at least: no retry is made that would leave it less of the timeout
TIMEOUT_HEADER = "X-Request-Timeout"
MAX_BUDGET = 3600.0  # the largest X-Request-Timeout the server takes
IDLE_TIMEOUT = 60.0  # without a timeout: seconds to wait for a connection, and between an answer's bytes
MAX_TIMEOUT = 1e6  # seconds: the largest `timeout` taken (sockets and threads take no wait much longer)
UNSENDABLE = (ValueError, TypeError)  # what json.dumps and UTF-8 raise for a value JSON has no form for
# The resolver's answer that the name has no address: a typo in base_url, which waiting does not cure (its
# "try again", EAI_AGAIN, a DNS server not reachable yet, stays a retried connection_error).
NO_SUCH_HOST = frozenset(getattr(socket, name) for name in ("EAI_NONAME", "EAI_NODATA") if hasattr(socket, name))


def encode(payload: Any) -> bytes:
    """The bytes sent for `payload`, compact UTF-8 (what batches are measured in); NaN is refused, as
    JSON has no such number."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def encode_checked(payload: Any, path: str = "") -> bytes:
    """encode(payload), or InvalidRequest naming the field path (`items.3.response`, under `path`) of the first
    value JSON cannot carry: NaN or infinity, a lone surrogate (no UTF-8 form), bytes or another object."""
    try:
        return encode(payload)
    except UNSENDABLE as exc:
        where, reason = _first_unsendable(payload, path) or (path, str(exc))
        field = where or "The request"
        raise InvalidRequest(None, "invalid_request", f"{field} cannot be sent as JSON: {reason}.",
                             {where or "body": reason}) from exc


def _first_unsendable(value: Any, path: str, within: frozenset[int] = frozenset()) -> tuple[str, str] | None:
    """The path and reason of the first value under `value` that encode() refuses; None if it takes them all.
    `within`: the containers the path passes through, so that one holding itself is named, not recursed into."""
    if id(value) not in within:
        children = (value.items() if isinstance(value, dict)
                    else enumerate(value) if isinstance(value, (list, tuple)) else ())
        for key, child in children:
            found = _first_unsendable(child, f"{path}.{key}" if path else str(key), within | {id(value)})
            if found is not None:
                return found
    try:
        encode(value)
    except UNSENDABLE as exc:
        return path, _reason(value, exc)
    return None


def _reason(value: Any, exc: Exception) -> str:
    """Why encode() refused `value`; for text, where its lone surrogate (half of a UTF-16 pair) is."""
    if isinstance(exc, UnicodeEncodeError) and isinstance(value, str):
        at = next(i for i, char in enumerate(value) if "\ud800" <= char <= "\udfff")
        return f"a lone surrogate {value[at]!r} at character {at}, which UTF-8 cannot encode"
    return str(exc)


def backoff(attempt: int) -> float:
    """Exponential backoff with jitter for the attempt that failed (1-based): half fixed, half random,
    so that clients that failed together do not come back together."""
    delay = min(MAX_BACKOFF, FIRST_BACKOFF * 2.0 ** (attempt - 1))
    return delay / 2 + random.uniform(0, delay / 2)


def after_retry_after(asked: float | None) -> float:
    """The wait a Retry-After asks for, plus up to a quarter more at random: the server gives whole seconds,
    so that clients refused together would otherwise all come back in the same instant."""
    return 0.0 if asked is None else asked + random.uniform(0, asked / 4)


class Transport:
    """Sends requests to one server within a call's deadline (`timeout` seconds after the call began; None:
    none); retries connection failures, 502, and 503s that waiting may cure, until `retry_deadline` seconds
    after the first attempt or until too little of the deadline is left, then raises the last failure."""

    def __init__(self, base_url: str, token: str | None, timeout: float | None, retry_deadline: float,
                 session: requests.Session | None, user_agent: str) -> None:
        self.base_url = checked_base_url(base_url)
        self.timeout = None if timeout is None else checked_seconds("timeout", timeout, above_zero=True)
        self.retry_deadline = checked_seconds("retry_deadline", retry_deadline, above_zero=False)
        self.session = session if session is not None else requests.Session()
        self.owns_session = session is None
        self.headers = {"Accept": "application/json", "User-Agent": user_agent}
        token = checked_token(token)
        if token:
            self.headers["Authorization"] = f"Bearer {token}"

    def close(self) -> None:
        if self.owns_session:
            self.session.close()

    def deadline(self) -> float | None:
        """The `time.monotonic()` by which a call starting now must be answered; None without a timeout."""
        return None if self.timeout is None else time.monotonic() + self.timeout

    def get(self, path: str, deadline: float | None) -> Any:
        return self.send("GET", path, None, deadline)

    def post(self, path: str, payload: Any, deadline: float | None) -> Any:
        return self.send("POST", path, encode_checked(payload), deadline)

    def send(self, method: str, path: str, body: bytes | None, deadline: float | None) -> Any:
        url = self.base_url + path
        headers = dict(self.headers)
        if body is not None:
            headers["Content-Type"] = "application/json"
        started = time.monotonic()
        retry_until = started + self.retry_deadline
        attempt = 0
        retried: list[DialscoreError] = []
        while True:
            attempt += 1
            try:
                return self._once(method, url, headers, body, deadline)
            except DialscoreError as failure:
                if not retryable(failure):
                    if not retried:
                        raise
                    raise _after_retries(failure, retried) from failure
                needs = attempt_needs(failure)
                ends = retry_until if deadline is None else min(retry_until, deadline - needs)
                left = ends - time.monotonic()
                asked = None if failure.retry_after is None else min(failure.retry_after, MAX_RETRY_AFTER)
                if left <= 0 or (asked is not None and asked > left):
                    bound = (f"retry_deadline {self.retry_deadline:g} s" if ends == retry_until
                             else f"timeout {self.timeout:g} s")
                    why = ("" if ends == retry_until or needs == MIN_ATTEMPT else f": the wait and the {needs:g} s "
                           "the server expects the work to take do not fit in what is left of it")
                    raise _gave_up(failure, attempt, time.monotonic() - started, bound, why, retried) from failure
                pause = min(max(backoff(attempt), after_retry_after(asked)), left)
                retried.append(failure)
                log.info("dialscore: %s %s: %s -> attempt %d in %.2f s", method, url, failure, attempt + 1, pause)
                time.sleep(pause)

    def _once(self, method: str, url: str, headers: dict[str, str], body: bytes | None,
              deadline: float | None) -> Any:
        """The decoded answer of one attempt, or its failure raised. With a deadline, the attempt carries what
        is left of it as X-Request-Timeout and waits for the answer no longer."""
        wait = IDLE_TIMEOUT
        if deadline is not None:
            wait = deadline - time.monotonic()
            budget = math.floor(min(wait, MAX_BUDGET) * 1000) / 1000  # the server's budget never outlasts ours
            if budget <= 0:
                raise TransportError(None, "timeout", f"The call's timeout of {self.timeout:g} s ran out before "
                                     f"{method} {url} was sent.")
            headers = {**headers, TIMEOUT_HEADER: f"{budget:.3f}"}
        try:
            response = (_whole(self.session.request(method, url, data=body, headers=headers, timeout=wait,
                                                    stream=True, allow_redirects=False, hooks=no_redirects(self.session)))
                        if deadline is None else _Exchange(self.session, method, url, headers, body, wait).by(deadline))
        except _Redirected as redirect:
            raise redirected(redirect.response) from None
        except _BrokenBody as broken:
            raise self._broken_body(broken, url, wait, deadline) from broken.cause
        except requests.RequestException as exc:
            raise self._no_answer(exc, method, url, wait, deadline) from exc
        if not response.ok:
            raise error_from_response(response)
        try:
            return response.json()
        except ValueError:
            raise ServerError(response.status_code, f"http_{response.status_code}",
                              f"{url} answered {response.status_code} with a body that is not JSON.",
                              {"body": response.text[:BODY_EXCERPT]}) from None

    def _within(self, wait: float, deadline: float | None) -> str:
        return (f"the {wait:.2f} s left of the call's timeout ({self.timeout:g} s)" if deadline is not None
                else f"{wait:g} s (the client's wait without a timeout)")

    def _no_answer(self, exc: requests.RequestException, method: str, url: str, wait: float,
                   deadline: float | None) -> TransportError:
        """The failure of an attempt that got no answer's head: a host name with no address (not retried), no
        connection (retried), a connection closed or reset before the answer (retried), no answer in time (not
        retried: that would repeat the slow work)."""
        if isinstance(exc, requests.exceptions.SSLError):  # a certificate will not fix itself: not retried
            return TransportError(None, "tls_error", f"TLS with {url} failed: {exc}")
        if _timed_out(exc):
            return TransportError(None, "timeout", f"{url} sent no whole answer within {self._within(wait, deadline)}.")
        if isinstance(exc, requests.ConnectionError):
            reason = getattr(exc.args[0], "reason", None) if exc.args else None
            resolver = getattr(reason, "__cause__", None) or getattr(reason, "__context__", None)
            if isinstance(reason, NameResolutionError) and getattr(resolver, "errno", None) in NO_SUCH_HOST:
                return TransportError(None, "unknown_host", f"{urlsplit(url).hostname} has no address ({resolver}): "
                                      "check the client's base_url.")
            if isinstance(exc, requests.ConnectTimeout) or isinstance(reason, NewConnectionError):
                return TransportError(None, "connection_error", f"Could not connect to {url}: {exc}")
            return TransportError(None, "connection_error", f"{url} closed the connection without an answer: {exc}")
        return TransportError(None, "request_error", f"{method} {url} could not be sent: {type(exc).__name__}: {exc}")

    def _broken_body(self, broken: _BrokenBody, url: str, wait: float, deadline: float | None) -> DialscoreError:
        """The failure of an attempt whose answer's head came but whose body could not be read whole."""
        status, exc = broken.response.status_code, broken.cause
        if _timed_out(exc):
            return TransportError(None, "timeout", f"{url} answered {status}, then sent no more of its body within "
                                  f"{self._within(wait, deadline)}.")
        if isinstance(exc, requests.exceptions.ContentDecodingError):
            encoding = broken.response.headers.get("Content-Encoding", "")
            return ServerError(status, "bad_answer", f"{url} answered {status} with a body that its "
                               f"Content-Encoding ({encoding}) does not decode: {exc}")
        return TransportError(None, "connection_error", f"{url} answered {status}, then the connection ended before "
                              f"its body was whole: {exc}")


def _timed_out(exc: requests.RequestException) -> bool:
    """No byte within the wait, once connected (requests raises a read's timeout in a body as a ConnectionError)."""
    return ((isinstance(exc, requests.Timeout) and not isinstance(exc, requests.ConnectTimeout))
            or bool(exc.args) and isinstance(exc.args[0], ReadTimeoutError))


class _Redirected(Exception):
    """A 3xx answer, raised from requests' response hook: before requests parses its Location (which it does even
    when not following it, and which raises ValueError for a malformed one)."""

    def __init__(self, response: requests.Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def _refuse_redirect(response: requests.Response, *args: Any, **kwargs: Any) -> requests.Response:
    if 300 <= response.status_code < 400:
        response.close()
        raise _Redirected(response)
    return response


def no_redirects(session: requests.Session) -> dict[str, list[Any]]:
    """The request's hooks: the session's own response hooks, then the refusal of a 3xx (requests lets a
    request's hooks of one kind replace the session's, not add to them)."""
    return {"response": [*session.hooks.get("response", []), _refuse_redirect]}


class _BrokenBody(Exception):
    """An answer whose head came and whose body could not be read whole (`cause`: requests' exception)."""

    def __init__(self, response: requests.Response, cause: requests.RequestException) -> None:
        super().__init__(str(cause))
        self.response = response
        self.cause = cause


def _whole(response: requests.Response) -> requests.Response:
    """`response` with its body read; _BrokenBody if it cannot be (cut, stalled, not decodable)."""
    try:
        response.content  # noqa: B018 - reads the whole body
    except requests.RequestException as exc:
        response.close()
        raise _BrokenBody(response, exc) from exc
    return response


class _Exchange:
    """One request and its whole answer, made on a thread of its own so that the caller stops waiting at its
    deadline however the bytes come: requests' `timeout` bounds each wait for a byte, not their sum, so a server
    sending a byte at a time keeps it going. Abandoned at the deadline, the answer's socket is shut (urllib3's
    `HTTPResponse.shutdown`, 2.3 and later) so that the thread ends too; before the headers, or on an older
    urllib3, it ends at its next gap of `wait` seconds or when the server is done (requests and urllib3 give
    no public way to the socket before the head: it stays, with the thread, after the session's close)."""

    def __init__(self, session: requests.Session, method: str, url: str, headers: dict[str, str],
                 body: bytes | None, wait: float) -> None:
        self._send = functools.partial(session.request, method, url, data=body, headers=headers, timeout=wait,
                                       stream=True, allow_redirects=False, hooks=no_redirects(session))
        self._lock = threading.Lock()
        self._reading: requests.Response | None = None  # the answer whose body is being read
        self._abandoned = False
        self._answer: requests.Response | None = None
        self._failure: BaseException | None = None

    def by(self, deadline: float) -> requests.Response:
        """The answer, its body read, or the request's exception; requests.Timeout once `deadline` passes."""
        thread = threading.Thread(target=self._run, name="dialscore-request", daemon=True)
        thread.start()
        thread.join(max(0.0, deadline - time.monotonic()))
        if thread.is_alive():
            self._abandon()
            raise requests.Timeout("the answer did not arrive whole by the call's deadline")
        if self._failure is not None:
            raise self._failure
        assert self._answer is not None
        return self._answer

    def _run(self) -> None:
        try:
            response = self._send()
            with self._lock:
                abandoned = self._abandoned
                self._reading = None if abandoned else response
            if abandoned:
                response.close()
                return
            _whole(response)  # reads the whole body here, on this thread
            with self._lock:
                self._reading = None
            self._answer = response
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread by `by`
            self._failure = exc

    def _abandon(self) -> None:
        with self._lock:
            self._abandoned, reading = True, self._reading
        shutdown = getattr(getattr(reading, "raw", None), "shutdown", None)
        if shutdown is not None:
            with contextlib.suppress(Exception):  # released to the pool meanwhile, or already closed: nothing to end
                shutdown()


def retryable(failure: DialscoreError) -> bool:
    """Whether waiting may help: no connection (refused, reset); the service's refusals of work it did not start
    (`overloaded`, `shutting_down`, `deadline_exceeded`); `not_ready` with a Retry-After (models loading; without
    one a model failed to load); a proxy's 502 or 503."""
    if failure.status is None:
        return failure.code == "connection_error"
    if failure.code in RETRY_CODES:
        return True
    if failure.code == "not_ready":
        return failure.retry_after is not None
    return failure.status in RETRY_STATUSES


def attempt_needs(failure: DialscoreError) -> float:
    """Seconds the next attempt needs once sent: the work's run time the server expects, where its refusal
    (`overloaded`, `deadline_exceeded`) gives `details.expected_run_s`; else MIN_ATTEMPT."""
    expected = failure.details.get("expected_run_s")
    if isinstance(expected, (int, float)) and not isinstance(expected, bool) and math.isfinite(expected):
        return max(MIN_ATTEMPT, float(expected))
    return MIN_ATTEMPT


def _gave_up(failure: DialscoreError, attempts: int, elapsed: float, bound: str, why: str,
             retried: list[DialscoreError]) -> DialscoreError:
    earlier = f" The ones before it failed with {_codes(retried)}." if retried else ""
    return failure.retold(f"{failure.message} Gave up after {attempts} attempt{'s' if attempts > 1 else ''} in "
                          f"{elapsed:.1f} s ({bound}){why}.{earlier}", attempts)


def _after_retries(failure: DialscoreError, retried: list[DialscoreError]) -> DialscoreError:
    """A failure not retried, after the attempts that were: their number and how they ended."""
    attempts = len(retried) + 1
    return failure.retold(f"{failure.message} This was attempt {attempts}; the ones before it failed with "
                          f"{_codes(retried)}, the last: {retried[-1].message}", attempts)


def _codes(failures: list[DialscoreError]) -> str:
    return ", ".join(f"{code} ({count})" for code, count in Counter(f.code for f in failures).items())


def redirected(response: requests.Response) -> DialscoreError:
    """A 3xx answer: the client follows no redirect (requests would re-send a POST as a GET after 301 or 302,
    and follow loops and other schemes), so the caller can give the base URL that answers."""
    location = response.headers.get("Location", "")
    return DialscoreError(response.status_code, "redirected",
                          f"{response.url} answered {response.status_code}, redirecting to {location or '(no Location)'}"
                          "; the client follows no redirect: give it the base URL that answers.",
                          {"location": location})


def checked_base_url(base_url: str) -> str:
    """`base_url` without its trailing slash; ValueError unless it is an http(s) URL with a host."""
    if not isinstance(base_url, str):
        raise TypeError(f"base_url must be a str such as 'http://127.0.0.1:8000', not {type(base_url).__name__}.")
    try:
        parts = urlsplit(base_url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port is None or parts.port > 0)
    except ValueError:
        valid = False
    if not valid:
        raise ValueError(f"base_url must be an http:// or https:// URL with a host, such as "
                         f"'http://127.0.0.1:8000'; got {base_url!r}.")
    return base_url.rstrip("/")


def checked_token(token: str | None) -> str | None:
    """`token` without surrounding whitespace (a secret file's last newline, which the server strips too);
    TypeError unless a str, ValueError unless printable ASCII with no space, as a header can carry it and
    the server takes it. The messages never hold the token."""
    if token is None:
        return None
    if isinstance(token, int) and not isinstance(token, bool):  # a numeric token read from YAML or JSON
        token = str(token)
    if not isinstance(token, str):
        raise TypeError(f"token must be a str, not {type(token).__name__}.")
    if token and not token.strip():
        raise ValueError("token is blank (whitespace only): give the token, or None to send none.")
    token = token.strip()
    bad = next((at for at, char in enumerate(token) if not ("!" <= char <= "~")), None)
    if bad is not None:
        raise ValueError(f"token must be printable ASCII with no space (the server takes no other); its character "
                         f"{bad} is {unicodedata.name(token[bad], 'a control character')}.")
    return token


def checked_seconds(name: str, value: float, above_zero: bool) -> float:
    """`value` as seconds; TypeError unless a number, ValueError unless finite, at most MAX_TIMEOUT, and above
    zero (`above_zero`) or at least zero."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__} {value!r}.")
    if not (math.isfinite(value) and (value > 0 if above_zero else value >= 0) and value <= MAX_TIMEOUT):
        bound = "above 0" if above_zero else "0 or more"
        raise ValueError(f"{name} must be a finite number of seconds, {bound} and at most {MAX_TIMEOUT:g}; got "
                         f"{value!r}.")
    return float(value)
