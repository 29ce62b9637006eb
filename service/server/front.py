"""The ASGI app the uvicorn worker serves (create_front): Flask through a2wsgi on bounded thread pools,
behind admission. uvicorn parses and frames HTTP; this module only decides.

A request's lane (probes, scoring, research, the rest) is that of the endpoint the app's URL map routes
its decoded path to, so no spelling of a path passes by it. A body is read whole on the event loop,
within DIALSCORE_MAX_BODY_BYTES, the read timeout and the worker's DIALSCORE_MAX_PENDING_BYTES, before
the lane's Admission queues it for a thread or refuses it 503. Idle and slow clients hold a socket,
never a thread.
"""
from __future__ import annotations

import asyncio
import logging
import os
import re
import resource
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from a2wsgi import WSGIMiddleware

from service.observability import metrics, tracing
from service.config import MAX_READ_TIMEOUT, Settings, load_server_settings
from service.errors import (BadHeader, BadRequest, HeadersTooLarge, Overloaded, Refused, RequestTimeout,
                            ServiceError, ShuttingDown, TooLarge, UriTooLong, contract_answer, request_id)
from service.observability.logs import log_access
from service.server.admission import Admission, Ticket, named_models, resamples_class
from service.store import readiness

Receive = Callable[[], Awaitable[dict]]
PROBES = frozenset({"health.healthz", "health.readyz", "health.prometheus",  # never queued behind scoring
                    "inference_v2.live", "inference_v2.ready"})
SCORING = frozenset({"inference_v2.infer"})  # scoring endpoints outside the scoring blueprint
# The probes' queue, whatever DIALSCORE_MAX_QUEUE: they carry no body and take microseconds, and a refused
# health check fails the pod's liveness or readiness.
PROBE_QUEUE = 64
UNTRACED = ",".join(sorted(readiness.PROBE_PATHS | readiness.V2_PROBE_PATHS | {"/metrics"}))
# A refused body is read and dropped up to this many times the body limit, each part within
# DRAIN_IDLE_S, so that the connection can carry the client's next request; past that, it is closed.
DRAIN_FACTOR, DRAIN_IDLE_S = 4, 0.5
DECIMAL = re.compile(r"[0-9]+(\.[0-9]*)?|\.[0-9]+")  # X-Request-Timeout: a plain decimal number (API.md)
SHARED_COST_KEY = "?"  # a body naming no served model: one entry in the cost table, whatever it names


class ClientGone(Exception):
    """The client closed before its request was whole: nothing to answer."""


def budget_of(raw: str | None, default: float) -> float:
    """The request's budget in seconds: X-Request-Timeout, else `default`; BadHeader for a bad value."""
    if raw is None:
        return default
    value = float(raw) if DECIMAL.fullmatch(raw) else 0.0  # float() also reads "1_0", "1e3", "+2", "inf"
    if not 0 < value <= MAX_READ_TIMEOUT:
        raise BadHeader(f"X-Request-Timeout must be a decimal number of seconds (digits, a point; no sign or "
                        f"exponent) above 0 and at most {MAX_READ_TIMEOUT:g}.",
                        {"X-Request-Timeout": raw})
    return value


def origin_form(scope: dict[str, Any]) -> dict[str, Any]:
    """The scope with an absolute-form target (`POST http://h/score`, which RFC 9112 3.2.2 says a server must
    accept) routed as the path it names: uvicorn hands the app the whole target, as ASGI allows.
    `raw_path` stays the target as sent (the request line's limit counts it)."""
    if not scope["raw_path"][:8].lower().startswith((b"http://", b"https://")):
        return scope
    return {**scope, "path": unquote(urlsplit(scope["raw_path"].decode("ascii")).path) or "/"}


def line_bytes(scope: dict[str, Any]) -> int:
    """The request line's bytes without its CRLF: method, target (its `?query` too) and `HTTP/1.1`, spaced."""
    query = scope.get("query_string", b"")
    return len(scope["method"]) + len(scope["raw_path"]) + (len(query) + 1 if query else 0) + 10


