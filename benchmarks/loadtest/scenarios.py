"""The five scenarios: capacity, overload, idle connections, SIGTERM, worker crash. Each returns a dict of
figures (latencies in ms, rates a second) that report.py lays beside the acceptance targets."""
from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import aiohttp
import numpy as np

from benchmarks.loadtest import client
from benchmarks.loadtest.client import OUTCOMES, Result
from benchmarks.loadtest.server import OwnServer
from benchmarks.loadtest.workload import rerank_body

JSON = {"Content-Type": "application/json"}


def progress(line: str) -> None:
    print(f"[loadtest] {line}", file=sys.stderr, flush=True)


def ms(values: list[float], q: float) -> float | None:
    return None if not values else round(float(np.percentile(values, q)) * 1000, 1)


def outcomes(results: list[Result]) -> dict[str, int]:
    counts = Counter(r.outcome for r in results)
    return {name: counts.get(name, 0) for name in OUTCOMES}


def latency_summary(results: list[Result]) -> dict:
    """Polls or lone requests: how many, p50/p99/max of all of them (a failure at its failing time), failures."""
    lat = [r.latency for r in results]
    return {"requests": len(results), "p50_ms": ms(lat, 50), "p99_ms": ms(lat, 99), "max_ms": ms(lat, 100),
            "failures": sum(r.outcome != "ok" for r in results)}


class Target:
    """The server under test: the one at --url, or our own, started afresh for each scenario that asks."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.server: OwnServer | None = None
        self.headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}

    @property
    def owned(self) -> bool:
        return not self.args.url

    async def fresh(self) -> str:
        """A server in a known state: our own, restarted (the last one killed, its backlog with it); with
        --reuse-server the running one where there is one (quicker, for the smoke test)."""
        if not self.owned:
            return self.args.url.rstrip("/")
        if self.args.reuse_server and self.server is not None and self.server.process.poll() is None:
            return self.server.url
        self.close()
        progress("starting a fresh server (python -m service, default settings)")
        self.server = await asyncio.to_thread(OwnServer(self.args.workers).start)
        return self.server.url

    def close(self) -> None:
        if self.server is not None:
            self.server.stop(kill=True)
            self.server = None

    def session(self, force_close: bool = False) -> aiohttp.ClientSession:
        return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, force_close=force_close),
                                     headers=self.headers)


def _rerank(session: aiohttp.ClientSession, url: str, args: argparse.Namespace, deadline: float | None,
            timeout: float) -> Callable[[int], Awaitable[Result]]:
    headers = {**JSON, **({"X-Request-Timeout": f"{deadline:g}"} if deadline else {})}

    def make(i: int) -> Awaitable[Result]:
        return client.send(session, "POST", f"{url}/rerank", body=rerank_body(i, args.model, args.candidates),
                           headers=headers, timeout=timeout)
    return make


async def _metrics(session: aiohttp.ClientSession, url: str) -> dict | None:
    try:
        async with session.get(f"{url}/metrics", timeout=aiohttp.ClientTimeout(total=10)) as response:
            return client.parse_metrics(await response.text()) if response.status == 200 else None
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError, ValueError):
        return None


async def capacity(target: Target, args: argparse.Namespace) -> dict:
    url = await target.fresh()
    async with target.session() as session:
        make = _rerank(session, url, args, None, 120)
        await asyncio.gather(*(make(i) for i in range(args.clients)))  # warm-up, not counted
        progress(f"capacity: {args.clients} clients, closed loop, {args.capacity_seconds:g} s")
        results, elapsed = await client.closed_loop(make, args.clients, args.capacity_seconds)
    ok = [r.latency for r in results if r.outcome == "ok"]
    return {"clients": args.clients, "seconds": round(elapsed, 2), "requests": len(results), "ok": len(ok),
            "requests_per_s": round(len(ok) / elapsed, 2), "p50_ms": ms(ok, 50), "p99_ms": ms(ok, 99),
            "outcomes": outcomes(results)}


async def _recover(make: Callable[[int], Awaitable[Result]], stopped: float, limit: float) -> tuple[float | None, int]:
    """Sequential requests from the load's end until one is answered 200: (seconds from the end, tries)."""
    tries = 0
    while time.perf_counter() - stopped < limit:
        tries += 1
        result = await make(1_000_000 + tries)
        if result.outcome == "ok":
            return round(result.start + result.latency - stopped, 3), tries
        if result.latency < 0.05:
            await asyncio.sleep(0.05)
    return None, tries


