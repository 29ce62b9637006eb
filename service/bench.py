"""`python -m service.bench` (`make bench`): throughput and latency of /score through real gunicorn.

Starts `python -m service` on a free loopback port, waits for /readyz, then keeps `--clients`
connections busy for `--seconds` per scenario and prints items/s, requests/s, p50/p99 latency and
the spread of items/s over the scenario's three thirds (a busy machine shows there), with the
machine, versions and settings it ran on; then the workers' memory (PSS, idle and peak). The load
generator shares the machine with the server, so figures are for the whole box, and say so.

Every text of a batch is distinct by default, as in traffic where each item is its own
conversation: the per-request encode cache then saves nothing, which is the figure to
size a deployment by. One scenario shows the other case, the re-ranking shape: 32 candidate
replies for one context and reference, which the cache encodes once.
"""
from __future__ import annotations

import argparse
import http.client
import importlib.metadata
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


def items_for(kind: str, n: int, shared_context: bool = False) -> list[dict]:
    """`n` items whose every text is distinct (numbered), or with `shared_context` one context and
    reference for all of them and distinct replies (the re-ranking shape)."""
    if kind == "dialogue":
        return [{"turns": [{"speaker": "user", "text": f"{CONTEXT[0]} ({i})"},
                           {"speaker": "bot", "text": f"{REPLIES[i % 4]} ({i})"},
                           {"speaker": "user", "text": f"{CONTEXT[1]} ({i})"},
                           {"speaker": "bot", "text": f"{REPLIES[(i + 1) % 4]} [{i}]"}]} for i in range(n)]
    if shared_context:
        return [{"context": CONTEXT, "response": f"{REPLIES[i % 4]} ({i})", "reference": REPLIES[3]} for i in range(n)]
    return [{"context": [f"{turn} ({i})" for turn in CONTEXT[: 1 + i % 2]], "response": f"{REPLIES[i % 4]} ({i})",
             "reference": f"{REPLIES[3]} [{i}]"} for i in range(n)]


def _pss_kib(pid: int) -> int | None:
    """A process's proportional set size (Linux): its share of pages it maps with other processes."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def _workers_of(master: int) -> list[int]:
    """The gunicorn master's child processes (its workers), from /proc."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == master:
            children.append(int(stat.parent.name))
    return sorted(children)


