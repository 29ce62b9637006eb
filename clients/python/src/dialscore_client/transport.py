"""One request to the service: JSON out and in, the bearer token, and retries while the server cannot answer yet.

Every endpoint is safe to repeat: scoring, re-ranking and the analyses are pure functions of the request
(the service keeps no state between requests), so a POST that may or may not have reached the server is
retried like a GET.
"""
from __future__ import annotations

import json
import logging
import random
import time
from typing import Any

import requests

from dialscore_client.errors import (BODY_EXCERPT, DialscoreError, InvalidRequest, ServerError, TransportError,
                                     error_from_response)

log = logging.getLogger("dialscore_client")

# 503: a pod still loading its models (`not_ready`), or a proxy with no ready pod behind it; 502: a
# proxy whose pod went away (a restart). Every other status is the answer: a 4xx will not change.
RETRY_STATUSES = frozenset({502, 503})
FIRST_BACKOFF = 0.25  # seconds before the second attempt; doubled each time, up to MAX_BACKOFF
MAX_BACKOFF = 4.0


def encode(payload: Any) -> bytes:
    """The bytes sent for `payload`, compact UTF-8 (what batches are measured in); NaN is refused, as
    JSON has no such number."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def backoff(attempt: int) -> float:
    """Exponential backoff with jitter for the attempt that failed (1-based): half fixed, half random,
    so that clients that failed together do not come back together."""
    delay = min(MAX_BACKOFF, FIRST_BACKOFF * 2.0 ** (attempt - 1))
    return delay / 2 + random.uniform(0, delay / 2)


class Transport:
    """Sends requests to one server; retries connection failures, 502 and 503 until `retry_deadline` seconds
    after the first attempt, then raises the last failure."""

    def __init__(self, base_url: str, token: str | None, timeout: float, retry_deadline: float,
                 session: requests.Session | None, user_agent: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retry_deadline = retry_deadline
        self.session = session if session is not None else requests.Session()
        self.owns_session = session is None
        self.headers = {"Accept": "application/json", "User-Agent": user_agent}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"

    def close(self) -> None:
        if self.owns_session:
            self.session.close()

    def get(self, path: str) -> Any:
        return self.send("GET", path, None)

    def post(self, path: str, payload: Any) -> Any:
        try:
            body = encode(payload)
        except ValueError as exc:  # NaN or infinity
            raise InvalidRequest(None, "invalid_request", f"The request cannot be sent as JSON: {exc}.") from exc
        return self.send("POST", path, body)

    def send(self, method: str, path: str, body: bytes | None) -> Any:
        url = self.base_url + path
        headers = dict(self.headers)
        if body is not None:
            headers["Content-Type"] = "application/json"
        started = time.monotonic()
        deadline = started + self.retry_deadline
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._once(method, url, headers, body)
            except DialscoreError as failure:
                if not retryable(failure):
                    raise
                left = deadline - time.monotonic()
                asked = failure.retry_after
                if left <= 0 or (asked is not None and asked > left):
                    raise _gave_up(failure, attempt, time.monotonic() - started, self.retry_deadline) from failure
                pause = min(asked if asked is not None else backoff(attempt), left)
                log.info("dialscore: %s %s: %s -> attempt %d in %.2f s", method, url, failure, attempt + 1, pause)
                time.sleep(pause)

    def _once(self, method: str, url: str, headers: dict[str, str], body: bytes | None) -> Any:
        """The decoded answer of one attempt, or its failure raised."""
        try:
            response = self.session.request(method, url, data=body, headers=headers, timeout=self.timeout)
        except requests.exceptions.SSLError as exc:  # a certificate will not fix itself: not retried
            raise TransportError(None, "tls_error", f"TLS with {url} failed: {exc}") from exc
        except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
            raise TransportError(None, "connection_error", f"Could not reach {url}: {exc}") from exc
        except requests.Timeout as exc:  # a slow answer is not retried: that would repeat the slow work
            raise TransportError(None, "timeout", f"{url} sent no answer within {self.timeout:g} s (the client's "
                                 "timeout).") from exc
        if not response.ok:
            raise error_from_response(response)
        try:
            return response.json()
        except ValueError:
            raise ServerError(response.status_code, f"http_{response.status_code}",
                              f"{url} answered {response.status_code} with a body that is not JSON.",
                              {"body": response.text[:BODY_EXCERPT]}) from None


def retryable(failure: DialscoreError) -> bool:
    """Whether waiting may help: no connection (refused, reset), or a 502 / 503."""
    if failure.status is None:
        return failure.code == "connection_error"
    return failure.status in RETRY_STATUSES


def _gave_up(failure: DialscoreError, attempts: int, elapsed: float, deadline: float) -> DialscoreError:
    given_up = type(failure)(failure.status, failure.code,
                             f"{failure.message} Gave up after {attempts} attempt{'s' if attempts > 1 else ''} in "
                             f"{elapsed:.1f} s (retry_deadline {deadline:g} s).", failure.details, attempts=attempts)
    given_up.retry_after = failure.retry_after
    return given_up
