"""Sending requests with aiohttp and classifying how each ended: answers, refusals, timeouts, connection fates.

aiohttp tells the connection phases apart itself (ClientConnectorError before the connection exists,
ServerDisconnectedError or a reset after), so no raw sockets are needed for the classification.
"""
from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

# Every way a request can end, in report order.
OUTCOMES = ("ok", "refused_with_retry_after", "refused_without_retry_after", "client_timeout", "connect_refused",
            "reset_after_accept", "closed_unanswered", "other")
REFUSAL_STATUSES = (429, 503)


@dataclass
class Result:
    outcome: str  # one of OUTCOMES
    status: int | None  # the HTTP status, None where no answer came
    latency: float  # seconds from the request's start to its answer or failure
    start: float  # perf_counter() when it started
    detail: str = ""  # the error code of a refusal, or the exception of a failure

    def as_dict(self) -> dict:
        return asdict(self)


def classify_answer(status: int, retry_after: str | None) -> str:
    if status == 200:
        return "ok"
    if status in REFUSAL_STATUSES:
        return "refused_with_retry_after" if retry_after else "refused_without_retry_after"
    return "other"


def classify_error(exc: BaseException) -> str:
    """The outcome of a request that got no answer. Order matters: a connect error is an OSError too."""
    if isinstance(exc, aiohttp.ClientConnectorError):
        return "connect_refused" if isinstance(exc.os_error, ConnectionRefusedError) else "other"
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return "client_timeout"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "closed_unanswered"
    if isinstance(exc, ConnectionResetError) or getattr(exc, "errno", None) == 104:  # ECONNRESET
        return "reset_after_accept"
    return "other"


async def send(session: aiohttp.ClientSession, method: str, url: str, *, body: bytes | None = None,
               headers: dict[str, str] | None = None, timeout: float = 60.0) -> Result:
    """One request; never raises for a network failure, which becomes the Result's outcome."""
    start = time.perf_counter()
    try:
        async with session.request(method, url, data=body, headers=headers,
                                   timeout=aiohttp.ClientTimeout(total=timeout)) as response:
            payload = await response.read()
            outcome = classify_answer(response.status, response.headers.get("Retry-After"))
            detail = ""
            if response.status != 200 and payload[:1] == b"{":
                try:
                    detail = str((await response.json(content_type=None)).get("error", {}).get("code", ""))
                except (ValueError, AttributeError):
                    pass
            return Result(outcome, response.status, time.perf_counter() - start, start, detail)
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as exc:
        return Result(classify_error(exc), None, time.perf_counter() - start, start, type(exc).__name__)


def arrivals(rate: float, seconds: float, poisson: bool, seed: int) -> list[float]:
    """Send times (seconds from the start) of an open loop at `rate` a second: Poisson or evenly spaced."""
    rng = random.Random(seed)
    times, t = [], 0.0
    while True:
        t += rng.expovariate(rate) if poisson else 1.0 / rate
        if t >= seconds:
            return times
        times.append(t)


async def open_loop(make: Callable[[int], Awaitable[Result]], schedule: list[float],
                    ) -> tuple[list[asyncio.Task], list[float], float]:
    """Start request i at schedule[i] as its own task, never waiting for earlier ones. Returns the tasks
    (still running), each send's lateness against its schedule, and perf_counter() when sending stopped."""
    tasks: list[asyncio.Task] = []
    lags: list[float] = []
    begin = time.perf_counter()
    for i, at in enumerate(schedule):
        delay = begin + at - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        lags.append(max(0.0, time.perf_counter() - begin - at))
        tasks.append(asyncio.create_task(make(i)))
    return tasks, lags, time.perf_counter()


async def closed_loop(make: Callable[[int], Awaitable[Result]], clients: int, seconds: float
                      ) -> tuple[list[Result], float]:
    """`clients` loops, each sending its next request when the last is answered, for `seconds`."""
    results: list[Result] = []
    counter = iter(range(1 << 62))
    begin = time.perf_counter()
    stop = begin + seconds

    async def client() -> None:
        while time.perf_counter() < stop:
            results.append(await make(next(counter)))

    await asyncio.gather(*(client() for _ in range(clients)))
    return results, time.perf_counter() - begin


async def poll(make: Callable[[], Awaitable[Result]], every: float, halt: asyncio.Event) -> list[Result]:
    """Send one request every `every` seconds (or as soon as the last ends, when it took longer) until halt."""
    results: list[Result] = []
    next_at = time.perf_counter()
    while not halt.is_set():
        results.append(await make())
        next_at += every
        delay = next_at - time.perf_counter()
        if delay > 0:
            try:
                await asyncio.wait_for(halt.wait(), delay)
            except asyncio.TimeoutError:
                pass
        else:
            next_at = time.perf_counter()
    return results


def parse_metrics(text: str) -> dict[tuple[str, tuple], float]:
    """Prometheus text -> {(sample name, sorted labels): value}."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def counter_deltas(before: dict, after: dict, name: str) -> dict[str, float]:
    """How much each labelled series of counter `name` (its _total sample) grew; labels joined as k=v."""
    sample = name if name.endswith("_total") else name + "_total"
    keys = {k for k in (*before, *after) if k[0] == sample}
    return {",".join(f"{k}={v}" for k, v in key[1]) or "all": after.get(key, 0.0) - before.get(key, 0.0)
            for key in sorted(keys)}
