"""The ASGI application the uvicorn worker serves (create_front): the Flask app, run through a2wsgi on
bounded thread pools, behind admission. uvicorn parses and frames HTTP; this module only decides.

A request goes to a lane by the endpoint the app's own URL map routes its decoded path to (probes,
scoring, research, the rest), so no spelling of a path passes by its lane. A body the app reads is
read whole here on the event loop, bounded by DIALSCORE_MAX_BODY_BYTES, the read timeout and the
worker's sum of bytes held for requests not yet admitted (DIALSCORE_MAX_PENDING_BYTES); then the
lane's Admission queues it for a thread or refuses it 503 at once. Idle and slow clients hold a
socket, never a thread.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from a2wsgi import WSGIMiddleware
from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
from werkzeug.exceptions import HTTPException

from service import metrics, tracing
from service.config import MAX_READ_TIMEOUT, Settings, load_server_settings
from service.errors import (ANSWER_HEADERS, BadHeader, BadRequest, HeadersTooLarge, Overloaded, Refused, RequestTimeout,
                            ServiceError, ShuttingDown, TooLarge, UriTooLong, error_body, request_id)
from service.server.admission import RESEARCH_PATHS, Admission, Ticket, model_hint
from service.store import readiness

ACCESS = logging.getLogger("gunicorn.access")  # the logger and atoms gunicorn's access log had (logs.py)
LOG = logging.getLogger("gunicorn.error")
PROBES = frozenset({"health.healthz", "health.readyz", "health.prometheus",  # never queued behind scoring
                    "inference_v2.live", "inference_v2.ready"})
SCORING = frozenset({"inference_v2.infer"})  # scoring endpoints outside the scoring blueprint
UNTRACED = ",".join(sorted(readiness.PROBE_PATHS | readiness.V2_PROBE_PATHS | {"/metrics"}))
# A refused body is read and dropped up to this many times the body limit, each part within
# DRAIN_IDLE_S, so that the connection can carry the client's next request; past that, it is closed.
DRAIN_FACTOR = 4
DRAIN_IDLE_S = 0.5
LOAD_CHECK_S = 0.1  # how often requests admitted while the models load look whether they have
ENDPOINTS = frozenset({"/score", "/rerank", *RESEARCH_PATHS})  # metrics' endpoint label; anything else "other"
SHARED_COST_KEY = "?"  # a body naming no served model: one entry in the cost table, whatever it names


class ClientGone(Exception):
    """The client closed before its request was whole: nothing to answer."""


def budget_of(raw: str | None, default: float) -> float:
    """The request's budget in seconds: X-Request-Timeout, else `default`; BadHeader for a bad value."""
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value <= MAX_READ_TIMEOUT:  # also NaN
        raise BadHeader(f"X-Request-Timeout must be a number of seconds above 0 and at most {MAX_READ_TIMEOUT:g}.",
                        {"X-Request-Timeout": raw})
    return value


def head_bytes(scope: dict[str, Any]) -> int:
    """About the bytes of a request's line and headers: admission's size classes count the whole request."""
    line = len(scope["method"]) + len(scope["raw_path"]) + len(scope.get("query_string", b"")) + 12
    return line + sum(len(name) + len(value) + 4 for name, value in scope["headers"]) + 2