async def overload(target: Target, args: argparse.Namespace, multiplier: float, cap: float) -> dict:
    url = await target.fresh()
    rate = multiplier * cap
    async with target.session() as session:
        before = await _metrics(session, url)
        halt = asyncio.Event()
        health = asyncio.create_task(client.poll(
            lambda: client.send(session, "GET", f"{url}/healthz", timeout=args.deadline), args.healthz_every, halt))
        progress(f"overload {multiplier:g}x: open loop at {rate:.1f} req/s for {args.overload_seconds:g} s, "
                 f"deadline {args.deadline:g} s")
        schedule = client.arrivals(rate, args.overload_seconds, not args.fixed_interval, args.seed + int(multiplier))
        tasks, lags, stopped = await client.open_loop(_rerank(session, url, args, args.deadline, args.deadline),
                                                      schedule)
        halt.set()
        progress(f"overload {multiplier:g}x: load stopped; sequential requests until the first 200 "
                 f"(at most {args.recovery_limit:g} s)")
        recovery, tries = await _recover(_rerank(session, url, args, args.deadline, args.deadline), stopped,
                                         args.recovery_limit)
        results = list(await asyncio.gather(*tasks))
        polls = await health
        after = await _metrics(session, url)
    counts = outcomes(results)
    refused = [r.latency for r in results if r.outcome.startswith("refused")]
    ok_per_s = counts["ok"] / args.overload_seconds
    metrics = None
    if before is not None and after is not None:
        late = client.counter_deltas(before, after, "dialscore_finished_late")
        metrics = {"refused_total": client.counter_deltas(before, after, "dialscore_refused"),
                   "finished_late_total": late.get("all")}
    return {"multiplier": multiplier, "capacity": cap, "rate": round(rate, 2), "seconds": args.overload_seconds,
            "deadline_s": args.deadline, "sent": len(results), "arrival_lag_p99_ms": ms(lags, 99),
            "outcomes": counts, "ok_per_s": round(ok_per_s, 2), "ok_share_of_capacity": round(ok_per_s / cap, 3),
            "refused": len(refused), "refused_with_retry_after": counts["refused_with_retry_after"],
            "refused_p50_ms": ms(refused, 50), "refused_p99_ms": ms(refused, 99),
            "refusal_codes": dict(Counter(r.detail for r in results if r.outcome.startswith("refused"))),
            "metrics": metrics, "recovery_s": recovery, "recovery_limit_s": args.recovery_limit,
            "recovery_tries": tries, "healthz": latency_summary(polls)}


async def _lone(make: Callable[[int], Awaitable[Result]], n: int, budget: float) -> list[Result]:
    results: list[Result] = []
    end = time.perf_counter() + budget
    for i in range(n):
        if time.perf_counter() > end:
            break
        results.append(await make(i))
    return results


class IdleConnections:
    """`n` TCP connections that send nothing; one the server closes is opened again (a slow client's way)."""

    def __init__(self, host: str, port: int, n: int) -> None:
        self.host, self.port, self.n = host, port, n
        self.halt = asyncio.Event()
        self.opened = self.closed_by_server = self.failed = 0
        self.tasks: list[asyncio.Task] = []

    async def _hold(self) -> None:
        while not self.halt.is_set():
            try:
                reader, writer = await asyncio.open_connection(self.host, self.port)
            except OSError:
                self.failed += 1
                await asyncio.sleep(0.1)
                continue
            self.opened += 1
            reading = asyncio.create_task(reader.read(1))
            halting = asyncio.create_task(self.halt.wait())
            await asyncio.wait({reading, halting}, return_when=asyncio.FIRST_COMPLETED)
            if not self.halt.is_set():
                self.closed_by_server += 1
            reading.cancel()
            halting.cancel()
            writer.close()

    def start(self) -> None:
        self.tasks = [asyncio.create_task(self._hold()) for _ in range(self.n)]

    async def stop(self) -> None:
        self.halt.set()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def idle(target: Target, args: argparse.Namespace) -> dict:
    url = await target.fresh()
    where = urlsplit(url)
    async with target.session() as session:
        make = _rerank(session, url, args, None, args.idle_timeout)
        await make(0)  # warm-up
        progress(f"idle: {args.idle_requests} lone /rerank requests, no idle connections")
        without = await _lone(make, args.idle_requests, args.idle_budget)
        holder = IdleConnections(where.hostname, where.port or 80, args.idle_connections)
        holder.start()
        await asyncio.sleep(0.5)
        progress(f"idle: the same with {args.idle_connections} idle connections open ({holder.opened} so far)")
        with_idle = await _lone(make, args.idle_requests, args.idle_budget)
        health = await _lone(lambda i: client.send(session, "GET", f"{url}/healthz", timeout=args.idle_timeout),
                             args.idle_requests, args.idle_budget)
        await holder.stop()
    a, b = latency_summary(without), latency_summary(with_idle)
    moved = None if a["p50_ms"] is None or b["p50_ms"] is None else round(b["p50_ms"] - a["p50_ms"], 1)
    return {"idle_connections": args.idle_connections, "without": a, "with_idle": b, "p50_moved_ms": moved,
            "healthz_with_idle": latency_summary(health), "connections_opened": holder.opened,
            "closed_by_server": holder.closed_by_server, "connect_failures": holder.failed}


