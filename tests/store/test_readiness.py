"""Pod-level readiness: /readyz is 200 only once every gunicorn worker has loaded its models."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from service.store import readiness as worker_readiness
from service.api.dataplane import readiness
from service.store.model_store import ModelStore


@pytest.fixture()
def pod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "ready"
    monkeypatch.setenv(worker_readiness.DIR_ENV, str(folder))
    worker_readiness.record_workers(2)
    return folder


LIVE = (os.getpid(), os.getppid())  # markers count only while their process runs


def test_a_marker_the_master_could_not_remove_does_not_count_a_dead_worker(pod: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    worker_readiness.mark_ready(int(dead))
    worker_readiness.mark_ready(LIVE[0])
    assert worker_readiness.pod_status() == (1, 2)


def test_outside_gunicorn_readiness_is_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(worker_readiness.DIR_ENV, raising=False)
    worker_readiness.mark_ready(123)  # no folder: nothing to write, no error
    assert worker_readiness.pod_status() is None


def test_markers_count_workers_and_forget_drops_a_dead_one(pod: Path) -> None:
    assert worker_readiness.pod_status() == (0, 2)
    worker_readiness.mark_ready(LIVE[0])
    worker_readiness.mark_ready(LIVE[1])
    assert worker_readiness.pod_status() == (2, 2)
    worker_readiness.forget(LIVE[0])
    assert worker_readiness.pod_status() == (1, 2)
    worker_readiness.clear(pod)
    assert worker_readiness.pod_status() == (0, 2)


def _loaded_store(tmp_path: Path) -> ModelStore:
    store = ModelStore(tmp_path / "empty-store")
    store.loaded = True
    return store


def test_the_pod_is_ready_once_every_worker_has_loaded_then_while_any_serves(pod: Path, tmp_path: Path) -> None:
    """At start a worker that has loaded is not the pod (its sibling still loading takes connections);
    once every worker has, a worker killed or recycled must not take the pod out of the Service while
    another serves (its replacement loads before it takes a connection)."""
    store = _loaded_store(tmp_path)
    worker_readiness.mark_ready(LIVE[0])
    ready, details = readiness(store)
    assert not ready and details["loading"] is True and (details["workers_ready"], details["workers"]) == (1, 2)
    assert not worker_readiness.pod_was_ready()
    worker_readiness.mark_ready(LIVE[1])  # the last to load marks the pod
    assert worker_readiness.pod_was_ready()
    ready, details = readiness(store)
    assert ready and details["workers_ready"] == 2
    worker_readiness.forget(LIVE[1])  # a sibling exited; its replacement loads
    ready, details = readiness(store)
    assert ready and details["workers_ready"] == 1 and details["workers"] == 2
    assert not readiness(ModelStore(tmp_path / "empty-store"))[0]  # this worker still loading: never ready
    worker_readiness.clear(pod)  # a restarted master starts over
    assert not worker_readiness.pod_was_ready() and not readiness(store)[0]


def test_not_ready_says_how_many_workers_have_loaded(pod: Path, client) -> None:
    worker_readiness.clear(pod)
    worker_readiness.mark_ready(LIVE[0])
    response = client.get("/readyz")
    assert response.status_code == 503 and response.headers["Retry-After"]
    error = response.get_json()["error"]
    assert error["code"] == "not_ready" and "1 of 2 workers have loaded" in error["message"], error


def test_readyz_counts_the_workers_that_serve(pod: Path, client) -> None:
    worker_readiness.clear(pod)
    worker_readiness.mark_ready(LIVE[0])
    worker_readiness.mark_ready(LIVE[1])
    worker_readiness.forget(LIVE[1])
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.get_json()["workers_ready"] == 1 and response.get_json()["workers"] == 2


def test_a_worker_running_under_another_user_counts_as_alive(pod: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """os.kill(pid, 0) raises PermissionError for a live process of another user (EPERM), and
    ProcessLookupError only for one that is gone: the first is a loaded worker, or the pod never
    reports ready."""
    worker_readiness.mark_ready(4242)
    worker_readiness.mark_ready(4343)

    def kill(pid: int, signal: int) -> None:
        assert signal == 0
        if pid == 4242:
            raise PermissionError(1, "Operation not permitted")
        raise ProcessLookupError(3, "No such process")

    monkeypatch.setattr(os, "kill", kill)
    assert worker_readiness.pod_status() == (1, 2)


def test_a_worker_whose_store_has_just_loaded_counts_itself_before_its_marker(pod: Path, tmp_path: Path) -> None:
    """The worker's marker is written before its store says loaded: a /readyz that sees the store loaded
    counts this worker (once), never 200 with `workers_ready: 0`."""
    from tests.conftest import copy_store

    store = ModelStore(copy_store(tmp_path / "store", ("length",)))
    assert store.load()
    ready, details = readiness(store)
    assert not ready and details["workers_ready"] == 1 and details["workers"] == 2  # its sibling has not loaded
    worker_readiness.mark_ready(os.getpid())
    assert readiness(store)[1]["workers_ready"] == 1


def _step_down_together(start, done, results) -> None:  # a worker: loaded, then past its limit with the others
    worker_readiness.mark_ready(os.getpid())
    start.wait()
    results.put(worker_readiness.step_down(os.getpid()))
    done.wait()  # alive until every worker has decided: a marker counts only while its process runs


@pytest.mark.parametrize("workers", [2, 6])
def test_of_workers_past_their_limit_together_one_steps_down(pod: Path, monkeypatch: pytest.MonkeyPatch,
                                                           workers: int) -> None:
    """Each worker checked its siblings' markers and then dropped its own: workers deciding together each
    saw the others serving, and all recycled at once, leaving the pod no worker while they reloaded."""
    import multiprocessing

    worker_readiness.record_workers(workers)
    context = multiprocessing.get_context("fork")
    start, done, results = context.Barrier(workers), context.Barrier(workers + 1), context.Queue()
    processes = [context.Process(target=_step_down_together, args=(start, done, results)) for _ in range(workers)]
    for process in processes:
        process.start()
    decisions = [results.get(timeout=30) for _ in processes]
    done.wait(timeout=30)
    for process in processes:
        process.join(timeout=30)
    assert sorted(decisions) == [False] * (workers - 1) + [True]
    assert worker_readiness.pod_status() == (0, workers)  # the markers' processes have exited


def test_a_worker_steps_down_only_while_every_sibling_serves(pod: Path) -> None:
    worker_readiness.mark_ready(LIVE[0])
    assert worker_readiness.step_down(LIVE[0]) is False  # its sibling has not loaded
    worker_readiness.mark_ready(LIVE[1])
    assert worker_readiness.step_down(LIVE[0]) is True and worker_readiness.loaded_workers() == {LIVE[1]}


def test_a_count_that_cannot_be_written_is_logged_and_no_worker_recycles(tmp_path, monkeypatch, caplog) -> None:
    """record_workers runs in a gunicorn hook, where an exception ends the master and every worker."""
    import logging

    hooks = logging.getLogger("gunicorn.error")  # another test's logging set-up may have detached it
    monkeypatch.setattr(hooks, "propagate", True)
    monkeypatch.setattr(hooks, "disabled", False)
    caplog.set_level(logging.ERROR, logger="gunicorn.error")
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv(worker_readiness.DIR_ENV, str(blocked))
    worker_readiness.record_workers(2)  # no exception
    assert "could not record the pod's worker count" in caplog.text
    assert worker_readiness.pod_workers() is None and worker_readiness.step_down(LIVE[0]) is False
