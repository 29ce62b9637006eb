"""gunicorn's operator signals on a real `python -m service` (service/server/gunicorn.conf.py's hooks): TTIN's
new worker loads before it takes a connection, every worker reads the master's current count, USR2 is
refused in the log."""
from __future__ import annotations

import os
import signal
import time

from tests.conftest import copy_store
from tests.integration.test_gunicorn import _call
from tests.live_server import running_server

ITEM = {"context": ["any plans tonight?"], "response": "a film, i think."}


def _workers(pid: int) -> set[int]:
    with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as children:
        return {int(child) for child in children.read().split()}


def _counts(port: int, tries: int = 12) -> set[tuple[int, int]]:
    """(workers ready, workers) as /readyz gives them over several fresh connections (each may reach either
    worker)."""
    return {(body.get("workers_ready"), body.get("workers")) for body in
            (_call(port, "GET", "/readyz")[1] for _ in range(tries))}


def test_ttin_adds_a_worker_that_loads_before_it_serves_and_ttou_a_count_every_worker_reads(tmp_path):
    store = copy_store(tmp_path / "model_store", ("length", "unref-minilm"))
    with running_server(store, workers=1) as srv:
        first = _workers(srv.process.pid)
        os.kill(srv.process.pid, signal.SIGTTIN)
        statuses, deadline = [], time.monotonic() + 120
        while len(_workers(srv.process.pid)) < 2 or _counts(srv.port, 4) != {(2, 2)}:
            assert time.monotonic() < deadline, srv.log()[-2000:]
            statuses.append(_call(srv.port, "POST", "/score", {"model": "length", "items": [ITEM]})[0])
        # the new worker, background-loading, took connections and answered them 503 `not_ready`
        statuses += [_call(srv.port, "POST", "/score", {"model": "length", "items": [ITEM]})[0] for _ in range(20)]
        assert set(statuses) == {200}, {s: statuses.count(s) for s in set(statuses)}
        assert _counts(srv.port) == {(2, 2)}
        os.kill(srv.process.pid, signal.SIGTTOU)  # the oldest leaves; the one TTIN added stays
        deadline = time.monotonic() + 60
        while _workers(srv.process.pid) & first:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert _counts(srv.port) == {(1, 1)}  # it had read 2 when it forked
        assert _call(srv.port, "GET", "/readyz")[0] == 200


def test_usr2_is_refused_in_the_log_and_the_server_serves_on(tmp_path):
    store = copy_store(tmp_path / "model_store", ("length",))
    with running_server(store, workers=1) as srv:
        workers = _workers(srv.process.pid)
        os.kill(srv.process.pid, signal.SIGUSR2)
        deadline = time.monotonic() + 30
        while "USR2 ignored" not in srv.log():
            assert time.monotonic() < deadline, srv.log()[-2000:]
            time.sleep(0.1)
        time.sleep(1.0)  # a re-exec would have forked a new master by now
        assert _workers(srv.process.pid) == workers and "can't open file" not in srv.log()
        assert _call(srv.port, "POST", "/score", {"model": "length", "items": [ITEM]})[0] == 200
        assert _call(srv.port, "GET", "/readyz")[0] == 200