def head_bytes(scope: dict[str, Any]) -> int:
    """The head's bytes, request line to blank line, each field as `name: value` with its CRLF."""
    return line_bytes(scope) + 4 + sum(len(k) + len(v) + 4 for k, v in scope["headers"])


@dataclass
class Lane:
    """Requests alike in cost, with their admission and the threads that run them."""

    admission: Admission
    run: WSGIMiddleware
    reads_body: bool = True
    name: str = "other"  # what traces call it


class Exchange:
    """One request and its answer, as the access log and the metrics see them."""

    def __init__(self, scope: dict[str, Any], send: Callable[[dict], Awaitable[None]]) -> None:
        self.scope, self._send, self.started = scope, send, time.perf_counter()
        self.headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in reversed(scope["headers"])}
        self.status, self.sent, self.request_id = 0, 0, request_id(self.headers.get("x-request-id"))
        self.close = False  # the answer says `Connection: close`
        self.head_bytes = head_bytes(scope)  # the limits' measure and admission's size, counted once
        self.length: int | None = None  # the answer's Content-Length
        # Run once, as the answer's last byte goes to the transport: the client may send its next request
        # as soon as it has read it, before the app's thread returns.
        self.on_answered: Callable[[], None] = lambda: None
        # The client sends its body only after `100 Continue`, which uvicorn sends at the first read: a body
        # not read yet is not coming unless a read invites it.
        self.awaits_continue = self.headers.get("expect", "").lower() == "100-continue"
        self.endpoint = "unmatched"  # the metrics' label: the app's route, as the app labels its own answers

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status, headers = message["status"], list(message.get("headers", []))
            self.request_id = next((v.decode("latin-1") for k, v in headers if k.lower() == b"x-request-id"), self.request_id)
            message = {**message, "headers": headers + [(b"connection", b"close")] * self.close}
            self.length = next((int(v) for k, v in headers if k.lower() == b"content-length"), None)
        self.sent += len(message.get("body", b""))
        if message["type"] == "http.response.body" and (not message.get("more_body") or self.sent == self.length):
            self.answered()
        await self._send(message)

    def answered(self) -> None:
        done, self.on_answered = self.on_answered, lambda: None
        done()

    async def refuse(self, error: ServiceError) -> None:
        """Answer `error` from the loop in the contract's form; the app never sees the request."""
        metrics.REQUESTS.labels(self.endpoint, metrics.method_label(self.scope["method"]), str(error.status)).inc()
        metrics.ERRORS.labels(error.code).inc()
        if isinstance(error, Refused):
            metrics.REFUSED.labels(error.code).inc()
        headers, payload = contract_answer(error, self.request_id, self.scope["path"])
        await self.send({"type": "http.response.start", "status": error.status, "headers": headers})
        await self.send({"type": "http.response.body", "body": payload})