class MemorySampler(threading.Thread):
    """Samples the workers' PSS twice a second: the peak per worker and of all of them together."""

    def __init__(self, master: int) -> None:
        super().__init__(daemon=True)
        self.master, self.peak_worker, self.peak_total = master, 0, 0
        self.halt = threading.Event()

    def sample(self) -> tuple[int, int]:
        sizes = [kib for kib in map(_pss_kib, _workers_of(self.master)) if kib is not None]
        return (max(sizes, default=0), sum(sizes))

    def run(self) -> None:
        while not self.halt.wait(0.5):
            worker, total = self.sample()
            self.peak_worker, self.peak_total = max(self.peak_worker, worker), max(self.peak_total, total)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def _commit() -> str:
    """The checkout's commit, with "+ local changes" when tracked files differ from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        changed = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "not a git checkout"
    return (commit + (" + local changes" if changed else "")) if commit else "not a git checkout"


def _onnxruntime() -> str:
    """The installed ONNX Runtime distribution and version (CPU and GPU builds are separate packages)."""
    for package in ("onnxruntime-gpu", "onnxruntime"):
        try:
            return f"{package} {importlib.metadata.version(package)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return "onnxruntime not installed"


def run_scenario(port: int, body: dict, items_per_request: int, clients: int, seconds: float | None) -> dict:
    """`clients` connections sending `body` back to back for `seconds` (after one warm-up request),
    or with `seconds` None each sending it once, all at the same time (the memory scenario)."""
    payload = json.dumps(body).encode()
    latencies: list[float] = []
    finished: list[float] = []
    failures = [0]
    lock = threading.Lock()
    if seconds is not None:
        _request(port, payload)  # warm the path once, before the window opens
    began = time.perf_counter()
    stop_at = began + (seconds or 0.0)

    def worker() -> None:
        while True:
            started = time.perf_counter()
            try:
                status, _ = _request(port, payload)
            except (OSError, http.client.HTTPException):  # a refused or dropped connection is a failure too
                status = 0
            done = time.perf_counter()
            with lock:
                if status == 200:
                    latencies.append(done - started)
                    finished.append(done - began)
                else:
                    failures[0] += 1
            if done >= stop_at:
                return

    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - began
    lat = np.array(latencies) * 1000
    result = {"requests": len(latencies), "failed": failures[0],
              "items_per_s": len(latencies) * items_per_request / wall, "requests_per_s": len(latencies) / wall,
              "p50_ms": float(np.percentile(lat, 50)) if len(lat) else None,
              "p99_ms": float(np.percentile(lat, 99)) if len(lat) else None, "spread": None}
    if seconds:  # items/s in each third of the window: a machine busy with something else shows as spread
        thirds = np.histogram(finished, bins=3, range=(0, seconds))[0] * items_per_request / (seconds / 3)
        result["thirds_items_per_s"] = [float(v) for v in thirds]
        result["spread"] = float((thirds.max() - thirds.min()) / thirds.mean()) if thirds.mean() > 0 else None
    return result


def print_row(label: str, r: dict) -> None:
    def fmt(value: float | None) -> str:
        return f"{value:8.1f}" if value is not None else "       -"

    spread = f"{100 * r['spread']:6.0f}%" if r.get("spread") is not None else "      -"
    print(f"{label:42s} {r['items_per_s']:9.1f} {r['requests_per_s']:8.1f} {fmt(r['p50_ms'])} {fmt(r['p99_ms'])} "
          f"{r['failed']:5d} {spread}", flush=True)


HEAVY_PIECES = 256  # MiniLM's truncation: every heavy text is longer, in word pieces


def heavy_items(n: int, chars: int) -> list[dict]:
    """`n` items whose every utterance is `chars` characters of distinct words: the most a request
    may carry per utterance (the default limits), for the memory ONNX Runtime's arena grows to."""
    def text(tag: str) -> str:
        words, out = 0, []
        while sum(map(len, out)) + len(out) < chars:
            out.append(f"{tag}w{words}")
            words += 1
        return " ".join(out)[:chars]
    return [{"context": [text(f"c{i}a"), text(f"c{i}b")], "response": text(f"r{i}"), "reference": text(f"f{i}")}
            for i in range(n)]


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
    parser.add_argument("--heavy", type=int, default=0, metavar="N",
                        help="then, for the memory a pod must hold: every client sends at once one request of N "
                             "items of max_chars-character utterances to every reply model (docs/deploy.md: 100; "
                             "at most what max_encoder_tokens admits, 97 at the default)")
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
        sampler = MemorySampler(server.pid)
        idle_worker, idle_total = sampler.sample()
        sampler.start()
        settings = " ".join(f"{k}={v}" for k, v in sorted(env.items())
                            if k.startswith("DIALSCORE_") and k != "DIALSCORE_API_TOKEN") or "none"
        print(f"machine: {platform.machine()}, {_cpu_model()}, {os.cpu_count()} cores, "
              f"{platform.python_implementation()} {platform.python_version()}, {platform.system()}; "
              f"{_onnxruntime()}, commit {_commit()}")
        print(f"run: gunicorn workers={args.workers}, clients={args.clients}, {args.seconds:.0f}s per scenario "
              f"(load generator on the same machine); settings: {settings}")
        print(f"execution providers: {_providers_line(served)}{_gpu_names(served)}")
        print(f"{'scenario':42s} {'items/s':>9s} {'req/s':>8s} {'p50 ms':>8s} {'p99 ms':>8s} {'fail':>5s} {'spread':>7s}")
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
            if name == "adem-minilm":  # what the per-request encode cache saves when items share text
                scenarios.append((f"{name} x{args.batch}, one context (re-ranking)",
                                  {"model": name, "items": items_for(kind, args.batch, shared_context=True)},
                                  args.batch))
        reply_models = [n for n, m in served.items() if m["kind"] != "dialogue"]
        scenarios.append((f"all {len(reply_models)} reply models, 1 item", {"models": reply_models,
                                                                           "items": items_for("referenced", 1)}, 1))
        for label, body, n in scenarios:
            results[label] = run_scenario(port, body, n, args.clients, args.seconds)
            print_row(label, results[label])
        if args.heavy:
            limits = _get(port, "/models")[1]["limits"]
            # Each heavy item's 4 texts reach the encoder's 256 word pieces, so max_encoder_tokens caps the
            # items one request may carry (97 at the default): asking for more would only measure 413s.
            n = min(args.heavy, limits.get("max_encoder_tokens", 1 << 62) // (4 * HEAVY_PIECES))
            body = {"models": reply_models, "items": heavy_items(n, limits["max_chars"])}
            label = f"heavy: all {len(reply_models)} x{n}, {limits['max_chars']} chars, {args.clients} at once"
            results[label] = run_scenario(port, body, n, args.clients, seconds=None)
            print_row(label, results[label])
        sampler.halt.set()
        sampler.join()
        memory = {"idle_worker_mib": idle_worker / 1024, "idle_total_mib": idle_total / 1024,
                  "peak_worker_mib": sampler.peak_worker / 1024, "peak_total_mib": sampler.peak_total / 1024}
        print(f"memory (PSS, {args.workers} workers): idle {memory['idle_worker_mib']:.0f} MiB per worker, "
              f"{memory['idle_total_mib']:.0f} MiB in all; peak {memory['peak_worker_mib']:.0f} MiB per worker, "
              f"{memory['peak_total_mib']:.0f} MiB in all (sampled every 0.5 s)")
        if args.json:
            args.json.write_text(json.dumps({"scenarios": results, "memory": memory}, indent=2))
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
