"""The gunicorn worker (AdmissionWorker): gthread, whose event loop reads each request whole before a
thread takes it up, admits or refuses it at once, and gives the kubelet's probes a thread of their own.

So an idle or slow client holds a socket, never a thread (intake.py); a request the worker cannot
finish within its budget gets 503 with Retry-After instead of a place in an unbounded queue
(admission.py); /healthz and /readyz never wait behind scoring. After SIGTERM the worker answers
what it had accepted, refuses what arrives meanwhile with 503 `shutting_down`, and closes its
listening socket only once none is left unanswered. gunicorn's own error answers are the
contract's JSON (answers.py).
"""
from __future__ import annotations

import errno
import os
import selectors
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from gunicorn import util
from gunicorn.workers.gthread import STOP_KEEPALIVE_LINGER, TConn, ThreadWorker

from service.config import MAX_READ_TIMEOUT, load_server_settings
from service.errors import BadHeader, Refused, RequestTimeout, ServiceError, ShuttingDown, request_id
from service.server.admission import HINT_BYTES, RESEARCH_PATHS, Admission, Ticket, model_hint
from service.server.answers import write_answer, write_contract_error
from service.server.intake import Head, Scan, scan_request
from service.server.sockets import CONTINUE, RequestSocket, body_unread, drain
from service.store import readiness

# Answered on the probe thread, never queued: the kubelet's probes and Prometheus' scrape.
LIGHT_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
SCORING_PATHS = frozenset({"/score", "/rerank", "/correlate", "/human-eval"})
TIMEOUT_HEADER = "x-request-timeout"
# The loop must get the GIL back quickly while request threads run Python between ONNX calls;
# at Python's default switch interval a refusal or a health check waited behind them.
SWITCH_INTERVAL_S = 0.001
SERVING_CHECK_S = 0.1  # how often a worker still loading rereads whether a sibling has loaded


@dataclass
class Intake:
    """What a connection has sent since its last request, and until when it may send the rest."""

    started: float
    deadline: float
    buffer: bytearray = field(default_factory=bytearray)
    continue_sent: bool = False


def read_timeout() -> float:
    """DIALSCORE_READ_TIMEOUT in seconds (docs/deploy.md gives the default and why)."""
    return load_server_settings().read_timeout


def budget_of(head: Head, default: float) -> float:
    """The request's budget in seconds: X-Request-Timeout, else `default`; BadHeader for a bad value."""
    raw = head.headers.get(TIMEOUT_HEADER)
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


