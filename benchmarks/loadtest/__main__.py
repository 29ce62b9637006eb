"""`python -m benchmarks.loadtest [--scenario NAME ...] [--url URL] [--json PATH] [--write-docs MARKDOWN]`.

Starts its own server (`python -m service` on a free port, default settings, afresh for each scenario)
unless given --url, where the scenarios that send signals (sigterm, crash) are skipped. Progress goes to
stderr, the Markdown report to stdout.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from pathlib import Path

from service.config import load_settings
from benchmarks.loadtest import report, scenarios, server
from benchmarks.loadtest.scenarios import Target, progress

SCENARIOS = ("capacity", "overload", "idle", "crash", "sigterm")  # the order they run in
SIGNALLING = ("sigterm", "crash")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.loadtest", description=__doc__,
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--scenario", action="append", choices=SCENARIOS, help="repeatable; default: all")
    p.add_argument("--url", help="test this server instead of starting one (no sigterm, no crash)")
    p.add_argument("--token", default=os.environ.get("DIALSCORE_API_TOKEN", ""),
                   help="Bearer token (default: $DIALSCORE_API_TOKEN)")
    p.add_argument("--workers", help="--workers of our own server (default: the server's default)")
    p.add_argument("--reuse-server", action="store_true",
                   help="one own server for every scenario rather than a fresh one each (sigterm ends it)")
    p.add_argument("--model", default="unref-minilm", help="the /rerank model")
    p.add_argument("--candidates", type=int, default=32, help="candidates a /rerank")
    p.add_argument("--fixed-interval", action="store_true", help="evenly spaced arrivals instead of Poisson")
    p.add_argument("--seed", type=int, default=43)
    g = p.add_argument_group("capacity")
    g.add_argument("--capacity", type=float, help="req/s to take as capacity instead of measuring it")
    g.add_argument("--clients", type=int, default=4)
    g.add_argument("--capacity-seconds", type=float, default=20)
    g = p.add_argument_group("overload")
    g.add_argument("--multipliers", default="2,5", help="overload rates as multiples of capacity")
    g.add_argument("--overload-seconds", type=float, default=45)
    g.add_argument("--deadline", type=float, default=1.0, help="X-Request-Timeout and the client's timeout (s)")
    g.add_argument("--recovery-limit", type=float, default=60, help="seconds to wait for the first 200 after")
    g.add_argument("--healthz-every", type=float, default=0.1)
    g = p.add_argument_group("idle connections")
    g.add_argument("--idle-connections", type=int, default=200)
    g.add_argument("--idle-requests", type=int, default=40, help="sequential requests without, then with them")
    g.add_argument("--idle-timeout", type=float, default=30, help="client timeout of each lone request (s)")
    g.add_argument("--idle-budget", type=float, default=120, help="seconds at most for each sequence")
    g = p.add_argument_group("sigterm")
    g.add_argument("--sigterm-rate", type=float, default=10)
    g.add_argument("--sigterm-before", type=float, default=3)
    g.add_argument("--sigterm-after", type=float, default=5)
    g.add_argument("--sigterm-timeout", type=float, default=40, help="client timeout (s), above the grace period")
    g = p.add_argument_group("crash")
    g.add_argument("--crash-seconds", type=float, default=5)
    g.add_argument("--crash-poll", type=float, default=0.02, help="/readyz poll interval (s)")
    g.add_argument("--crash-rate", type=float, default=4, help="req/s of /rerank load during the crash")
    p.add_argument("--json", type=Path, metavar="PATH", help="write every figure as JSON")
    p.add_argument("--write-docs", type=Path, metavar="MARKDOWN",
                   help="replace (or add) this machine's load-test section of MARKDOWN (docs/benchmarks.md)")
    return p


def settings_line(args: argparse.Namespace) -> str:
    s = load_settings(check_providers=False)
    server = (f"workers={args.workers or s.workers} threads={s.threads} request_timeout={s.request_timeout:g}s "
              f"max_queue={s.max_queue} read_timeout={s.read_timeout:g}s graceful_timeout={s.graceful_timeout}s")
    load = (f"/rerank {args.model} x{args.candidates}; {args.clients} clients x {args.capacity_seconds:g} s; "
            f"overload {args.multipliers}x for {args.overload_seconds:g} s, deadline {args.deadline:g} s, "
            f"{'fixed-interval' if args.fixed_interval else 'Poisson'} arrivals; {args.idle_connections} idle "
            f"connections; sigterm at {args.sigterm_rate:g} req/s ({args.sigterm_before:g} s + "
            f"{args.sigterm_after:g} s); crash {args.crash_seconds:g} s at {args.crash_rate:g} req/s")
    return (f"server's own: {server}; " if not args.url else "") + load


async def run(args: argparse.Namespace, chosen: list[str]) -> dict:
    target = Target(args)
    results: dict = {}
    try:
        cap = args.capacity
        if "capacity" in chosen or ("overload" in chosen and cap is None):
            results["capacity"] = await scenarios.capacity(target, args)
            progress(f"capacity: {results['capacity']['requests_per_s']} req/s")
            cap = cap or results["capacity"]["requests_per_s"]
        if "overload" in chosen:
            if not cap:
                raise SystemExit("no capacity to scale: nothing was answered in the capacity scenario")
            results["overload"] = [await scenarios.overload(target, args, float(m), cap)
                                   for m in args.multipliers.split(",") if m]
        for name in ("idle", "crash", "sigterm"):
            if name in chosen:
                results[name] = await getattr(scenarios, name)(target, args)
                progress(f"{name}: done")
    finally:
        target.close()
    return results


def _interrupted(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # so that the servers started are stopped on the way out


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    chosen = list(dict.fromkeys(args.scenario or SCENARIOS))
    if args.url:
        skipped = [s for s in chosen if s in SIGNALLING]
        chosen = [s for s in chosen if s not in SIGNALLING]
        if skipped:
            progress(f"--url given: skipping {', '.join(skipped)} (they signal the server's processes)")
    meta = {"cpu": report.cpu(), "server": args.url or f"python -m service (own, {'one for all' if args.reuse_server else 'a fresh one a scenario'})",
            "settings": settings_line(args), "load": ", ".join(f"{v:.2f}" for v in os.getloadavg()),
            "scenarios": chosen}
    progress(report.header(meta)[0])
    previous = signal.signal(signal.SIGTERM, _interrupted)
    try:
        results = asyncio.run(run(args, chosen))
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.stop_all()
    print(report.markdown(meta, results))
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "results": results}, indent=1) + "\n", encoding="utf-8")
    if args.write_docs:
        progress(f"wrote {report.write_docs(args.write_docs, meta, results)}'s section of {args.write_docs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