async def sigterm(target: Target, args: argparse.Namespace) -> dict:
    url = await target.fresh()
    server = target.server
    total = args.sigterm_before + args.sigterm_after
    signalled: list[float] = []

    async def terminate() -> None:
        await asyncio.sleep(args.sigterm_before)
        signalled.append(time.perf_counter())
        os.kill(server.process.pid, signal.SIGTERM)
        progress(f"sigterm: SIGTERM sent to the master ({server.process.pid}); sending for "
                 f"{args.sigterm_after:g} s more")

    # A fresh connection a request: each outcome then says what happened to one accepted connection.
    async with target.session(force_close=True) as session:
        progress(f"sigterm: open loop at {args.sigterm_rate:g} req/s; SIGTERM after {args.sigterm_before:g} s")
        killer = asyncio.create_task(terminate())
        schedule = client.arrivals(args.sigterm_rate, total, not args.fixed_interval, args.seed)
        tasks, _, _ = await client.open_loop(_rerank(session, url, args, None, args.sigterm_timeout), schedule)
        await killer
        results = list(await asyncio.gather(*tasks))
    code = await asyncio.to_thread(server.wait_exit, args.sigterm_timeout)
    exited = round(time.perf_counter() - signalled[0], 2) if code is not None else None
    target.close()
    after = [r for r in results if r.start >= signalled[0]]
    return {"rate": args.sigterm_rate, "before_s": args.sigterm_before, "after_s": args.sigterm_after,
            "sent": len(results), "outcomes": outcomes(results), "sent_after_signal": len(after),
            "outcomes_after_signal": outcomes(after), "master_exit_code": code, "master_exited_after_s": exited}


async def crash(target: Target, args: argparse.Namespace) -> dict:
    url = await target.fresh()
    server = target.server
    workers = server.workers_now()
    killed: list[float] = []
    async with target.session() as session:
        make = _rerank(session, url, args, None, 60)
        schedule = client.arrivals(args.crash_rate, args.crash_seconds + 0.5, not args.fixed_interval, args.seed)
        load = asyncio.create_task(client.open_loop(make, schedule))
        await asyncio.sleep(0.5)
        os.kill(workers[0], signal.SIGKILL)
        killed.append(time.perf_counter())
        progress(f"crash: kill -9 of worker {workers[0]} (of {workers}); polling /readyz every "
                 f"{args.crash_poll * 1000:g} ms for {args.crash_seconds:g} s under {args.crash_rate:g} req/s")
        halt = asyncio.Event()
        asyncio.get_running_loop().call_later(args.crash_seconds, halt.set)
        polls = await client.poll(lambda: client.send(session, "GET", f"{url}/readyz", timeout=1.0),
                                  args.crash_poll, halt)
        tasks, _, _ = await load
        results = list(await asyncio.gather(*tasks))
    longest = run = 0
    longest_ms = 0.0
    run_start = 0.0
    for p in polls:
        if p.outcome == "ok":
            run = 0
            continue
        run_start = p.start if run == 0 else run_start
        run += 1
        longest = max(longest, run)
        longest_ms = max(longest_ms, (p.start + p.latency - run_start) * 1000)
    counts = outcomes(results)
    in_flight = [r for r in results if r.start <= killed[0] <= r.start + r.latency]
    lost = sum(r.outcome in ("reset_after_accept", "closed_unanswered", "other") for r in results)
    return {"workers_before": len(workers), "workers_after": len(server.workers_now()), "polls": len(polls),
            "readyz_non_200": sum(p.outcome != "ok" for p in polls), "longest_non_200_run": longest,
            "longest_non_200_ms": round(longest_ms, 1), "readyz": latency_summary(polls), "load_sent": len(results),
            "load_outcomes": counts, "in_flight_at_kill": len(in_flight), "lost": lost}
