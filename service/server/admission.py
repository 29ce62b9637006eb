"""Which requests a worker takes on, and when each starts (Admission); no sockets, no clock of its own.

A request's deadline is its arrival plus its budget (X-Request-Timeout, else DIALSCORE_REQUEST_TIMEOUT).
It is refused at once, 503 `overloaded`, when the queue is full or the work ahead and its own expected
time would pass its deadline; a queued request that can no longer make it is dropped, 503
`deadline_exceeded`, never computed. Expected times are moving averages of this worker's measurements
per endpoint, model and body size. Each lane of the worker (front.py) has its own Admission and threads.
"""
from __future__ import annotations

import json
import math
import re
from collections import deque
from dataclasses import dataclass, field

from service.errors import DeadlineExceeded, Overloaded, Refused

SMOOTHING = 0.2  # weight of the newest measurement in the moving average
# Admitted only with this share of its expected run to spare: times vary (a sibling worker idle or busy
# changes a request's cores), and one admitted at the edge of its budget is dropped late or finishes late.
HEADROOM = 0.3
# The wait is the less certain part (the requests ahead may each run long): counted this many times over.
WAIT_FACTOR = 2.0
MAX_RETRY_AFTER_S = 30
UNMEASURED_S = 1.0  # the least a request of a kind not measured yet is expected to take
# A kind not measured for this long is measured again by the next request a free thread can take, and
# that measurement replaces the average: one costly request (a /correlate's slowest methods at one size)
# would otherwise keep refusing cheaper ones of its kind for good, since a refusal measures nothing.
REMEASURE_S = 10.0


MODEL_FIELD = re.compile(rb'"models?"\s*:\s*(\[[^\]]{0,400}\]|"[^"]{0,100}")')
RESAMPLES_FIELD = re.compile(rb'"resamples"\s*:\s*([0-9]{1,9})')
HINT_BYTES = 4096  # where a body names its model(s): the schema's first fields, in practice


def named_models(body: bytes | bytearray) -> list[object]:
    """The model(s) a body names, read without parsing the body (a cost class, never trusted as input)."""
    found = MODEL_FIELD.search(body[:HINT_BYTES])
    try:
        named = json.loads(found.group(1)) if found else []
    except ValueError:
        return [None]  # named, but not readably: no served model
    return named if isinstance(named, list) else [named]


def resamples_class(body: bytes | bytearray) -> str:
    """The resamples a body asks for, to a power of two ("" where none): at one body size, a /correlate's
    time grows a thousandfold with them, so they part its kinds."""
    found = RESAMPLES_FIELD.search(body)
    return f"~{int(found.group(1)).bit_length()}" if found else ""


def size_class(body_bytes: int) -> int:
    """The body's size to a power of two."""
    return max(1, body_bytes).bit_length()


@dataclass(eq=False)
class Ticket:
    """One request from its arrival to its answer; `payload` is the worker's (the connection)."""

    route: str  # the app's route (`/score`, `/v2/models/<name>/infer`, "unmatched"), never the raw path
    body_bytes: int
    arrived: float
    deadline: float
    payload: object = None
    model: str = ""  # the cost key: the model(s) it names, and a /correlate's resamples class
    started: float | None = None
    kind: tuple[str, str] = field(init=False)  # requests alike in cost per byte: endpoint and model(s)

    def __post_init__(self) -> None:
        self.kind = (self.route, self.model)

    @property
    def budget(self) -> float:
        return self.deadline - self.arrived


