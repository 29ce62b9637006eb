"""`python -m service.bench` (`make bench`): throughput and latency of /score through real gunicorn.

Starts `python -m service` on a free loopback port, waits for /readyz, then keeps `--clients`
connections busy for `--seconds` per scenario and prints items/s, requests/s and p50/p99
latency, with the machine it ran on. The load generator shares the machine with the server, so
figures are for the whole box, and say so.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
CONTEXT = ["hey, what do you want to do tonight?", "why don't we go see a movie? there is a new one about turing."]
REPLIES = ["nah, let's do something active.", "sure, what time does it start?", "i don't know.",
           "the film about turing looks great, i heard the acting is superb and the story is gripping!"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(port: int, body: bytes) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", "/score", body=body, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    payload = response.read()
    conn.close()
    return response.status, payload


def _get(port: int, path: str) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path)
    response = conn.getresponse()
    payload = json.loads(response.read() or b"{}")
    conn.close()
    return response.status, payload


def _providers_line(served: dict[str, dict]) -> str:
    """Which provider each model's sessions really got, grouped: a CUDA box that fell back to CPU shows here."""
    groups: dict[str, list[str]] = {}
    for name, model in served.items():
        groups.setdefault(",".join(model.get("providers") or ["-"]), []).append(name)
    return "; ".join(f"{providers}: {len(names)} models" for providers, names in sorted(groups.items()))


def _gpu_names(served: dict[str, dict]) -> str:
    """The GPU's name (nvidia-smi) when any model runs on CUDA, so a figure says what it ran on."""
    if not any("CUDAExecutionProvider" in (m.get("providers") or []) for m in served.values()):
        return ""
    try:
        names = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        names = "nvidia-smi not found"
    return f"; GPU: {names.replace(chr(10), ' | ')}"


def items_for(kind: str, n: int) -> list[dict]:
    if kind == "dialogue":
        return [{"turns": [{"speaker": "user", "text": CONTEXT[0]}, {"speaker": "bot", "text": REPLIES[i % 4]},
                           {"speaker": "user", "text": CONTEXT[1]}, {"speaker": "bot", "text": REPLIES[(i + 1) % 4]}]}
                for i in range(n)]
    return [{"context": CONTEXT[: 1 + i % 2], "response": REPLIES[i % 4] + f" ({i})", "reference": REPLIES[3]}
            for i in range(n)]


def run_scenario(port: int, body: dict, items_per_request: int, clients: int, seconds: float) -> dict:
    payload = json.dumps(body).encode()
    latencies: list[float] = []
    failures = [0]
    lock = threading.Lock()
    stop_at = time.perf_counter() + seconds

    def worker() -> None:
        while time.perf_counter() < stop_at:
            started = time.perf_counter()
            status, _ = _request(port, payload)
            elapsed = time.perf_counter() - started
            with lock:
                if status == 200:
                    latencies.append(elapsed)
                else:
                    failures[0] += 1

    _request(port, payload)  # warm the path once
    began = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    lat = np.array(latencies) * 1000
    return {"requests": len(latencies), "failed": failures[0], "items_per_s": len(latencies) * items_per_request / wall,
            "requests_per_s": len(latencies) / wall,
            "p50_ms": float(np.percentile(lat, 50)) if len(lat) else None,
            "p99_ms": float(np.percentile(lat, 99)) if len(lat) else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m service.bench", description=__doc__)
    parser.add_argument("--models", default="length,bleu4,emb-greedy,adem,adem-minilm,ruber,autojudge,minilm-cosine",
                        help="comma list; models not in the store are skipped")
    parser.add_argument("--batch", type=int, default=32, help="items per request")
    parser.add_argument("--clients", type=int, default=4, help="concurrent connections")
    parser.add_argument("--seconds", type=float, default=10.0, help="duration of each scenario")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--store", type=Path, default=REPO / "model_store")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)

    port = _free_port()
    env = {**os.environ, "DIALSCORE_MODEL_STORE": str(args.store), "DIALSCORE_LOG_LEVEL": "WARNING"}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    server = subprocess.Popen([sys.executable, "-m", "service", "--port", str(port), "--workers", str(args.workers)],
                              cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        deadline = time.time() + 300
        while True:
            try:
                status, body = _get(port, "/readyz")
                if status == 200 or (status == 503 and body.get("error", {}).get("details", {}).get("failed")):
                    break
            except OSError:
                pass
            if time.time() > deadline or server.poll() is not None:
                print("server did not become ready", file=sys.stderr)
                return 1
            time.sleep(0.5)
        served = {m["name"]: m for m in _get(port, "/models")[1]["models"]}
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} "
              f"{platform.python_version()}, {platform.system()}; gunicorn workers={args.workers}, "
              f"clients={args.clients}, {args.seconds:.0f}s per scenario (load generator on the same machine)")
        print(f"execution providers: {_providers_line(served)}{_gpu_names(served)}")
        print(f"{'scenario':42s} {'items/s':>9s} {'req/s':>8s} {'p50 ms':>8s} {'p99 ms':>8s} {'fail':>5s}")
        results = {}
        scenarios = []
        for name in [m for m in args.models.split(",") if m]:
            if name not in served:
                print(f"{name + ' (not served, skipped)':42s}")
                continue
            kind = served[name]["kind"]
            scenarios.append((f"{name} x{args.batch}", {"model": name, "items": items_for(kind, args.batch)},
                              args.batch))
            scenarios.append((f"{name} x1", {"model": name, "items": items_for(kind, 1)}, 1))
        reply_models = [n for n, m in served.items() if m["kind"] != "dialogue"]
        scenarios.append((f"all {len(reply_models)} reply models, 1 item", {"models": reply_models,
                                                                           "items": items_for("referenced", 1)}, 1))
        for label, body, n in scenarios:
            r = run_scenario(port, body, n, args.clients, args.seconds)
            results[label] = r
            fmt = lambda v: f"{v:8.1f}" if v is not None else "       -"  # noqa: E731
            print(f"{label:42s} {r['items_per_s']:9.1f} {r['requests_per_s']:8.1f} {fmt(r['p50_ms'])} "
                  f"{fmt(r['p99_ms'])} {r['failed']:5d}", flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=2))
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
