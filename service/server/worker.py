"""The gunicorn worker (DialscoreWorker): uvicorn's, parsing with h11, serving the front (front.py).

h11, not httptools: h11 bounds a request's head and chunked trailers (`h11_max_incomplete_event_size`),
httptools neither. uvicorn's protocol changes here: its 400 is the contract's JSON (431 for a head past
DIALSCORE_MAX_HEAD_BYTES), a head must arrive within the read timeout, and a client that half-closes
after its request still gets the answer. After SIGTERM the worker answers 503 `shutting_down` and
closes its listener only once no connection is open: closed with connections in its backlog, it would
reset them.
"""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import time
from http import HTTPStatus
from typing import Any

import h11
from gunicorn.arbiter import Arbiter
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import Server
from uvicorn_worker import UvicornWorker

from service.config import load_server_settings
from service.errors import BadRequest, HeadersTooLarge, RequestTimeout, ServiceError, contract_answer, request_id
from service.observability import metrics
from service.observability.logs import log_access
from service.store import readiness

SWITCH_INTERVAL_S = 0.001  # the loop gets the GIL back quickly from request threads running Python
QUIET_TICKS = 3  # SIGTERM: ticks of DRAIN_TICK_S with no connection open before the listener closes
DRAIN_TICK_S = 0.01


class ContractH11Protocol(H11Protocol):
    """uvicorn's h11 protocol; see the module's docstring."""

    stopping = False  # set on every connection at shutdown: the request under way is the last
    discarding = False  # bytes past the last request arrived: what comes is dropped
    read_timeout = 10.0  # DIALSCORE_READ_TIMEOUT, set by the worker
    max_head_bytes = 32768  # DIALSCORE_MAX_HEAD_BYTES, set by the worker: h11's bound on an event still arriving

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.head_timer: asyncio.TimerHandle | None = None
        self.watch_head()

    def data_received(self, data: bytes) -> None:
        if self.discarding:  # read, so that the close sends no reset, and dropped
            return
        super().data_received(data)
        self.watch_head()
        if self.stopping and self.cycle is not None:
            self.cycle.keep_alive = False

    def watch_head(self) -> None:
        """Arm the read deadline while a request's head is awaited; disarm it after."""
        awaiting = self.cycle is None or self.cycle.response_complete
        if awaiting and self.head_timer is None:
            self.head_timer = self.loop.call_later(self.read_timeout, self.head_too_late)
        elif not awaiting and self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def head_too_late(self) -> None:
        """408 where something of a request came, else a silent close (an idle connection)."""
        self.head_timer = None
        if self.transport.is_closing() or not (self.cycle is None or self.cycle.response_complete):
            return
        if self.conn.trailing_data[0]:
            self.write_fresh(RequestTimeout(self.read_timeout))
        self.transport.close()

    def write_fresh(self, error: ServiceError) -> None:
        """Answer where h11 has read no request: a fresh h11 state, which may answer from IDLE, takes the events."""
        metrics.ERRORS.labels(error.code).inc()
        metrics.REQUESTS.labels("unmatched", "other", str(error.status)).inc()
        fresh = h11.Connection(h11.SERVER)
        headers, payload = contract_answer(error, answer_id := request_id(None))
        head = [*self.server_state.default_headers, *headers, (b"connection", b"close")]  # as uvicorn's answers
        for event in (h11.Response(status_code=error.status, headers=head, reason=HTTPStatus(error.status).phrase),
                      h11.Data(data=payload), h11.EndOfMessage()):
            self.transport.write(fresh.send(event) or b"")
        unread = {"client": self.client, "method": "-", "path": "-", "headers": []}  # no request was read
        log_access(unread, error.status, len(payload), 0.0, answer_id)

    def send_400_response(self, msg: str) -> None:
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete and (cycle.response_started or not cycle.more_body):
            # An answer is under way, or due to a whole request (bytes past `Connection: close`): it is the
            # last, whole; the bytes after it are dropped.
            cycle.keep_alive, self.discarding = False, True
            return
        if len(self.conn.trailing_data[0]) > self.max_head_bytes:  # what h11 holds of a head or trailers still arriving
            self.write_fresh(HeadersTooLarge("The request's head (or its chunked trailers) is larger than the server "
                                             "accepts; send fewer or shorter headers.",
                                             {"max_head_bytes": self.max_head_bytes}))
        else:
            self.write_fresh(BadRequest("The request is not valid HTTP/1.1 (request line, header or chunked body); "
                                        "send a well-formed request.", {"reason": msg}))
        self.transport.close()

    def _unsupported_upgrade_warning(self) -> None:
        """Silent: an upgrade is served as HTTP/1.1 (ws "none"), and uvicorn's advice to install a
        WebSocket library, two warnings a request any client can send, does not apply."""

    def eof_received(self) -> bool:  # type: ignore[override]
        """After the client's FIN, answer a request that arrived whole, or finish an answer under way, then
        close (uvicorn closes after an answer not kept alive); else close now."""
        cycle = self.cycle
        answering = bool(cycle and not cycle.response_complete and (cycle.response_started or not cycle.more_body))
        if answering:
            cycle.keep_alive = False
        return answering

    def connection_lost(self, exc: Exception | None) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
        super().connection_lost(exc)

    def shutdown(self) -> None:
        """A connection with no request yet stays open for one to come (uvicorn would close it, dropping a
        request under way): it is answered, then closed."""
        self.stopping = True
        if self.cycle is None:
            return
        super().shutdown()