class Front:
    """The ASGI app; see the module's docstring. `stopping_since`, `recycle` and `max_requests` are the worker's."""

    def __init__(self, app: Any, settings: Settings) -> None:
        self.settings, self.routes = settings, app.url_map.bind("localhost")
        self.store = app.extensions.get("dialscore.store")
        lane = lambda threads, queue=settings.max_queue, **kw: Lane(  # noqa: E731
            Admission(threads, queue), WSGIMiddleware(app, threads), **kw)
        self.probes, self.scoring = lane(1, PROBE_QUEUE, reads_body=False, name="probes"), lane(settings.threads, name="scoring")
        self.research, self.other = lane(1, name="research"), lane(1)
        self.by_blueprint = {"scoring": self.scoring, "analysis": self.research}
        self.lanes = (self.probes, self.scoring, self.research, self.other)
        self.unrouted = Lane(self.other.admission, self.other.run, reads_body=False)
        self.held = 0  # bytes of bodies being read, not yet admitted
        self.stopping_since: float | None = None  # SIGTERM: what arrives from then on is refused
        self.recycle: Callable[[], None] = lambda: None
        self.max_requests = self.answered = 0
        self._timer: asyncio.TimerHandle | None = None
        self._traced = tracing.server_spans(self.answer, UNTRACED, lambda scope: metrics.method_label(
            scope["method"]) + " " + self.route(scope["method"], origin_form(scope)["path"])[1])

    def route(self, method: str, path: str) -> tuple[Lane, str, list[object]]:
        """The lane of the route the app matches `path` to, the route (or "unmatched"), and the model the
        path names (`/v2/models/<name>/...`); a request the app answers unrouted (404, 405, a redirect)
        reads no body."""
        try:
            rule, args = self.routes.match(path, method, return_rule=True)
        except Exception:  # noqa: BLE001 - NotFound, MethodNotAllowed, RequestRedirect: the app answers them
            return self.unrouted, "unmatched", []
        endpoint, named = rule.endpoint, [args["name"]] if "name" in args else []
        lane = (self.probes if endpoint in PROBES else self.scoring if endpoint in SCORING else self.other
                if method == "OPTIONS" else self.by_blueprint.get(endpoint.partition(".")[0], self.other))
        return lane, rule.rule, named

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Callable[[dict], Awaitable[None]]) -> None:
        await self._traced(scope, receive, send) if self._traced else await self.answer(scope, receive, send)

    async def answer(self, scope: dict[str, Any], receive: Receive, send: Callable[[dict], Awaitable[None]]) -> None:
        scope = origin_form(scope)  # an http scope: the worker runs uvicorn with lifespan "off" and ws "none"
        exchange, arrived = Exchange(scope, send), time.monotonic()
        lane, exchange.endpoint, in_path = self.route(scope["method"], scope["path"])
        # Probes never recycle (nor count towards max_requests): an idle pod's probes would restart its
        # workers, and restarting the one that answers /readyz could keep the pod from ever being ready.
        self.answered += lane is not self.probes
        why = lane is not self.probes and self.stopping_since is None and getattr(self.store, "loaded", True) and (
            self.recycle_reason())
        if why and readiness.step_down(os.getpid()):  # stop accepting before this answer goes out: its client's
            logging.getLogger("gunicorn.error").info(  # next connection goes to a sibling
                "worker %s %s: restarting it after its requests in flight", os.getpid(), why)
            self.stopping_since = float("inf")  # from now answers close; every arrival is still served
            self.recycle()
        exchange.close = self.stopping_since is not None
        try:
            await self.serve(exchange, lane, in_path, receive, arrived)
        except ClientGone:
            exchange.status = exchange.status or 499
        finally:
            log_access(scope, exchange.status, exchange.sent, time.perf_counter() - exchange.started,
                       exchange.request_id)

    async def serve(self, exchange: Exchange, lane: Lane, in_path: list[object], receive: Receive,
                    arrived: float) -> None:
        scope, settings, headers, body = exchange.scope, self.settings, exchange.headers, b""
        unread = headers.get("content-length", "0") != "0" or "transfer-encoding" in headers  # a body not read yet
        exchange.close |= "content-length" in headers and "transfer-encoding" in headers  # RFC 9112 6.1: a must
        try:
            self.check_head(exchange)
            if self.stopping_since is not None and arrived >= self.stopping_since:
                raise ShuttingDown("This server is shutting down; send the request again (another replica will "
                                   "answer it).", retry_after=1)
            budget = budget_of(headers.get("x-request-timeout"), settings.request_timeout)
            if lane.reads_body and unread:  # none declared: no read, which would invite it with `100 Continue`
                unread = False  # read_body drops what it refuses
                body = await self.read_body(exchange, receive, arrived)
        except ServiceError as error:
            if unread:
                await self.drop_body(exchange, receive)
            return await exchange.refuse(error)
        if unread:  # the app answers without reading it: a health probe's connection ends at once
            await self.drop_body(exchange, receive, lane is self.unrouted)
        size = exchange.head_bytes + len(body)  # as admission counts
        key = self.cost_key(in_path or named_models(body)) + (resamples_class(body) if lane is self.research else "")
        ticket = Ticket(exchange.endpoint, size, arrived, arrived + budget, asyncio.get_running_loop().create_future(),
                        key)
        refusal = lane.admission.offer(ticket, time.monotonic())
        if refusal is None:
            self.dispatch()
            try:
                refusal = await ticket.payload
            except asyncio.CancelledError:  # a release after the cancel may have started it: its slot is freed too
                for held in (lane.admission.queue, lane.admission.running):
                    if ticket in held:
                        held.remove(ticket)
                raise
        tracing.record("admission", arrived, lane=lane.name, outcome=refusal.code if refusal else "admitted")
        if refusal is not None:
            return await exchange.refuse(refusal)
        metrics.QUEUE_WAIT.observe(time.monotonic() - arrived)

        def release() -> None:
            lane.admission.finished(ticket, time.monotonic())
            if time.monotonic() > ticket.deadline:
                metrics.FINISHED_LATE.inc()
            self.dispatch()

        exchange.on_answered = release
        try:
            await lane.run(length_framed(scope, body) if "transfer-encoding" in headers else scope,
                           replay(body, receive), exchange.send)
        finally:
            exchange.answered()

    def check_head(self, exchange: Exchange) -> None:
        """The HTTP version, and the request line and header limits (DIALSCORE_MAX_REQUEST_LINE, _MAX_HEADERS,
        _MAX_HEADER_BYTES, _MAX_HEAD_BYTES: h11 holds that much of a head still arriving, worker.py)."""
        scope, s = exchange.scope, self.settings
        if scope["http_version"] not in ("1.0", "1.1"):
            exchange.close = True  # what follows is another protocol's bytes (an HTTP/2 preface's), not a request
            raise BadRequest(f"HTTP/{scope['http_version']} is not served; send HTTP/1.1.")
        if line_bytes(scope) > s.max_request_line:
            raise UriTooLong("The request line is longer than the server accepts; send inputs in the JSON body, "
                             "not the URL.", {"max_request_line": s.max_request_line})
        if len(scope["headers"]) > s.max_headers or exchange.head_bytes > s.max_head_bytes or any(
                len(k) + len(v) + 2 > s.max_header_bytes for k, v in scope["headers"]):
            raise HeadersTooLarge("The request's headers are too many or too long; send fewer or shorter headers.",
                                  {"max_headers": s.max_headers, "max_header_bytes": s.max_header_bytes,
                                   "max_head_bytes": s.max_head_bytes})

    async def read_body(self, exchange: Exchange, receive: Receive, arrived: float) -> bytes:
        """The whole body; TooLarge (after draining what the client sends at once), RequestTimeout, or
        Overloaded where the worker holds DIALSCORE_MAX_PENDING_BYTES for requests not yet admitted."""
        limit, pending, parts, size, more = self.settings.max_body_bytes, self.settings.max_pending_bytes, [], 0, True
        deadline, declared = arrived + self.settings.read_timeout, exchange.headers.get("content-length", "")
        try:
            while more and not (size > limit or declared.isdigit() and int(declared) > limit):
                message = await _receive(receive, deadline - time.monotonic())
                chunk, more = message.get("body", b""), message.get("more_body", False)
                size += len(chunk)
                if self.held + len(chunk) > pending:
                    exchange.close = True  # the rest is dropped as it comes, so the answer meets no reset
                    await drain(receive, more, DRAIN_FACTOR * limit)
                    raise Overloaded("This worker holds as many request bodies as it may; send the request again "
                                     "after Retry-After seconds, or to another replica.", {"max_pending_bytes": pending})
                self.held += len(chunk)
                parts.append(chunk)
        except asyncio.TimeoutError:
            exchange.close = True
            raise RequestTimeout(self.settings.read_timeout) from None
        finally:
            self.held -= sum(map(len, parts))
        if size <= limit and not more:
            return b"".join(parts)
        invited = bool(parts) or not exchange.awaits_continue  # read from, or sent without waiting
        exchange.close = exchange.close or not (invited and await drain(receive, more, DRAIN_FACTOR * limit))
        raise TooLarge(f"The body is larger than {limit} bytes (DIALSCORE_MAX_BODY_BYTES); split the request.",
                       {"max_body_bytes": limit})

    async def drop_body(self, exchange: Exchange, receive: Receive, read: bool = True) -> None:
        """Before an answer that leaves the body unread: read and drop it (`drain`), or end the connection
        (a health probe's, and one the client holds back for `100 Continue`)."""
        ended = read and not exchange.awaits_continue and await drain(receive, True,
                                                                       DRAIN_FACTOR * self.settings.max_body_bytes)
        exchange.close = exchange.close or not ended

    def cost_key(self, names: list[object]) -> str:
        """Admission's cost-table key for the model(s) named: served names only, anything else one shared key."""
        served = getattr(self.store, "scorers", None) or {}
        ok = names and all(isinstance(n, str) and n in served for n in names)
        return ",".join(names) if ok else SHARED_COST_KEY  # type: ignore[arg-type]

    def dispatch(self) -> None:
        """Start what a free thread may take, refuse what can no longer meet its deadline, and wake at
        the next deadline."""
        now = time.monotonic()
        for lane in self.lanes:
            starting, dropped = lane.admission.due(now)
            for ticket, result in [(t, None) for t in starting] + dropped:
                ticket.payload.done() or ticket.payload.set_result(result)
        wake = [d for lane in self.lanes if (d := lane.admission.next_wake(now)) is not None]
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(max(0.0, min(wake) - now), self.dispatch) if wake else None

    def overdue(self, now: float, grace: float) -> Ticket | None:
        """A request still running `grace` seconds past its deadline, whose thread is taken to be stuck."""
        return next((t for lane in self.lanes for t in lane.admission.running if now > t.deadline + grace), None)

    def recycle_reason(self) -> str:
        """Why to recycle this worker after this answer, once its siblings serve (readiness.step_down), or "":
        DIALSCORE_MAX_REQUESTS answered, or DIALSCORE_MAX_WORKER_MEMORY_MIB held. ONNX Runtime's arenas keep
        the peak of the shapes seen, so peak resident memory is the measure."""
        if 0 < self.max_requests <= self.answered:
            return f"answered {self.answered} requests (DIALSCORE_MAX_REQUESTS with its jitter: {self.max_requests})"
        limit, held = self.settings.max_worker_memory_mib, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return f"holds {held:.0f} MiB, over DIALSCORE_MAX_WORKER_MEMORY_MIB={limit}" if limit and held > limit else ""


