"""Readiness of the whole pod, not of the one gunicorn worker that answers /readyz.

The kubelet's probe reaches whichever worker accepts the connection, so each worker, once its store has loaded
cleanly, drops a marker named after its pid into a folder the pod shares (server/gunicorn.conf.py
sets it; the master removes a dead worker's marker). The pod is ready while any worker serves: a
worker still loading leaves new connections to one that has loaded (server/worker.py), so the
worker that answers /readyz is one that serves, or, for a moment, one that names a sibling's models
(each marker lists its worker's). Without the folder (tests) readiness is per process.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

DIR_ENV = "DIALSCORE_READY_DIR"  # shared marker folder; set by gunicorn.conf.py
WORKERS_ENV = "DIALSCORE_POD_WORKERS"  # how many workers the master runs; set in each worker by post_fork
PREFIX = "ready-"
PROBE_PATHS = frozenset({"/healthz", "/readyz"})  # the kubelet's: no credentials, no worker recycling
V2_PROBE_PATHS = frozenset({"/v2/health/live", "/v2/health/ready"})  # the same, as the Open Inference Protocol names them


def marker_dir() -> Path | None:
    value = os.environ.get(DIR_ENV)
    return Path(value) if value else None


def marker(pid: int, folder: Path) -> Path:
    return folder / f"{PREFIX}{pid}"


def mark_ready(pid: int | None = None, models: Iterable[str] = ()) -> None:
    """Record that this worker's models are loaded, and which (a no-op outside gunicorn). The marker is
    written whole before it takes its name: a reader never finds it half written."""
    folder = marker_dir()
    if folder is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    path = marker(pid or os.getpid(), folder)
    staged = path.with_name("." + path.name)
    staged.write_text("\n".join(models))
    os.replace(staged, path)


def served_models() -> list[str]:
    """The models a loaded worker of the pod serves, from its marker; [] where none is known. A worker
    still loading can answer /readyz in the moment before it leaves connections to its siblings."""
    folder = marker_dir()
    for pid in sorted(loaded_workers() or ()):
        try:
            return marker(pid, folder).read_text().split()  # type: ignore[arg-type]
        except OSError:  # its worker exited and the master removed it
            continue
    return []


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


def clear(folder: Path) -> None:
    """Remove every marker: a restarted master must not count a previous run's workers."""
    if folder.is_dir():
        for path in folder.glob(f"{PREFIX}*"):
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
    expected = os.environ.get(WORKERS_ENV)
    loaded = loaded_workers()
    if loaded is None or not expected:
        return None
    return len(loaded), int(expected)


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