class DrainingServer(Server):
    """uvicorn's server, which after SIGTERM drains as the module's docstring says."""

    def __init__(self, config: Any, front: Any, master: int) -> None:
        super().__init__(config)
        self.front, self.master = front, master
        front.recycle = self.recycle
        front.max_requests, config.limit_max_requests = config.limit_max_requests or 0, None  # counted by front

    def recycle(self) -> None:
        """Stop taking connections now (should_exit is seen at the loop's next tick), then exit."""
        for server in self.servers:
            server.close()
        self.should_exit = True

    def handle_exit(self, sig: int, frame: Any) -> None:
        if sig == signal.SIGTERM and self.front.stopping_since is None:
            self.front.stopping_since = time.monotonic()
            readiness.forget(os.getpid())  # draining, it serves no more: a sibling must not count it to recycle
        super().handle_exit(sig, frame)
        self.force_exit = self.force_exit or sig == signal.SIGQUIT  # gunicorn's quick shutdown (its SIGINT, SIGQUIT)

    async def on_tick(self, counter: int) -> bool:
        if os.getppid() != self.master and self.front.stopping_since is None:  # the master was killed: drain and exit
            logging.getLogger("gunicorn.error").info("worker %s: its master has gone; shutting down", os.getpid())
            self.handle_exit(signal.SIGTERM, None)  # serving on, unsupervised, it would also hold the port
        return await super().on_tick(counter)

    async def shutdown(self, sockets: list | None = None) -> None:
        if self.front.stopping_since is not None and self.front.stopping_since != float("inf"):
            give_up, quiet = time.monotonic() + self.config.timeout_graceful_shutdown, 0
            while quiet < QUIET_TICKS and time.monotonic() < give_up and not self.force_exit:
                for connection in list(self.server_state.connections):
                    connection.shutdown()
                quiet = 0 if self.server_state.connections else quiet + 1
                await asyncio.sleep(DRAIN_TICK_S)
        await super().shutdown(sockets)


class DialscoreWorker(UvicornWorker):
    """gunicorn's worker process running uvicorn with the settings above."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        settings = load_server_settings()
        ContractH11Protocol.read_timeout, ContractH11Protocol.max_head_bytes = settings.read_timeout, settings.max_head_bytes
        # ws "none": an Upgrade to WebSocket is served as plain HTTP by the front, never handed to a
        # WebSocket library that happens to be installed (it answered 400 outside the contract and admission).
        self.CONFIG_KWARGS = {"loop": "asyncio", "http": ContractH11Protocol, "ws": "none", "lifespan": "off",
                              "access_log": False, "server_header": False, "h11_max_incomplete_event_size": settings.max_head_bytes,
                              "timeout_graceful_shutdown": settings.graceful_timeout}
        super().__init__(*args, **kwargs)

    def init_process(self) -> None:
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        # gunicorn's heartbeat file is made with the wall clock's time, which its check against the monotonic
        # clock never finds stale: a first beat now makes DIALSCORE_WORKER_TIMEOUT bound the model loading.
        self.notify()
        super().init_process()

    async def callback_notify(self) -> None:
        """gunicorn's heartbeat, withheld once a request has run DIALSCORE_WORKER_TIMEOUT past its deadline, so
        that gunicorn replaces the worker: a thread stuck in a model would keep its lane refusing for good."""
        late = self.wsgi.overdue(time.monotonic(), self.cfg.timeout) if self.cfg.timeout else None
        if late is None:
            return self.notify()
        logging.getLogger("gunicorn.error").error(
            "worker %s: %s has run %.0f s past its deadline; withholding the heartbeat so that gunicorn replaces "
            "this worker", os.getpid(), late.route, time.monotonic() - late.deadline)

    async def _serve(self) -> None:
        self.config.app = self.wsgi
        server = DrainingServer(config=self.config, front=self.wsgi, master=self.ppid)
        # The server's, not uvicorn_worker's handler, which sets a flag uvicorn never reads: the master
        # waited out the graceful timeout, then killed the workers.
        asyncio.get_running_loop().add_signal_handler(signal.SIGQUIT, server.handle_exit, signal.SIGQUIT, None)
        await server.serve(sockets=self.sockets)
        if not server.started:
            sys.exit(Arbiter.WORKER_BOOT_ERROR)