class AdmissionWorker(ThreadWorker):
    """gthread with admission control; see the module's docstring."""

    def init_process(self) -> None:
        util.write_error = write_contract_error  # gunicorn's HTML error page has no setting (benoitc/gunicorn#993)
        settings = load_server_settings()
        self.read_timeout = settings.read_timeout
        self.request_timeout = settings.request_timeout
        self.body_limit = settings.max_body_bytes
        self.admission = Admission(self.cfg.threads, settings.max_queue)
        self.research = Admission(1, settings.max_queue)  # /correlate, /human-eval: a thread of their own
        self.intakes: dict[TConn, Intake] = {}
        self.tickets: dict[TConn, Ticket] = {}
        self.probe_pool = ThreadPoolExecutor(1, thread_name_prefix="probe")
        self.side_pool = ThreadPoolExecutor(1, thread_name_prefix="handover")
        self.research_pool = ThreadPoolExecutor(1, thread_name_prefix="research")
        self.terminating = False  # SIGTERM, as against a recycle (max_requests, memory)
        self._serving, self._serving_checked = True, -1.0
        self.store: Any = None
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        super().init_process()

    # --- the loop ---------------------------------------------------------------------------------
    def run(self) -> None:
        self.poller.register(self.method_queue.fileno(), selectors.EVENT_READ, self.method_queue.run_callbacks)
        self.set_accept_enabled(True)
        while self.alive:
            self.notify()
            self.set_accept_enabled(self.nr_conns < self.worker_connections and self.serving())
            self.wait_for_and_dispatch_events(timeout=self.loop_timeout())
            if not self.is_parent_alive():
                break
            self.sweep()
        self.stop()

    def handle_exit(self, sig: int, frame: Any) -> None:
        self.terminating = True
        super().handle_exit(sig, frame)

    def loop_timeout(self) -> float:
        """Seconds until the next intake or queue deadline, at most one (the heartbeat)."""
        due = [intake.deadline for intake in self.intakes.values()]
        due += [d for lane, _ in self.lanes() if (d := lane.next_deadline()) is not None]
        longest = 1.0 if self.loaded() else SERVING_CHECK_S
        return max(0.0, min([longest, *(d - time.monotonic() for d in due)]))

    def sweep(self) -> None:
        self.murder_keepalived()
        self.murder_intakes()
        self.dispatch()

    def loaded(self) -> bool:
        return self.store is None or self.store.loaded

    def serving(self) -> bool:
        """Whether to accept: once a worker of the pod has loaded, one still loading leaves new
        connections to it, so a pod that is ready does not answer 503 not_ready."""
        if self.loaded():
            return True
        now = time.monotonic()
        if now - self._serving_checked >= SERVING_CHECK_S:
            self._serving_checked = now
            self._serving = not (readiness.loaded_workers() or set()) - {os.getpid()}
        return self._serving

    def stop(self) -> None:
        """After SIGTERM: answer every accepted connection (those accepted from now on get 503
        `shutting_down`), and close the listening socket once none is left and none is waiting in its
        backlog. After a recycle (max_requests, memory), stop accepting at once: siblings take them."""
        give_up = time.monotonic() + self.cfg.graceful_timeout
        self._cap_keepalive(time.monotonic() + STOP_KEEPALIVE_LINGER)
        while time.monotonic() < give_up:
            self.notify()
            self.set_accept_enabled(self.terminating and self.nr_conns < self.worker_connections)
            self.wait_for_and_dispatch_events(timeout=min(self.loop_timeout(), 0.1))
            self.sweep()
            if self.nr_conns == 0 and not (self.terminating and self.accept_backlog()):
                break
        self.set_accept_enabled(False)
        for conn in list(self.intakes):
            self.end_intake(conn)
            self.close_conn(conn)
        self.murder_keepalived(force=True)
        for pool in (self.tpool, self.probe_pool, self.side_pool, self.research_pool):
            pool.shutdown(wait=False)
        self.poller.close()
        self.method_queue.close()
        for listener in self.sockets:
            listener.close()

    def accept_backlog(self) -> int:
        """Accept what waits in the listening sockets' backlog (closing them would reset it)."""
        taken = 0
        for listener in self.sockets:
            while True:
                before = self.nr_conns
                self.accept(listener)
                if self.nr_conns == before:
                    break
                taken += 1
        return taken

    # --- connections ------------------------------------------------------------------------------
    def accept(self, listener: Any) -> None:
        if self.cfg.is_ssl:  # TLS is never served (a proxy in front terminates it); gthread's path then
            return super().accept(listener)
        try:
            client, address = listener.accept()
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        conn = TConn(self.cfg, RequestSocket(client), address, listener.getsockname())
        conn.after_stop = self.terminating
        self.start_intake(conn)

    def enqueue_req(self, conn: TConn) -> None:
        # gthread's entry for a kept-alive connection that turned readable, or that holds read-ahead bytes
        self.start_intake(conn)

    def start_intake(self, conn: TConn) -> None:
        if not isinstance(conn.sock, RequestSocket):  # TLS: gthread's own way
            return self.submit(conn, self.tpool)
        now = time.monotonic()
        intake = Intake(now, now + self.read_timeout)
        intake.buffer += getattr(conn, "leftover", b"")
        if conn.parser is not None:
            intake.buffer += conn.parser.unreader.take_buffered()
        conn.leftover = b""
        self.intakes[conn] = intake
        conn.sock.setblocking(False)
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self.on_intake_readable, conn))
        if intake.buffer:
            self.examine(conn, intake)

    def on_intake_readable(self, conn: TConn, _sock: Any) -> None:
        intake = self.intakes.get(conn)
        if intake is None:
            return
        try:
            data = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:  # the client closed (or reset) before its request was whole
            self.end_intake(conn)
            self.close_conn(conn)
            return
        intake.buffer += data
        self.examine(conn, intake)

    def examine(self, conn: TConn, intake: Intake) -> None:
        scanned = scan_request(intake.buffer, self.body_limit)
        head = scanned.head
        scoring = head is not None and head.method == "POST" and head.path in SCORING_PATHS
        if scanned.state is Scan.WAITING and (head is None or scoring):
            if scoring and head.expects_continue and not scanned.body_started and not intake.continue_sent:
                intake.continue_sent = True
                try:
                    conn.sock.send(CONTINUE)
                except OSError:
                    pass
            return
        self.end_intake(conn)
        if scanned.state is Scan.WHOLE and scoring:
            conn.sock.replay(bytes(intake.buffer[:scanned.end]), intake.continue_sent)
            conn.leftover = bytes(intake.buffer[scanned.end:])
            return self.route(conn, head, intake, scanned.end)
        # Everything else goes to a thread once its head is here, with what came so far: the app answers
        # it without reading a body it does not need (a health check, a 404, a 413), gunicorn refuses a bad one.
        conn.sock.replay(bytes(intake.buffer), intake.continue_sent)
        conn.leftover = b""
        light = head is not None and head.path in LIGHT_PATHS and head.method in ("GET", "HEAD")
        self.submit(conn, self.probe_pool if light else self.side_pool)

    def route(self, conn: TConn, head: Head, intake: Intake, size: int) -> None:
        """Admit a whole scoring request, or refuse it from the loop."""
        conn.request_id = request_id(head.headers.get("x-request-id"))
        if getattr(conn, "after_stop", False):
            return self.refuse(conn, head, ShuttingDown(
                "This server is shutting down; send the request again (another replica will answer it).",
                retry_after=1), "shutting_down")
        try:
            budget = budget_of(head, self.request_timeout)
        except BadHeader as error:
            return self.refuse(conn, head, error, None)
        conn.head = head
        ticket = Ticket(head.path, size, intake.started, intake.started + budget, payload=conn,
                        model=model_hint(intake.buffer[:min(size, HINT_BYTES)]))
        lane = self.research if head.path in RESEARCH_PATHS else self.admission
        refusal = lane.offer(ticket, time.monotonic())
        if refusal is not None:
            return self.refuse(conn, head, refusal, refusal.code)
        self.tickets[conn] = ticket
        self.dispatch()

    def dispatch(self) -> None:
        from service import metrics  # not at import: the master imports this module before metrics' folder is set

        now = time.monotonic()
        for lane, pool in self.lanes():
            # While its models load, a worker holds what it admitted (within each one's budget)
            starting, dropped = lane.due(now, start=self.loaded())
            for ticket, refusal in dropped:
                conn = ticket.payload
                self.tickets.pop(conn, None)
                self.refuse(conn, conn.head, refusal, refusal.code)
            for ticket in starting:
                metrics.QUEUE_WAIT.observe(now - ticket.arrived)
                self.submit(ticket.payload, pool)

    def lanes(self) -> tuple[tuple[Admission, ThreadPoolExecutor], ...]:
        """Each admission with the threads it starts requests on."""
        return (self.admission, self.tpool), (self.research, self.research_pool)

    def submit(self, conn: TConn, pool: ThreadPoolExecutor) -> None:
        conn.data_ready = True  # whole, or handed over: gthread must not wait for data in the thread
        future = pool.submit(self.handle, conn)
        future.add_done_callback(lambda done: self.method_queue.defer(self.finish_request, conn, done))

    def refuse(self, conn: TConn, head: Head, error: ServiceError, reason: str | None) -> None:
        """Answer from the loop, then close: the request is never computed."""
        from service import metrics

        if reason is not None and isinstance(error, Refused):
            metrics.REFUSED.labels(reason).inc()
        endpoint = head.path if head.path in SCORING_PATHS else "other"
        metrics.REQUESTS.labels(endpoint, metrics.method_label(head.method), str(error.status)).inc()
        write_answer(conn.sock, error, getattr(conn, "request_id", request_id(None)))
        self.log.debug("answered %s %s %s: %s", head.method, head.path, error.status, error.code)
        self.close_conn(conn)

    def finish_request(self, conn: TConn, fs: Any) -> None:
        from service import metrics

        ticket = self.tickets.pop(conn, None)
        if ticket is not None:
            now = time.monotonic()
            (self.research if ticket.path in RESEARCH_PATHS else self.admission).finished(ticket, now)
            if now > ticket.deadline:
                metrics.FINISHED_LATE.inc()
        kept = not fs.cancelled() and fs.exception() is None and fs.result() is True
        if kept and self.alive and getattr(conn, "leftover", b""):
            self.start_intake(conn)  # a pipelined request already read: the socket will not turn readable
        else:
            super().finish_request(conn, fs)
        if ticket is not None:
            self.dispatch()

    def end_intake(self, conn: TConn) -> None:
        self.intakes.pop(conn, None)
        try:
            self.poller.unregister(conn.sock)
        except (KeyError, ValueError, OSError):
            pass

    def close_conn(self, conn: TConn) -> None:
        self.nr_conns -= 1
        conn.close()

    def murder_intakes(self) -> None:
        """Requests not whole within DIALSCORE_READ_TIMEOUT: 408 where something came, else just closed."""
        now = time.monotonic()
        for conn, intake in list(self.intakes.items()):
            if now < intake.deadline:
                continue
            self.end_intake(conn)
            if intake.buffer:
                self.log.info("request not received within %.0f s from %s; answered 408", self.read_timeout,
                              conn.client[0] if conn.client else "?")
                write_answer(conn.sock, RequestTimeout(self.read_timeout), request_id(None))
            self.close_conn(conn)

    # --- in the request thread ----------------------------------------------------------------------
    def handle(self, conn: Any) -> Any:
        armed = isinstance(conn.sock, RequestSocket)
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
        self.store = getattr(app, "extensions", {}).get("dialscore.store")  # loading in the background

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
        if isinstance(conn.sock, RequestSocket):
            conn.sock.request = req
        try:
            return super().handle_request(req, conn)
        finally:
            if isinstance(conn.sock, RequestSocket):
                conn.sock.request = None

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        # RequestTimeout is not an OSError, which gunicorn would log as a socket failure with a traceback:
        # it reaches here from the header read; from the body read the app answers it (service/api).
        if isinstance(exc, RequestTimeout):
            self.log.info("request not received within %.0f s from %s; answered 408", self.read_timeout,
                          addr[0] if addr else "?")
            try:
                write_contract_error(client, exc.status, "Request Timeout", "", exc.body())  # as the app's 408
                # gunicorn then closes "gracefully", lingering in the worker's main loop for
                # the client to close first; a client that stalled would not, so both sides end here.
                client.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        super().handle_error(req, client, addr, exc)