async def _receive(receive: Receive, timeout: float) -> dict[str, Any]:
    message = await asyncio.wait_for(receive(), max(0.0, timeout))
    if message["type"] == "http.disconnect":
        raise ClientGone
    return message


async def drain(receive: Receive, more: bool, budget: int) -> bool:
    """Read and drop the rest of a refused body, up to `budget` bytes, each part within DRAIN_IDLE_S;
    whether it ended (the connection can carry the next request)."""
    try:
        while more and budget > 0:
            message = await _receive(receive, DRAIN_IDLE_S)
            budget, more = budget - len(message.get("body", b"")), message.get("more_body", False)
    except (asyncio.TimeoutError, ClientGone):
        return False
    return not more


def length_framed(scope: dict[str, Any], body: bytes) -> dict[str, Any]:
    """The scope of a chunked body read whole, as one of Content-Length: werkzeug reads a chunked body
    as empty unless the server sets wsgi.input_terminated, which a2wsgi does not."""
    headers = [(k, v) for k, v in scope["headers"] if k not in (b"transfer-encoding", b"content-length")]
    return {**scope, "headers": [*headers, (b"content-length", b"%d" % len(body))]}


def replay(body: bytes, receive: Receive) -> Receive:
    """`receive` for the app: the body already read, then the connection's own (its disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> dict[str, Any]:
        return pending.pop() if pending else await receive()

    return replayed


def create_front() -> Front:
    """The app gunicorn's worker loads (gunicorn.conf.py): the Flask app, loading its models, behind the front.
    A worker whose models fail to load in a pod that has been ready exits (gunicorn starts another): serving,
    it would answer its share of requests 503 `not_ready`, which clients must not retry, in a ready pod."""
    from service.app import create_app

    app = create_app()
    store = app.extensions.get("dialscore.store")
    if store is not None and store.loaded and store.failures and readiness.marker_dir() and readiness.pod_was_ready():
        logging.getLogger("gunicorn.error").error(
            "worker %s: %s failed to load in a pod whose other workers serve them; exiting, so that gunicorn "
            "starts another", os.getpid(), ", ".join(sorted(store.failures)))
        sys.exit(1)
    return Front(app, load_server_settings())