def resident_mib() -> float:
    """This process's resident memory in MiB (Linux /proc; elsewhere the peak, which ONNX Runtime's
    arenas keep anyway)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        import resource
        import sys

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / 2**20 if sys.platform == "darwin" else peak / 2**10


@dataclass
class Lane:
    """Requests alike in cost, with their admission and the threads that run them."""

    admission: Admission
    run: WSGIMiddleware
    reads_body: bool = True
    name: str = "other"  # what traces call it


class Exchange:
    """One request and its answer as the access log and the metrics see them."""

    def __init__(self, scope: dict[str, Any], send: Callable[[dict], Awaitable[None]]) -> None:
        self.scope, self._send, self.started = scope, send, time.perf_counter()
        self.headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in reversed(scope["headers"])}
        self.status, self.sent, self.request_id = 0, 0, request_id(self.headers.get("x-request-id"))
        self.close = False  # the answer says `Connection: close`

    async def send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            headers = list(message.get("headers", []))
            self.request_id = next((v.decode("latin-1") for k, v in headers if k.lower() == b"x-request-id"),
                                   self.request_id)
            if self.close:
                headers.append((b"connection", b"close"))
            message = {**message, "headers": headers}
        else:
            self.sent += len(message.get("body", b""))
        await self._send(message)

    async def refuse(self, error: ServiceError) -> None:
        """Answer `error` from the loop in the contract's form; the app never sees the request."""
        endpoint = self.scope["path"] if self.scope["path"] in ENDPOINTS else "other"
        metrics.REQUESTS.labels(endpoint, metrics.method_label(self.scope["method"]), str(error.status)).inc()
        metrics.ERRORS.labels(error.code).inc()
        if isinstance(error, Refused):
            metrics.REFUSED.labels(error.code).inc()
        payload = json.dumps(error_body(error, self.scope["path"])).encode()
        headers = {"content-type": "application/json", "content-length": str(len(payload)), **ANSWER_HEADERS,
                   **error.headers, "x-request-id": self.request_id}
        await self.send({"type": "http.response.start", "status": error.status,
                         "headers": [(k.lower().encode(), v.encode("latin-1")) for k, v in headers.items()]})
        await self.send({"type": "http.response.body", "body": payload})

    def log(self) -> None:
        query = self.scope.get("query_string", b"").decode("latin-1")
        client = self.scope.get("client") or ("-",)
        ACCESS.info('%(h)s "%(m)s %(U)s" %(s)s', {
            "h": client[0], "m": self.scope["method"], "U": self.scope["path"], "q": query, "s": self.status,
            "B": self.sent, "a": self.headers.get("user-agent", "-"),
            "D": int((time.perf_counter() - self.started) * 1e6), "{x-request-id}o": self.request_id})


