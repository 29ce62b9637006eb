"""service/server/gunicorn.conf.py as `python -m service` runs it: where it binds."""
from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from benchmarks.loadtest.server import free_port
from tests.conftest import REPO


def _healthz_over_ipv6(port: int) -> int | None:
    conn = http.client.HTTPConnection("::1", port, timeout=5)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status
    except OSError:
        return None
    finally:
        conn.close()


@pytest.mark.parametrize("host", ["::1", "[::1]"])
def test_an_ipv6_loopback_host_serves(host, tmp_path):
    """docs/deploy.md names ::1 as loopback; unbracketed, gunicorn stopped with "'' is not a valid port number"."""
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError as exc:
        pytest.skip(f"this machine has no IPv6 loopback to bind ({exc})")
    env = {**os.environ, "PYTHONPATH": str(REPO), "DIALSCORE_HOST": host, "DIALSCORE_PORT": str(free_port()),
           "DIALSCORE_WORKERS": "1", "DIALSCORE_MODELS": "length"}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    log_path = tmp_path / "server.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen([sys.executable, "-m", "service"], cwd=REPO, env=env, stdout=log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        status = None
        while status != 200 and server.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
            status = _healthz_over_ipv6(int(env["DIALSCORE_PORT"]))
        assert status == 200, log_path.read_text(errors="replace")[-3000:]
        assert f"Listening at: http://[::1]:{env['DIALSCORE_PORT']}" in log_path.read_text(errors="replace")
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=60)
