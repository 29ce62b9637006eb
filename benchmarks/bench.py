"""`python -m benchmarks.bench` (`make bench`): throughput and latency through real gunicorn.

Starts `python -m service` on a free loopback port, waits for /readyz, keeps `--clients` connections
busy for `--seconds` a scenario and prints items/s, requests/s, p50/p99 and the spread over the
scenario's thirds, with the machine, settings and providers; then latency one request at a time,
each score's largest move with its batch-mates, the workers' memory, and the MiniLM encoder against
sentence-transformers on the same texts (where torch is installed). Every text of an x32 batch is
distinct, the figure to size a deployment by; the re-ranking rows share one context."""
from __future__ import annotations

import argparse
import contextlib
import http.client
import importlib.metadata
import importlib.util
import itertools
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from benchmarks import bench_docs
from service.artifacts import batch_bounds
from service.scorers.base import REFERENCE_FREE

REPO = Path(__file__).resolve().parent.parent
CONTEXT = ["hey, what do you want to do tonight?", "why don't we go see a movie? there is a new one about turing."]
REPLIES = ["nah, let's do something active.", "sure, what time does it start?", "i don't know.",
           "the film about turing looks great, i heard the acting is superb and the story is gripping!"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(port: int, body: bytes, path: str = "/score", budget: str | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", path, body=body, headers={"Content-Type": "application/json",
                                                   **({"X-Request-Timeout": budget} if budget else {})})
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


WORDS = " ".join(CONTEXT + REPLIES).split()
# Sets of items a batch bound is the largest move over (one set's figure varied 1000-fold): the even ones of
# texts of 1 to 40 words, the odd ones of 1 to LONG_WORDS, past the encoders' truncation (longer texts
# moved scores further than the short sets had).
BOUND_DRAWS = 8
LONG_WORDS = 300


def mixed_items(kind: str, n: int, shared_context: bool = False, draw: int = 0) -> list[dict]:
    """`n` distinct items whose texts run from 1 to 40 words (an odd `draw`: to LONG_WORDS), so that in a
    batch most texts are padded past their own length: where an encoder's vector depends on its padding,
    that is what moves a score with its batch-mates (items_for's texts are all of about one length). Each
    `draw` is another set."""
    def text(i: int, words: int, tag: str) -> str:
        return " ".join(WORDS[(i + k) % len(WORDS)] for k in range(words)) + f" ({tag}{i})"

    longest = LONG_WORDS if draw % 2 else 40
    items = []
    for i in range(draw * n, draw * n + n):
        context = [text(i + t, 2 + (i * 7 + t * 11) % (longest - 10), f"c{t}.") for t in range(1 + i % 3)]
        reply = text(i, 1 + (i * 13) % longest, "r")
        if kind == "dialogue":
            items.append({"turns": [{"speaker": ("user", "bot")[t % 2], "text": turn}
                                    for t, turn in enumerate([*context, reply])]})
            continue
        items.append({"context": [CONTEXT[1]] if shared_context else context, "response": reply,
                      "reference": REPLIES[3] if shared_context else text(i + 5, 1 + (i * 5) % longest, "f")})
    return items


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


SAMPLE_SECONDS = 0.5  # how often the workers' memory is read


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
        while not self.halt.wait(SAMPLE_SECONDS):
            worker, total = self.sample()
            self.peak_worker, self.peak_total = max(self.peak_worker, worker), max(self.peak_total, total)


def _cpu_model() -> str:
    """The CPU's name, the integer dot-product instructions it reports (what picks the encoder file) and
    its bf16 arithmetic (where auto runs the encoders on OpenVINO in bf16)."""
    from service.artifacts.openvino import BF16
    from service.artifacts.hardware import cpu_flags, int8_dot_products

    name = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    bf16 = ", ".join(flag for flag in BF16 if flag in cpu_flags()) or "none reported"
    return f"{name} (int8 dot products: {int8_dot_products() or 'none reported'}; bf16: {bf16})"


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