class Front:
    """The ASGI app; see the module's docstring. `stopping_since` and `recycle` are the worker's."""

    def __init__(self, app: Any, settings: Settings) -> None:
        self.app, self.settings = app, settings
        self.routes = app.url_map.bind("localhost")
        self.store = app.extensions.get("dialscore.store")
        queue = settings.max_queue
        self.probes = Lane(Admission(1, queue), WSGIMiddleware(app, workers=1), reads_body=False, name="probes")
        self.scoring = Lane(Admission(settings.threads, queue), WSGIMiddleware(app, workers=settings.threads),
                            name="scoring")
        self.research = Lane(Admission(1, queue), WSGIMiddleware(app, workers=1), name="research")
        self.other = Lane(Admission(1, queue), WSGIMiddleware(app, workers=1))
        self.unrouted = Lane(self.other.admission, self.other.run, reads_body=False)
        self.held = 0  # bytes of bodies being read, not yet admitted
        self.stopping_since: float | None = None  # SIGTERM: what arrives from then on is refused
        self.recycle: Callable[[], None] = lambda: None
        self.max_requests = 0  # gunicorn's max_requests with its jitter (the worker's); 0: never
        self.answered = 0
        self._timer: asyncio.TimerHandle | None = None
        # A server span per request (W3C traceparent continued) where OTEL_* asks for tracing (service/tracing.py).
        self._traced = OpenTelemetryMiddleware(self.answer, excluded_urls=UNTRACED, exclude_spans=["receive", "send"]
                                               ) if tracing.init_tracing() else None

    def lane_of(self, method: str, path: str) -> Lane:
        """The lane of the endpoint the app routes `path` to; one that it answers unrouted (404, 405,
        a redirect) reads no body."""
        try:
            endpoint, _ = self.routes.match(path, method)
        except HTTPException:
            return self.unrouted
        except Exception:  # noqa: BLE001 - werkzeug's RequestRedirect is no HTTPException in every version
            return self.unrouted
        if endpoint in PROBES:
            return self.probes
        if endpoint in SCORING:
            return self.scoring
        if method == "OPTIONS":
            return self.other
        return {"scoring": self.scoring, "analysis": self.research}.get(endpoint.partition(".")[0], self.other)

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Awaitable[dict]],
                       send: Callable[[dict], Awaitable[None]]) -> None:
        await self._traced(scope, receive, send) if self._traced else await self.answer(scope, receive, send)

    async def answer(self, scope: dict[str, Any], receive: Callable[[], Awaitable[dict]],
                     send: Callable[[dict], Awaitable[None]]) -> None:
        if scope["type"] != "http":
            return
        exchange = Exchange(scope, send)
        arrived = time.monotonic()
        self.answered += 1
        recycling = self.over_memory(scope["path"]) or self.answered == self.max_requests
        if recycling:
            self.stopping_since = self.stopping_since or float("inf")  # served to the end, and no second recycle
        exchange.close = self.stopping_since is not None
        try:
            await self.serve(exchange, receive, arrived)
        except ClientGone:
            exchange.status = exchange.status or 499
        finally:
            exchange.log()
            if recycling:
                self.recycle()

    async def serve(self, exchange: Exchange, receive: Callable[[], Awaitable[dict]], arrived: float) -> None:
        scope, settings = exchange.scope, self.settings
        lane = self.lane_of(scope["method"], scope["path"])
        declares_body = exchange.headers.get("content-length", "0") != "0" or "transfer-encoding" in exchange.headers
        body = b""
        try:
            self.check_head(exchange)
            if self.stopping_since is not None and arrived >= self.stopping_since:
                exchange.close = True
                raise ShuttingDown("This server is shutting down; send the request again (another replica will "
                                   "answer it).", retry_after=1)
            budget = budget_of(exchange.headers.get("x-request-timeout"), settings.request_timeout)
            if lane.reads_body:
                body = await self.read_body(exchange, receive, arrived)
            elif declares_body:  # the app answers without reading it: the connection is kept if it ends soon
                ended = lane is self.unrouted and await drain(receive, True, DRAIN_FACTOR * settings.max_body_bytes)
                exchange.close = exchange.close or not ended
        except ServiceError as error:
            return await exchange.refuse(error)
        ticket = Ticket(scope["path"], head_bytes(scope) + len(body), arrived, arrived + budget, asyncio.get_running_loop().create_future(),
                        model=self.cost_key(self.model_in_path(scope) or model_hint(body[:4096])))
        refusal = lane.admission.offer(ticket, time.monotonic())
        if refusal is None:
            self.dispatch()
            try:
                refusal = await ticket.payload
            except asyncio.CancelledError:
                if ticket in lane.admission.queue:
                    lane.admission.queue.remove(ticket)
                raise
        tracing.record("admission", arrived, lane=lane.name, outcome=refusal.code if refusal else "admitted")
        if refusal is not None:
            return await exchange.refuse(refusal)
        metrics.QUEUE_WAIT.observe(time.monotonic() - arrived)
        try:
            await lane.run(scope, replay(body, receive), exchange.send)
        finally:
            now = time.monotonic()
            lane.admission.finished(ticket, now)
            if now > ticket.deadline:
                metrics.FINISHED_LATE.inc()
            self.dispatch()

    def check_head(self, exchange: Exchange) -> None:
        """The request line and header limits (DIALSCORE_MAX_REQUEST_LINE, _MAX_HEADERS, _MAX_HEADER_BYTES);
        uvicorn bounds the head as a whole (worker.py)."""
        s, scope = self.settings, exchange.scope
        if scope["http_version"] not in ("1.0", "1.1"):
            raise BadRequest(f"HTTP/{scope['http_version']} is not served; send HTTP/1.1.")
        line = len(scope["raw_path"]) + len(scope.get("query_string", b"")) + len(scope["method"]) + 12
        if line > s.max_request_line:
            raise UriTooLong("The request line is longer than the server accepts; send inputs in the JSON body, "
                             "not the URL.", {"max_request_line": s.max_request_line})
        if len(scope["headers"]) > s.max_headers or any(len(k) + len(v) + 2 > s.max_header_bytes
                                                        for k, v in scope["headers"]):
            raise HeadersTooLarge("The request's headers are too many or too long; send fewer or shorter headers.",
                                  {"max_headers": s.max_headers, "max_header_bytes": s.max_header_bytes})

    async def read_body(self, exchange: Exchange, receive: Callable[[], Awaitable[dict]], arrived: float) -> bytes:
        """The whole body; TooLarge (after draining what the client sends at once), RequestTimeout, or
        Overloaded where the worker holds DIALSCORE_MAX_PENDING_BYTES for requests not yet admitted."""
        limit, parts, size = self.settings.max_body_bytes, [], 0
        deadline = arrived + self.settings.read_timeout
        declared = exchange.headers.get("content-length", "")
        more = True
        try:
            while more and not (size > limit or declared.isdigit() and int(declared) > limit):
                message = await _receive(receive, deadline - time.monotonic())
                chunk, more = message.get("body", b""), message.get("more_body", False)
                size += len(chunk)
                if self.held + len(chunk) > self.settings.max_pending_bytes:
                    exchange.close = True
                    raise Overloaded("This worker holds as many request bodies as it may; send the request again "
                                     "after Retry-After seconds, or to another replica.",
                                     {"max_pending_bytes": self.settings.max_pending_bytes}, retry_after=1)
                self.held += len(chunk)
                parts.append(chunk)
        except asyncio.TimeoutError:
            exchange.close = True
            raise RequestTimeout(self.settings.read_timeout) from None
        finally:
            self.held -= sum(map(len, parts))
        if size <= limit and not more:
            return b"".join(parts)
        exchange.close = not await drain(receive, more, DRAIN_FACTOR * limit)
        raise TooLarge(f"The body is larger than {limit} bytes (DIALSCORE_MAX_BODY_BYTES); split the request.",
                       {"max_body_bytes": limit})

    def model_in_path(self, scope: dict[str, Any]) -> str:
        """The model an Open Inference Protocol path names (`/v2/models/<name>/infer`), as a body's hint reads."""
        if not scope["path"].startswith("/v2/models/"):
            return ""
        try:
            _, args = self.routes.match(scope["path"], scope["method"])
        except Exception:  # noqa: BLE001 - unrouted: no model
            return ""
        return json.dumps(args["name"]) if "name" in args else ""

    def cost_key(self, hint: str) -> str:
        """The model(s) a body names, as admission's cost table keys them: served names only."""
        served = set(getattr(self.store, "scorers", None) or ())
        try:
            named = json.loads(hint) if hint else []
        except ValueError:
            return SHARED_COST_KEY
        names = named if isinstance(named, list) else [named]
        if not names or not all(isinstance(n, str) and n in served for n in names):
            return SHARED_COST_KEY
        return ",".join(names)

    def loaded(self) -> bool:
        return self.store is None or bool(self.store.loaded)

    def dispatch(self) -> None:
        """Start what a free thread may take, refuse what can no longer meet its deadline, and wake at
        the next deadline (or to look whether the models have loaded: until then nothing starts)."""
        now, loaded = time.monotonic(), self.loaded()
        lanes = (self.probes, self.scoring, self.research, self.other)
        for lane in lanes:
            starting, dropped = lane.admission.due(now, start=loaded or lane is self.probes)
            for ticket in starting:
                ticket.payload.done() or ticket.payload.set_result(None)
            for ticket, refusal in dropped:
                ticket.payload.done() or ticket.payload.set_result(refusal)
        wake = [d for lane in lanes if (d := lane.admission.next_deadline()) is not None]
        if not loaded and any(lane.admission.queue for lane in lanes):
            wake.append(now + LOAD_CHECK_S)
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(max(0.0, min(wake) - now), self.dispatch) if wake else None

    def over_memory(self, path: str) -> bool:
        """Whether to recycle this worker after this answer (DIALSCORE_MAX_WORKER_MEMORY_MIB): ONNX Runtime's
        arenas keep the peak of the shapes seen, so memory, not a count, is what to recycle by. Probes
        never recycle: restarting the worker that answers one could keep the pod from ever being ready."""
        limit = self.settings.max_worker_memory_mib
        if not limit or path in readiness.PROBE_PATHS | readiness.V2_PROBE_PATHS or self.stopping_since is not None:
            return False
        held = resident_mib()
        if held <= limit:
            return False
        LOG.info("worker %s holds %.0f MiB, over DIALSCORE_MAX_WORKER_MEMORY_MIB=%d: restarting it after its "
                 "requests in flight", os.getpid(), held, limit)
        return True


async def _receive(receive: Callable[[], Awaitable[dict]], timeout: float) -> dict[str, Any]:
    message = await asyncio.wait_for(receive(), max(0.0, timeout))
    if message["type"] == "http.disconnect":
        raise ClientGone
    return message


async def drain(receive: Callable[[], Awaitable[dict]], more: bool, budget: int) -> bool:
    """Read and drop the rest of a refused body, up to `budget` bytes, each part within DRAIN_IDLE_S;
    whether it ended (the connection can carry the next request)."""
    try:
        while more and budget > 0:
            message = await _receive(receive, DRAIN_IDLE_S)
            budget -= len(message.get("body", b""))
            more = message.get("more_body", False)
    except (asyncio.TimeoutError, ClientGone):
        return False
    return not more


def replay(body: bytes, receive: Callable[[], Awaitable[dict]]) -> Callable[[], Awaitable[dict]]:
    """`receive` for the app: the body already read, then the connection's own (its disconnect)."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> dict[str, Any]:
        return pending.pop() if pending else await receive()

    return replayed


def create_front() -> Front:
    """The app gunicorn's worker loads (gunicorn.conf.py): the Flask app, loading its models, behind the front."""
    from service.app import create_app

    return Front(create_app(), load_server_settings())
