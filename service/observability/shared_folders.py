"""The folders a pod's gunicorn workers write and its master reads: Prometheus multiprocess samples
(PROMETHEUS_MULTIPROC_DIR) and readiness markers (DIALSCORE_READY_DIR, service/store/readiness.py).

The master makes them (a temporary folder each where the operator set none) before the workers fork,
starts the samples empty, folds an exited worker's samples and removes the folders it made when it
stops. prometheus_client picks its multiprocess value class when first imported, so nothing here
imports it before `claim` has set the variable.
"""
from __future__ import annotations

import fcntl
import logging
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from service.config import check_writable

METRICS_ENV = "PROMETHEUS_MULTIPROC_DIR"
LOCK_NAME = ".dialscore-server.lock"
TEMP_PREFIX = "dialscore-"
# A live server holds its folders' lock from the moment it makes them; one whose lock is free and whose
# entries have not changed for this long was left by a server that could not remove it (SIGKILL).
STALE_AFTER_S = 60.0
_held: dict[str, int] = {}  # folder -> the descriptor whose lock this server holds, for its whole life


def hold(key: str, given: str) -> None:
    """Lock the folder `given` (the value of `key`) for this server, its master and the workers that
    inherit the lock; ValueError where another live server holds it: each would clear the other's
    samples and count the other's workers as its own. The lock goes with the last process holding it,
    however it ends."""
    folder = os.path.realpath(given)
    if folder in _held:
        return
    lock = os.path.join(folder, LOCK_NAME)
    try:
        descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:  # another user's lock in a shared folder, or no folder at all
        raise ValueError(f"{key}={given!r}: its lock file {lock} cannot be opened ({exc.strerror}); give "
                         f"this server a folder of its own, or leave {key} unset") from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        raise ValueError(f"{key}={given!r}: another dialscore server uses this folder; give each "
                         f"server its own, or leave {key} unset (a new folder per server)") from None
    _held[folder] = descriptor


def claim(keys: Iterable[str]) -> list[str]:
    """Set each variable of `keys` that is unset to a new temporary folder, and check every folder can
    be written (ValueError naming the variable): a read-only one dropped every request without an
    answer, or kept /readyz at "0 of 2 loaded" for good; and `hold` each. The folders made here, for `remove`."""
    owned = []
    keys = list(keys)
    if any(not os.environ.get(key) for key in keys):
        remove_stale()
    for key in keys:
        if not os.environ.get(key):
            os.environ[key] = tempfile.mkdtemp(prefix=TEMP_PREFIX)
            owned.append(os.environ[key])
        check_writable(os.environ[key], key)
        hold(key, os.environ[key])
    return owned


def remove_stale() -> list[str]:
    """Remove the temporary folders that servers killed outright left behind (a master killed with SIGKILL,
    a container OOM-killed over the same /tmp volume): ours by their owner and lock file, stale by
    STALE_AFTER_S with the lock free. The folders removed."""
    removed, cutoff = [], time.time() - STALE_AFTER_S
    for folder in Path(tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*"):
        try:
            status = folder.lstat()  # a link is no folder of ours, nor is another user's
            if not stat.S_ISDIR(status.st_mode) or status.st_uid != os.getuid() or status.st_mtime > cutoff:
                continue
            descriptor = os.open(folder / LOCK_NAME, os.O_RDWR)  # no lock file: not a server's folder
        except OSError:
            continue
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(str(folder))
        except OSError:  # held: a live server's
            pass
        finally:
            os.close(descriptor)
    return removed


def clear_metrics() -> None:
    """Start from no samples: a previous run's would be counted again."""
    for path in Path(os.environ[METRICS_ENV]).glob("*.db"):
        path.unlink()


def fold_worker(pid: int, log: logging.Logger) -> None:
    """Fold an exited worker's samples into the archive. Nothing is raised: an exception in a gunicorn
    hook ends the master's loop and every worker with it."""
    from prometheus_client import multiprocess

    from service.observability import metrics

    folder = os.environ[METRICS_ENV]
    try:
        multiprocess.mark_process_dead(pid, folder)
        metrics.fold_dead_worker(pid, folder)
    except Exception:  # noqa: BLE001 - the dead worker's files stay, still counted as they are
        log.exception("could not fold the metrics of worker %s; its files are kept", pid)


def remove(owned: list[str]) -> None:
    for folder in owned:
        shutil.rmtree(folder, ignore_errors=True)