def _encoder_line(served: dict[str, dict]) -> str:
    """Each sentence encoder as the workers loaded it: file, precision, provider, OpenVINO's compute,
    whether bit-exact across batches, and why that file (GET /models' components)."""
    seen = {c["name"]: c for m in served.values() for c in m.get("components", []) if c.get("precision")}
    return "; ".join(
        f"{name}: {c.get('file')} as {c.get('precision')} on {c.get('provider', '?')}"
        + (f" computing in {c['compute']}" if c.get("compute") else "")
        + (", bit-exact across batches" if c.get("bit_exact_across_batches") else ", not bit-exact across batches")
        + f" ({c.get('chosen_by')})" for name, c in sorted(seen.items())) or "none served"


def _provider_reason(served: dict[str, dict]) -> str:
    """Why the encoders run where they do (the same for every encoder of a worker)."""
    reasons = {c.get("provider_chosen_by") for m in served.values() for c in m.get("components", [])}
    return "; ".join(sorted(r for r in reasons if r)) or "-"


def run_one_at_a_time(port: int, path: str, body: dict, seconds: float) -> dict:
    """Latency of `body` sent one request at a time on one kept-alive connection for `seconds`."""
    payload = json.dumps(body).encode()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    latencies, failures = [], 0

    def send() -> int:
        conn.request("POST", path, body=payload, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        return response.status

    send()  # warm the path and the connection, before the window opens
    stop_at = time.perf_counter() + seconds
    while time.perf_counter() < stop_at:
        started = time.perf_counter()
        status = send()
        if status == 200:
            latencies.append(time.perf_counter() - started)
        else:
            failures += 1
    conn.close()
    lat = np.array(latencies) * 1000
    return {"requests": len(latencies), "failed": failures, "items_per_s": len(latencies) / seconds,
            "requests_per_s": len(latencies) / seconds, "p50_ms": float(np.percentile(lat, 50)) if len(lat) else None,
            "p95_ms": float(np.percentile(lat, 95)) if len(lat) else None,
            "p99_ms": float(np.percentile(lat, 99)) if len(lat) else None, "spread": None}


def run_scenario(port: int, body: dict, items_per_request: int, clients: int, seconds: float | None,
                 path: str = "/score", budget: str | None = None) -> dict:
    """`clients` connections sending `body` to `path` back to back for `seconds` (after one warm-up
    request), or with `seconds` None each sending it once, all at the same time (the memory scenario);
    `budget`: their X-Request-Timeout, else the server's default."""
    payload = json.dumps(body).encode()
    latencies: list[float] = []
    finished: list[float] = []
    failures = [0]
    lock = threading.Lock()
    if seconds is not None:
        _request(port, payload, path)  # warm the path once, before the window opens
    began = time.perf_counter()
    stop_at = began + (seconds or 0.0)

    def worker() -> None:
        while True:
            started = time.perf_counter()
            try:
                status, _ = _request(port, payload, path, budget)
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


def batch_moves(port: int, served: dict[str, dict], n: int) -> dict[str, float]:
    """For each model scoring items, the largest |score alone - score among `n` distinct items of mixed
    lengths| as a share of its score range, over the scoring shape and the re-ranking one (a shared
    context), and over its default options and `reference_free` where it offers that (another formula:
    the context cosine alone is not halved by an average with the reference's): 0 where GET /models says
    bit_exact_across_batches, within docs/api.md's bound elsewhere."""
    moves: dict[str, float] = {}
    for name, model in sorted(served.items()):
        option_sets = [{}] + ([{"reference_free": True}] if "reference_free" in model.get("options", {}) else [])
        shapes = (False, True) if model["kind"] != "dialogue" else (False,)
        for draw, shared, options in itertools.product(range(BOUND_DRAWS), shapes, option_sets):
            items = mixed_items(model["kind"], n, shared_context=shared, draw=draw)
            status, together = _request(port, json.dumps({"model": name, "items": items, "options": options}).encode())
            alone = [_request(port, json.dumps({"model": name, "items": [item], "options": options}).encode())
                     for item in items]
            if status != 200 or any(code != 200 for code, _ in alone):
                continue
            low, high = model["score_range"]
            pairs = zip(json.loads(together)["scores"], (json.loads(body)["scores"][0] for _, body in alone))
            move = max((abs(a - b) for a, b in pairs if a is not None and b is not None), default=0.0) / (high - low)
            moves[name] = max(moves.get(name, 0.0), move)
    return moves


def print_row(label: str, r: dict) -> None:
    def fmt(value: float | None) -> str:
        return f"{value:8.1f}" if value is not None else "       -"

    spread = f"{100 * r['spread']:6.0f}%" if r.get("spread") is not None else "      -"
    print(f"{label:42s} {r['items_per_s']:9.1f} {r['requests_per_s']:8.1f} {fmt(r['p50_ms'])} {fmt(r['p99_ms'])} "
          f"{r['failed']:5d} {spread}", flush=True)


HEAVY_PIECES = 256  # MiniLM's truncation: every heavy text is longer, in word pieces


def heavy_pieces(served: dict[str, dict], store: Path) -> int:
    """Word pieces each heavy text brings its costliest encoder: the longest truncation of the sentence
    encoders served (mpnet-base keeps 384), at least HEAVY_PIECES. Sized by MiniLM's 256 where mpnet
    is served, the heavy request passed max_encoder_tokens and measured a 413."""
    names = {c["name"] for m in served.values() for c in m.get("components", []) if c.get("precision")}
    lengths = [json.loads((store / name / "manifest.json").read_text())["config"].get("max_length", HEAVY_PIECES)
               for name in names if (store / name / "manifest.json").is_file()]
    return max([HEAVY_PIECES, *lengths])


def heavy_chars(n: int, limits: dict) -> int:
    """Characters per utterance of `n` heavy items (4 utterances each): max_chars, or less where the
    body would pass max_body_bytes (10,000-character texts make a 97-item body of 3.9 MB), with a
    tenth of the body left for JSON. Each is still far past the encoder's 256 word pieces."""
    fitting = int(0.9 * limits.get("max_body_bytes", 1 << 62)) // (4 * max(n, 1))
    return min(limits["max_chars"], fitting)


def heavy_items(n: int, chars: int) -> list[dict]:
    """`n` items whose every utterance is `chars` characters of distinct words, each past the
    encoder's truncation: for the memory ONNX Runtime's arena grows to."""
    def text(tag: str) -> str:
        words, out = 0, []
        while sum(map(len, out)) + len(out) < chars:
            out.append(f"{tag}w{words}")
            words += 1
        return " ".join(out)[:chars]
    return [{"context": [text(f"c{i}a"), text(f"c{i}b")], "response": text(f"r{i}"), "reference": text(f"f{i}")}
            for i in range(n)]


MINILM_MODELS = ("minilm-cosine", "adem-minilm", "ruber-minilm", "autojudge-minilm")
RERANK_MODEL = "autojudge-minilm"


@contextlib.contextmanager
def serving(store: Path, workers: int, extra: dict[str, str] | None = None,
            ) -> Iterator[tuple[int, subprocess.Popen, dict[str, str]]]:
    """`python -m service` with `workers` on a free loopback port (`extra`: environment on top), ready
    (or some model failed): its port, process and environment; stopped (SIGTERM to its group) on the way out."""
    port = _free_port()
    env = {**os.environ, "DIALSCORE_MODEL_STORE": str(store), "DIALSCORE_LOG_LEVEL": "WARNING", **(extra or {})}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    server = subprocess.Popen([sys.executable, "-m", "service", "--port", str(port), "--workers", str(workers)],
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
                raise RuntimeError("server did not become ready")
            time.sleep(0.5)
        yield port, server, env
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=60)


MPNET_WHEELS = REPO / "build" / "mpnet-wheels"  # make encoder-mpnet's download (MPNET_WHEELS)


def reference_speed(texts: int, lone: list[str] | None = None, mpnet: bool = False) -> dict | str:
    """sentence-transformers on `texts` distinct DailyDialog turns, and on the `lone` texts as one call with
    MiniLM (and with mpnet where `mpnet` and its wheels are here) (`python -m training reference-speed`,
    in its own process: the service never imports torch), or why not."""
    missing = [m for m in ("torch", "sentence_transformers") if importlib.util.find_spec(m) is None]
    if missing or not (REPO / "training").is_dir():
        return f"{' and '.join(missing) or 'the training package'} not installed: no sentence-transformers row"
    with tempfile.TemporaryDirectory() as folder:
        out, lone_file = Path(folder) / "reference.json", Path(folder) / "lone.json"
        lone_file.write_text(json.dumps(lone or []))
        done = subprocess.run([sys.executable, "-m", "training", "reference-speed", "--texts", str(texts),
                               "--threads", str(os.cpu_count() or 1), "--out", str(out),
                               *(["--lone", str(lone_file)] if lone else []),
                               *(["--mpnet-wheels", str(MPNET_WHEELS)] if mpnet and MPNET_WHEELS.is_dir() else [])],
                              cwd=REPO, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0 or not out.exists():
            return f"reference-speed failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
        return json.loads(out.read_text())


def encoder_throughput(store: Path, texts: list[str], batch: int) -> dict:
    """Texts/s of the MiniLM path through `/score minilm-cosine` on a one-worker server: `batch` items of
    three distinct texts a request (reply, reference, context), one request at a time, kept alive."""
    items = [{"context": [texts[i + 2]], "response": texts[i], "reference": texts[i + 1]}
             for i in range(0, len(texts) - 2, 3)]
    bodies = [json.dumps({"model": "minilm-cosine", "items": items[i:i + batch]}).encode()
              for i in range(0, len(items), batch)]
    with serving(store, workers=1) as (port, _, _):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

        def send(body: bytes) -> None:
            conn.request("POST", "/score", body=body, headers={"Content-Type": "application/json"})
            response = conn.getresponse()
            response.read()
            if response.status != 200:
                raise RuntimeError(f"/score minilm-cosine answered {response.status}")

        send(bodies[-1])  # warm up on the last request; its texts are encoded again in the window (no cache across requests)
        started = time.perf_counter()
        for body in bodies:
            send(body)
        seconds = time.perf_counter() - started
        conn.close()
    return {"texts": 3 * len(items), "seconds": seconds, "texts_per_s": 3 * len(items) / seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench", description=__doc__)
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
    parser.add_argument("--latency-seconds", type=float, default=5.0,
                        help="duration of each one-request-at-a-time latency row (0: none)")
    parser.add_argument("--encoder-texts", type=int, default=2016,
                        help="distinct texts for the encoder against sentence-transformers (0: not measured)")
    parser.add_argument("--baseline", default="CPUExecutionProvider", metavar="PROVIDERS",
                        help="where the encoders run elsewhere, the same scenarios again with DIALSCORE_PROVIDERS "
                             "set to this, in the same run, beside the first (empty: never)")
    parser.add_argument("--write-bounds", action="store_true",
                        help="also merge the default run's moves with batch-mates for its encoders' provider and "
                             "compute into service/artifacts/batch_bounds.json (the larger per model), which "
                             "GET /models states, times batch_bounds.MARGIN, as the batch bounds")
    parser.add_argument("--write-docs", type=Path, metavar="MARKDOWN",
                        help="also write this machine's section of MARKDOWN (docs/benchmarks.md), keeping the rest")
    args = parser.parse_args(argv)

    header: list[str] = []
    notes: list[str] = []
    runs: dict[str, dict[str, dict]] = {}
    try:
        moves: dict[str, float] = {}
        served, runs["default"], memory = _suite(args, None, header, notes, moves)
        where = batch_bounds.key([c for m in served.values() for c in m.get("components", [])])
        if args.write_bounds and where and not where.startswith("CPUExecutionProvider"):
            batch_bounds.record(where, f"{_cpu_model()}, {os.cpu_count()} cores", moves)
            _say(notes, f"batch bounds for {where} merged into {batch_bounds.FIGURES.relative_to(REPO)}")
        elsewhere = {c.get("provider") for m in served.values() for c in m.get("components", [])} - {args.baseline}
        if args.baseline and elsewhere - {None}:
            _say(header, f"baseline: the same scenarios with DIALSCORE_PROVIDERS={args.baseline}, after the first")
            _, runs[args.baseline], _ = _suite(args, {"DIALSCORE_PROVIDERS": args.baseline}, header, notes)
        measure = args.encoder_texts and "minilm-cosine" in served
        encoder = _encoder_section(args, served, runs["default"], notes) if measure else {}
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "memory": memory, "encoder": encoder}, indent=2))
    _say(notes, f"load average after the run (1, 5, 15 min): {_load()}")
    if args.write_docs:
        machine = _machine()
        bench_docs.write(args.write_docs, machine, bench_docs.section(machine, header, runs, notes))
        print(f"wrote {machine}'s section of {args.write_docs}")
    return 0


