"""The server under test: `python -m service` on a free loopback port, in its own process group, with its
default settings (the environment's DIALSCORE_* as they are, no metrics folder inherited)."""
from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
LOG_TAIL = 3000  # characters of the server's log shown when it fails to start
STOP_WAIT_S = 30  # a stopped server's grace before SIGKILL
RUNNING: list[OwnServer] = []


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def children(pid: int) -> list[int]:
    """A process's children (the gunicorn master's workers), from /proc/<pid>/task/<pid>/children or,
    where the kernel lacks that file, from every process's parent."""
    try:
        return sorted(int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split())
    except OSError:
        pass
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return sorted(found)


class OwnServer:
    """Start with start(); `url`, `process` (the master); stop() ends the whole group. Every one started is
    in RUNNING until stopped, so an interrupted run can stop them all (stop_all)."""

    def __init__(self, workers: int | None = None, ready_timeout: float = 180.0) -> None:
        self.workers, self.ready_timeout = workers, ready_timeout
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = Path(tempfile.mkstemp(prefix=f"loadtest-server-{self.port}-", suffix=".log")[1])
        self.process: subprocess.Popen | None = None

    def start(self) -> OwnServer:
        env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
        command = [sys.executable, "-m", "service", "--host", "127.0.0.1", "--port", str(self.port)]
        if self.workers:
            command += ["--workers", str(self.workers)]
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        RUNNING.append(self)
        try:
            self._wait_ready()
        except BaseException:
            self.stop(kill=True)
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited ({self.process.returncode}): {self.tail()}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/readyz")
                status = conn.getresponse().status
                conn.close()
                if status == 200:
                    return
            except (OSError, http.client.HTTPException):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"not ready in {self.ready_timeout:g}s: {self.tail()}")
            time.sleep(0.2)

    def tail(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-LOG_TAIL:]

    def workers_now(self) -> list[int]:
        return children(self.process.pid) if self.process else []

    def wait_exit(self, timeout: float) -> int | None:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, kill: bool = False) -> None:
        """SIGTERM to the group, SIGKILL after STOP_WAIT_S (at once with `kill`: a backlog is not worth draining);
        then any worker that outlived the master."""
        if self.process is None:
            return
        if self.process.poll() is None and not kill:
            os.killpg(self.process.pid, signal.SIGTERM)
            if self.wait_exit(STOP_WAIT_S) is None:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=STOP_WAIT_S)
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if self in RUNNING:
            RUNNING.remove(self)
        self.log.unlink(missing_ok=True)


def stop_all() -> None:
    for server in list(RUNNING):
        server.stop(kill=True)
