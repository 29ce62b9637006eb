"""Readiness of the whole pod, not of the one gunicorn worker that answers /readyz.

The kubelet's probe reaches whichever worker accepts the connection, so each worker, once its store has loaded
cleanly, drops a marker named after its pid into a folder the pod shares (server/gunicorn.conf.py
sets it; the master removes a dead worker's marker). The pod is ready once every worker has loaded
(the last to load marks the pod), then while any serves: a worker that replaces another loads before
it takes a connection (server/gunicorn.conf.py), so no worker still loading answers a ready pod's
requests. Without the folder (tests) readiness is per process.
"""
from __future__ import annotations

import fcntl
import logging
import os
from pathlib import Path

DIR_ENV = "DIALSCORE_READY_DIR"  # shared marker folder; set by gunicorn.conf.py
WORKERS_FILE = "workers"  # how many workers the master runs; rewritten as TTIN and TTOU change it
PREFIX = "ready-"
LOCK = "recycling.lock"  # held while a worker checks its siblings and drops its marker
POD_READY = "pod-ready"  # every worker had loaded once: from then on, one serving worker keeps the pod ready
PROBE_PATHS = frozenset({"/healthz", "/readyz"})  # the kubelet's: no credentials, no worker recycling
V2_PROBE_PATHS = frozenset({"/v2/health/live", "/v2/health/ready"})  # the same, as the Open Inference Protocol names them


def marker_dir() -> Path | None:
    value = os.environ.get(DIR_ENV)
    return Path(value) if value else None


def marker(pid: int, folder: Path) -> Path:
    return folder / f"{PREFIX}{pid}"


def mark_ready(pid: int | None = None) -> None:
    """Record that this worker's models are loaded (a no-op outside gunicorn), and, where every worker's
    are, that the pod has been ready."""
    folder = marker_dir()
    if folder is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    marker(pid or os.getpid(), folder).touch()
    status = pod_status()  # after its own marker: of workers that load together, the last sees them all
    if status is not None and status[0] >= status[1]:
        (folder / POD_READY).touch()


def pod_was_ready() -> bool:
    """Whether every worker of the pod had its models loaded at once since the master started (True
    outside gunicorn)."""
    folder = marker_dir()
    return folder is None or (folder / POD_READY).exists()


def forget(pid: int) -> None:
    """Drop a worker's marker (the master calls this when the worker exits). An OSError is logged, not
    raised: in a gunicorn hook it would end the master's loop; a marker left is not counted once its
    worker is gone."""
    folder = marker_dir()
    try:
        if folder is not None:
            marker(pid, folder).unlink(missing_ok=True)
    except OSError:
        logging.getLogger("gunicorn.error").exception("could not remove the readiness marker of worker %s", pid)


def step_down(pid: int) -> bool:
    """Drop this worker's marker, so that it may recycle, only where every sibling's is there (True outside
    gunicorn; False where the count cannot be read). One step under a lock the workers share: two workers
    checking together would each see the other serving, recycle at once and leave the pod no worker while
    both reload."""
    folder, workers = marker_dir(), pod_workers()
    if folder is None:
        return True
    if not workers:  # the count is unknown: the siblings cannot be counted
        return False
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released as the file closes
        if len(loaded_workers() - {pid}) < workers - 1:  # type: ignore[operator]
            return False
        forget(pid)
        return True


def record_workers(count: int) -> None:
    """The master's worker count, for every worker to read (pod_workers); replaced whole, never half written.
    An OSError is logged, not raised (a gunicorn hook's exception ends the master); without the count no
    worker recycles (step_down) and /readyz counts no workers."""
    folder = marker_dir()
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{WORKERS_FILE}.{os.getpid()}"
        partial.write_text(str(count), encoding="ascii")
        partial.replace(folder / WORKERS_FILE)
    except OSError:
        logging.getLogger("gunicorn.error").exception("could not record the pod's worker count (%s)", count)


def pod_workers() -> int | None:
    """How many workers the master runs now, or None outside gunicorn."""
    folder = marker_dir()
    try:
        return None if folder is None else int((folder / WORKERS_FILE).read_text(encoding="ascii"))
    except (OSError, ValueError):
        return None


def clear(folder: Path) -> None:
    """Remove every marker: a restarted master must not count a previous run's workers."""
    if folder.is_dir():
        for path in [*folder.glob(f"{PREFIX}*"), folder / POD_READY]:
            path.unlink(missing_ok=True)


def loaded_workers() -> set[int] | None:
    """The pids of live workers with their models loaded, or None outside gunicorn."""
    folder = marker_dir()
    if folder is None:
        return None
    if not folder.is_dir():
        return set()
    names = (path.name[len(PREFIX):] for path in folder.glob(f"{PREFIX}*"))
    return {int(name) for name in names if _alive(name)}


def pod_status() -> tuple[int, int] | None:
    """(workers with their models loaded, workers the master runs), or None outside gunicorn."""
    expected = pod_workers()
    loaded = loaded_workers()
    if loaded is None or not expected:
        return None
    return len(loaded), expected


def _alive(pid: str) -> bool:
    """Whether a marker's worker still runs: a marker the master could not remove (a failing volume)
    must not count a dead worker as loaded."""
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:  # alive, under another user
        return True
    return True