class Admission:
    """The queue and the running set of one worker with `threads` request threads."""

    def __init__(self, threads: int, max_queue: int) -> None:
        self.threads = threads
        self.max_queue = max_queue
        self.queue: deque[Ticket] = deque()
        self.running: list[Ticket] = []
        self._times: dict[tuple[str, str], dict[int, float]] = {}  # kind -> size class -> seconds
        self._measured_at: dict[tuple[str, str], float] = {}

    def estimate(self, ticket: Ticket) -> float | None:
        """Seconds the request is expected to run: the average of its kind and size, else of its kind's
        nearest size measured, in proportion to the size; None before its kind's first measurement."""
        sizes = self._times.get(ticket.kind)
        if not sizes:
            return None
        size = size_class(ticket.body_bytes)
        nearest = min(sizes, key=lambda known: (abs(known - size), known))
        return sizes[nearest] * 2.0 ** (size - nearest)

    def expected(self, ticket: Ticket) -> float:
        """estimate(), else UNMEASURED_S or the longest time measured, whichever is more: a new worker
        that took a burst of unknown cost for cheap queued all of it, and dropped it late."""
        known = self.estimate(ticket)
        if known is not None:
            return known
        return max([UNMEASURED_S, *(max(sizes.values()) for sizes in self._times.values())])

    def measured(self, ticket: Ticket, now: float) -> bool:
        """Whether its kind's times are known, recent (REMEASURE_S), and of a body at least a quarter of its
        size: a small body's time is mostly fixed costs, which scaled up by size overstate a large one's."""
        sizes = self._times.get(ticket.kind)
        return bool(sizes) and now - self._measured_at[ticket.kind] <= REMEASURE_S and (
            max(sizes) >= size_class(ticket.body_bytes) - 1)  # type: ignore[type-var]

    def _work_ahead(self, now: float) -> float:
        """Thread-seconds of work before a new request can start."""
        left = sum(max(self.expected(t) - (0.0 if t.started is None else now - t.started), 0.1 * self.expected(t))
                   for t in self.running)
        return left + sum(self.expected(t) for t in self.queue)

    def start_wait(self, now: float) -> float:
        """Seconds until a thread is expected to take up a request that arrives now."""
        if len(self.running) < self.threads and not self.queue:
            return 0.0
        return self._work_ahead(now) / self.threads

    def offer(self, ticket: Ticket, now: float) -> Refused | None:
        """Queue the request, or the refusal to answer it with."""
        wait = self.start_wait(now)
        details = {"queued": len(self.queue), "running": len(self.running), "expected_wait_s": round(wait, 3),
                   "expected_run_s": round(self.expected(ticket), 3), "budget_s": round(ticket.budget, 3)}
        if now >= ticket.deadline:  # spent while the request arrived (its budget counts from the first byte)
            return self._expired(ticket, now)
        if not self.measured(ticket, now) and len(self.running) < self.threads and not self.queue:
            self.queue.append(ticket)  # a free thread takes a kind not measured (lately): the only way to measure it
            return None
        if len(self.queue) + len(self.running) >= self.threads + self.max_queue:  # a free thread is no queue place
            return Overloaded("This worker's queue is full; send the request again after Retry-After seconds, "
                              "or to another replica.", {**details, "max_queue": self.max_queue},
                              retry_after=retry_after(wait))
        if now + WAIT_FACTOR * wait + (1 + HEADROOM) * self.expected(ticket) > ticket.deadline:
            return Overloaded("The server could not start and finish this request within its budget "
                              "(X-Request-Timeout, else the server's default); send it again after Retry-After seconds, with a larger "
                              "budget, or to another replica.", details, retry_after=retry_after(wait))
        self.queue.append(ticket)
        return None

    def due(self, now: float) -> tuple[list[Ticket], list[tuple[Ticket, Refused]]]:
        """The requests to start now (marked running), and the queued ones whose deadline can no longer
        be met, with their refusal (taken off the queue)."""
        dropped = [(t, self._expired(t, now)) for t in self.queue
                   if now >= t.deadline or (self.measured(t, now) and now + self.expected(t) > t.deadline)]
        for ticket, _ in dropped:
            self.queue.remove(ticket)
        starting: list[Ticket] = []
        for ticket in list(self.queue):
            if len(self.running) >= self.threads:
                break
            self.queue.remove(ticket)
            ticket.started = now
            self.running.append(ticket)
            starting.append(ticket)
        return starting, dropped

    def _expired(self, ticket: Ticket, now: float) -> Refused:
        waited = now - ticket.arrived
        passed = now >= ticket.deadline
        reason = "its budget ran out" if passed else "what is left of its budget is less than it takes"
        return DeadlineExceeded(f"{waited:.2f} s after the request began to arrive, before a thread took it, "
                                f"{reason}; it was not computed. Send it again with a larger budget "
                                "(X-Request-Timeout), or to another replica.",
                                {"waited_s": round(waited, 3), "budget_s": round(ticket.budget, 3),
                                 "expected_run_s": round(self.expected(ticket), 3)},
                                retry_after=retry_after(self.start_wait(now)))

    def finished(self, ticket: Ticket, now: float) -> None:
        """Take a running request off and learn from its time."""
        if ticket in self.running:
            self.running.remove(ticket)
        if ticket.started is None:
            return
        took = now - ticket.started
        sizes = self._times.setdefault(ticket.kind, {})
        if ticket.started - self._measured_at.get(ticket.kind, ticket.started) > REMEASURE_S:
            sizes.clear()  # measured again after a long gap (REMEASURE_S): the old times are not kept
        size = size_class(ticket.body_bytes)
        old = sizes.get(size)
        sizes[size] = took if old is None else (1 - SMOOTHING) * old + SMOOTHING * took
        self._measured_at[ticket.kind] = now

    def next_wake(self, now: float) -> float | None:
        """When `due` would next drop a queued request (the worker's loop wakes then): a measured kind's latest
        start, any other's deadline; never a time `due` would let pass, which would wake the loop for nothing."""
        wake = min((t.deadline - self.expected(t) if self.measured(t, now) else t.deadline for t in self.queue),
                   default=None)
        return None if wake is None else max(wake, now)  # deadline - expected may round a step below `now`


def retry_after(wait: float) -> int:
    """Whole seconds for Retry-After: the expected wait, at least 1, at most MAX_RETRY_AFTER_S."""
    return min(MAX_RETRY_AFTER_S, max(1, math.ceil(wait)))