def _say(lines: list[str], line: str) -> None:
    """Print a line of the report and keep it for --write-docs."""
    print(line, flush=True)
    lines.append(line)


def _load() -> str:
    """The machine's load averages: what else ran beside the figures (the load generator runs here too)."""
    return ", ".join(f"{v:.2f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"


def _machine() -> str:
    """The machine as a section of docs/benchmarks.md names it: the CPU's name, its bf16 arithmetic where
    it has some (two VMs both called "AMD EPYC", one AVX2-only, must not overwrite each other) and its cores."""
    from service.artifacts.openvino import BF16
    from service.artifacts.hardware import cpu_flags

    name = _cpu_model().split(" (")[0]
    bf16 = [flag for flag in BF16 if flag in cpu_flags()]
    return f"{name}{' with ' + ', '.join(bf16) if bf16 else ''}, {os.cpu_count()} cores"


def _suite(args: argparse.Namespace, extra: dict[str, str] | None, header: list[str],
           notes: list[str], moves: dict[str, float] | None = None) -> tuple[dict[str, dict], dict[str, dict], dict]:
    """One server's scenarios, latency rows, heavy request and memory; header lines for the first run
    (and, for a baseline run, what differs), the memory as a note; each score's move with its batch-mates
    also into `moves`."""
    results: dict[str, dict] = {}
    with serving(args.store, args.workers, extra) as (port, server, env):
        served = {m["name"]: m for m in _get(port, "/models")[1]["models"]}
        sampler = MemorySampler(server.pid)
        idle_worker, idle_total = sampler.sample()
        sampler.start()
        if extra is None:
            settings = " ".join(f"{k}={v}" for k, v in sorted(env.items())
                                if k.startswith("DIALSCORE_") and k != "DIALSCORE_API_TOKEN") or "none"
            _say(header, f"machine: {platform.machine()}, {_cpu_model()}, {os.cpu_count()} cores, "
                         f"{platform.python_implementation()} {platform.python_version()}, {platform.system()}; "
                         f"{_onnxruntime()}, commit {_commit()}")
            _say(header, f"run: gunicorn workers={args.workers}, clients={args.clients}, {args.seconds:.0f}s per "
                         f"scenario (load generator on the same machine); settings: {settings}")
            _say(header, f"load average before the run (1, 5, 15 min): {_load()}")
        _say(header, f"execution providers: {_providers_line(served)}{_gpu_names(served)}")
        _say(header, f"sentence encoders: {_encoder_line(served)}")
        _say(header, f"encoders' provider chosen by: {_provider_reason(served)}")
        print(f"{'scenario':42s} {'items/s':>9s} {'req/s':>8s} {'p50 ms':>8s} {'p99 ms':>8s} {'fail':>5s} {'spread':>7s}")
        for label, path, body, n in _scenarios(args, served):
            results[label] = run_scenario(port, body, n, args.clients, args.seconds, path)
            print_row(label, results[label])
        if args.latency_seconds:
            print(f"one request at a time, kept alive, {args.latency_seconds:.0f}s each (items/s: requests/s)")
            for label, path, body in _latency_requests(served):
                results[f"one at a time: {label}"] = run_one_at_a_time(port, path, body, args.latency_seconds)
                print_row(label, results[f"one at a time: {label}"])
        if args.heavy:
            limits = _get(port, "/models")[1]["limits"]
            reply_models = [n for n, m in served.items() if m["kind"] != "dialogue"]
            # Each heavy item's 4 texts reach each encoder's truncation, so max_encoder_tokens caps the items
            # one request may carry (97 at the default, 65 with mpnet-base): more would only measure 413s.
            n = min(args.heavy, limits.get("max_encoder_tokens", 1 << 62) // (4 * heavy_pieces(served, args.store)))
            chars = heavy_chars(n, limits)
            body = {"models": reply_models, "items": heavy_items(n, chars)}
            label = f"heavy: all {len(reply_models)} x{n}, {chars} chars, {args.clients} at once"
            # The longest budget the server takes: admission refused two of four at the default 30 s, and
            # the step measures what a pod holds (and how long it takes) when all of them run.
            results[label] = run_scenario(port, body, n, args.clients, seconds=None, budget="3600")
            print_row(label, results[label])
        where = f"DIALSCORE_PROVIDERS={extra['DIALSCORE_PROVIDERS']}" if extra else "default providers"
        measured = batch_moves(port, served, args.batch)
        (moves if moves is not None else {}).update(measured)
        _say(notes, f"largest move of a score with its batch-mates ({where}; "
                    f"{BOUND_DRAWS} sets of {args.batch} distinct items of 1 to 40 or to {LONG_WORDS} words, scored together and each alone, and as "
                    f"much again with a shared context; as a share of the model's range): "
                    + ", ".join(f"{name} {move:.1e}" for name, move in measured.items()))
        sampler.halt.set()
        sampler.join()
        memory = {"idle_worker_mib": idle_worker / 1024, "idle_total_mib": idle_total / 1024,
                  "peak_worker_mib": sampler.peak_worker / 1024, "peak_total_mib": sampler.peak_total / 1024}
        _say(notes, f"memory (PSS, {args.workers} workers{', ' + str(extra) if extra else ''}): idle "
                    f"{memory['idle_worker_mib']:.0f} MiB per worker, {memory['idle_total_mib']:.0f} MiB in all; peak "
                    f"{memory['peak_worker_mib']:.0f} MiB per worker, {memory['peak_total_mib']:.0f} MiB in all "
                    f"(sampled every {SAMPLE_SECONDS} s)")
    return served, results, memory


def _scenarios(args: argparse.Namespace, served: dict[str, dict]) -> list[tuple[str, str, dict, int]]:
    """The throughput scenarios, (label, path, body, items): per model x`batch` and x1 (and adem-minilm's
    re-ranking shape), one item to every reply model, then /rerank with every reference-free model served."""
    scenarios = []
    for name in [m for m in args.models.split(",") if m]:
        if name not in served:
            print(f"{name + ' (not served, skipped)':42s}")
            continue
        kind = served[name]["kind"]
        scenarios.append((f"{name} x{args.batch}", "/score", {"model": name, "items": items_for(kind, args.batch)},
                          args.batch))
        scenarios.append((f"{name} x1", "/score", {"model": name, "items": items_for(kind, 1)}, 1))
        if name == "adem-minilm":  # what the per-request encode cache saves when items share text
            scenarios.append((f"{name} x{args.batch}, one context (re-ranking)", "/score",
                              {"model": name, "items": items_for(kind, args.batch, shared_context=True)}, args.batch))
    reply_models = [n for n, m in served.items() if m["kind"] != "dialogue"]
    scenarios.append((f"all {len(reply_models)} reply models, 1 item", "/score",
                      {"models": reply_models, "items": items_for("referenced", 1)}, 1))
    for name in sorted(n for n, m in served.items() if m["kind"] == "unreferenced"):
        scenarios.append((f"{name} /rerank {args.batch}, 3-turn context", "/rerank",
                          rerank_body(name, RERANK_CONTEXT, args.batch), args.batch))
    for name in sorted(n for n, m in served.items() if REFERENCE_FREE in m.get("options", {})):
        body = {**rerank_body(name, RERANK_CONTEXT, args.batch), "options": {REFERENCE_FREE: True}}
        scenarios.append((f"{name}:{REFERENCE_FREE} /rerank {args.batch}, 3-turn context", "/rerank", body, args.batch))
    return scenarios


RERANK_CONTEXT = [*CONTEXT, "maybe, which cinema were you thinking of?"]


def rerank_body(model: str, context: list[str], n: int) -> dict:
    """/rerank of `n` distinct candidate replies (numbered) to one `context`."""
    return {"model": model, "context": context, "candidates": [f"{REPLIES[i % 4]} ({i})" for i in range(n)]}


def _latency_requests(served: dict[str, dict]) -> list[tuple[str, str, dict]]:
    """One item for each MiniLM model served, and /rerank of 8 and of 32 candidates to a 2-turn context with
    autojudge-minilm and every reference-free model served (the tiers a live bot re-ranks with)."""
    requests = [(f"{name} 1 item", "/score", {"model": name, "items": items_for(served[name]["kind"], 1)})
                for name in MINILM_MODELS if name in served]
    for name in sorted({RERANK_MODEL, *(n for n, m in served.items() if m["kind"] == "unreferenced")}):
        if name in served:
            for n in (8, 32):
                requests.append((f"{name} /rerank {n}, 2-turn context", "/rerank", rerank_body(name, CONTEXT, n)))
    return requests


def _encoder_section(args: argparse.Namespace, served: dict[str, dict], results: dict[str, dict],
                     notes: list[str]) -> dict:
    """The MiniLM path through /score (one worker) against sentence-transformers, same texts, same run;
    and each lone MiniLM re-ranking's p50 against torch encoding its 33 texts (the last context turn and
    the 32 candidates) one call at a time."""
    lone = [CONTEXT[-1], *rerank_body(RERANK_MODEL, CONTEXT, 32)["candidates"]]
    reference = reference_speed(args.encoder_texts, lone, mpnet=any("mpnet" in label for label in results))
    if isinstance(reference, dict):
        texts, source = reference["texts"], (f"{len(reference['texts'])} distinct DailyDialog validation turns, "
                                             f"{reference['mean_pieces']:.1f} word pieces on average")
    else:
        texts = [f"{REPLIES[i % 4]} ({i})" for i in range(args.encoder_texts)]
        source = f"{len(texts)} distinct bench replies"
    service = encoder_throughput(args.store, texts, args.batch)
    _say(notes, f"encoder: {source}; /score minilm-cosine, 1 worker, {args.batch} items of 3 texts a request, "
                f"one at a time: service {service['texts_per_s']:.1f} texts/s")
    if not isinstance(reference, dict):
        _say(notes, f"sentence-transformers: {reference}")
        return {"service": service, "reference": reference}
    ratio = service["texts_per_s"] / reference["texts_per_s"]
    _say(notes, f"sentence-transformers ({reference['versions']}, fp32 eager, batch {reference['batch']}, "
                f"{reference['threads']} threads, in-process): {reference['texts_per_s']:.1f} texts/s; "
                f"ratio service / sentence-transformers: {ratio:.2f}")
    for label, result in results.items():
        if "minilm" in label and "mpnet" not in label and label.startswith("one at a time:") and "/rerank 32" in label:
            _say(notes, f"{label.removeprefix('one at a time: ')}: p50 {result['p50_ms']:.1f} ms against torch "
                        f"encoding its {reference['lone_texts']} texts in {reference['lone_ms']:.1f} ms (median): "
                        f"{reference['lone_ms'] / result['p50_ms']:.2f}x")
        if "unref-mpnet /rerank 32" in label and label.startswith("one at a time:") and "mpnet_lone_ms" in reference:
            _say(notes, f"{label.removeprefix('one at a time: ')}: p50 {result['p50_ms']:.1f} ms against torch "
                        f"encoding its {reference['lone_texts']} texts with mpnet in {reference['mpnet_lone_ms']:.1f} "
                        f"ms (median): {reference['mpnet_lone_ms'] / result['p50_ms']:.2f}x")
    return {"service": service, "reference": {k: v for k, v in reference.items() if k != "texts"}, "ratio": ratio}


if __name__ == "__main__":
    raise SystemExit(main())
