"""The real server for tests: `python -m service` (gunicorn) on a free loopback port, stopped afterwards.

One copy of what tests/integration/test_gunicorn.py and tests/server/test_shutdown.py each did by hand:
pick a free port, start the server in its own session, wait for /readyz, and on the way out stop
the master and every worker (the whole process group), printing the end of the server's log
when the server or the test failed. tests/server/test_readonly_root.py takes only free_port (its server
starts inside a mount namespace, from a script). benchmarks/bench.py has its own.
"""
from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from benchmarks.loadtest.server import free_port

REPO = Path(__file__).resolve().parent.parent
# The interpreter that runs the server: this one, unless DIALSCORE_TEST_SERVER_PYTHON names another, so that
# the client's tests can run under a Python the service does not install on (`make client-pythons`).
SERVER_PYTHON = os.environ.get("DIALSCORE_TEST_SERVER_PYTHON") or sys.executable
LOG_TAIL = 3000  # characters of the server's log shown when something fails


@dataclass
class RunningServer:
    url: str  # http://127.0.0.1:PORT, no trailing slash
    port: int
    process: subprocess.Popen  # the gunicorn master, leader of its own process group
    log_path: Path  # its stdout and stderr together
    ready: tuple[int, Any]  # the /readyz answer that ended the wait: (status, body)

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")


def _get(port: int, path: str) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        payload = response.read()
    finally:
        conn.close()
    if "json" in (response.getheader("Content-Type") or ""):
        return response.status, json.loads(payload)
    return response.status, payload.decode("utf-8", "replace")


def metric(port: int, line_start: str) -> float:
    """The sum of the /metrics samples whose line starts with `line_start` (every worker's, folded)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(line_start))


def _failed_models(status: int, body: Any) -> bool:
    """A 503 that names models which failed to load: waiting longer will not make it ready."""
    return status == 503 and isinstance(body, dict) and bool(body.get("error", {}).get("details", {}).get("failed"))


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM to the group (master and workers), SIGKILL after 30 s; then any worker left behind."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
    try:  # the master is gone; a worker that outlived it still holds the group
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _tail(log_path: Path) -> str:
    return log_path.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL:]


def _wait_ready(process: subprocess.Popen, port: int, log_path: Path, timeout: float,
                allow_failed_models: bool) -> tuple[int, Any]:
    deadline = time.monotonic() + timeout
    last: tuple[int, Any] | None = None
    while True:
        if process.poll() is not None:
            raise AssertionError(f"the server exited ({process.returncode}): {_tail(log_path)}")
        try:
            last = _get(port, "/readyz")
        except (OSError, http.client.HTTPException, ValueError):
            pass
        else:
            if last[0] == 200 or (allow_failed_models and _failed_models(*last)):
                return last
            if _failed_models(*last):
                raise AssertionError(f"models failed to load: {last}: {_tail(log_path)}")
        if time.monotonic() > deadline:
            raise AssertionError(f"not ready in {timeout}s: {last}: {_tail(log_path)}")
        time.sleep(0.2)


@contextmanager
def running_server(store: Path, env: dict[str, str] | None = None, *, timeout: float = 180, workers: int = 2,
                   cwd: Path = REPO, allow_failed_models: bool = False,
                   command: tuple[str, ...] | None = None) -> Iterator[RunningServer]:
    """`python -m service --host 127.0.0.1 --port <free> --workers N` serving `store`, ready.

    env: overrides on top of this process's environment (PROMETHEUS_MULTIPROC_DIR is dropped unless
    given here, so each server has its own metrics). timeout: seconds for /readyz to answer 200; a
    503 naming models that failed to load ends the wait at once, as an error unless
    allow_failed_models. The log goes to `<store's parent>/server-<port>.log`. command: another
    way to start it (e.g. an installed `dialscore serve`), run as it is: no PYTHONPATH and no
    DIALSCORE_MODEL_STORE are added, so it serves its own default store, and `store` only places the log.
    """
    port = free_port()
    environment = {**os.environ, "PYTHONPATH": str(REPO), "DIALSCORE_MODEL_STORE": str(store)}
    if command is not None:
        environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("DIALSCORE_")}
    environment.pop("PROMETHEUS_MULTIPROC_DIR", None)
    environment.update(env or {})
    log_path = store.parent / f"server-{port}.log"
    start = command or (SERVER_PYTHON, "-m", "service")
    with open(log_path, "wb") as log:
        process = subprocess.Popen([*start, "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)],
                                   cwd=cwd, env=environment, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            ready = _wait_ready(process, port, log_path, timeout, allow_failed_models)
            try:
                yield RunningServer(f"http://127.0.0.1:{port}", port, process, log_path, ready)
            except BaseException:
                print(f"--- the server's log ({log_path}), last {LOG_TAIL} characters ---\n{_tail(log_path)}")
                raise
        finally:
            _stop(process)


def worker_pids(master: int) -> set[int]:
    """The master's children, from /proc (as the bench finds the workers it measures)."""
    from benchmarks.bench import _workers_of

    return set(_workers_of(master))
