"""gunicorn's operator signals (service/server/gunicorn.conf.py's hooks, worker.py's drain), on a real
`python -m service` where a test starts one: TTIN's new worker loads before it takes a connection, every
worker reads the master's current count, a draining worker is no sibling to count, USR2 is refused."""
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
        # no connection reaches the new worker before its models are loaded: no 503 `not_ready`
        statuses += [_call(srv.port, "POST", "/score", {"model": "length", "items": [ITEM]})[0] for _ in range(20)]
        assert set(statuses) == {200}, {s: statuses.count(s) for s in set(statuses)}
        assert _counts(srv.port) == {(2, 2)}
        os.kill(srv.process.pid, signal.SIGTTOU)  # the oldest leaves; the one TTIN added stays
        deadline = time.monotonic() + 60
        while _workers(srv.process.pid) & first:
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert _counts(srv.port) == {(1, 1)}  # the count now, not the one at its fork (2)
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


def test_a_worker_told_to_stop_drops_its_readiness_marker(tmp_path, monkeypatch):
    """TTOU (and HUP, and the pod's SIGTERM) drain a worker while its siblings serve: it no longer serves, so
    no sibling may count it to recycle (two siblings doing so would leave the pod no worker)."""
    from types import SimpleNamespace

    from uvicorn import Config

    from service.server.worker import DrainingServer
    from service.store import readiness

    monkeypatch.setenv(readiness.DIR_ENV, str(tmp_path))
    readiness.record_workers(2)
    readiness.mark_ready(os.getpid())
    readiness.mark_ready(os.getppid())  # a live sibling
    front = SimpleNamespace(stopping_since=None)
    server = DrainingServer(Config(app=front), front, master=os.getppid())
    server.handle_exit(signal.SIGTERM, None)
    assert front.stopping_since is not None and readiness.loaded_workers() == {os.getppid()}
    assert readiness.step_down(os.getppid()) is False  # the sibling alone serves: it may not recycle now
