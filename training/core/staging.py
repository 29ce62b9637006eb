"""Build a store folder beside its place and swap it in whole, so a failed or killed run leaves the old one.

The building folder's name starts with '.' (the service's store skips it) and its run holds a lock in it,
so that a later run removes only the folders of runs that are gone."""
from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import signal
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from training.core.cli import SetupError

log = logging.getLogger("training.staging")
LOCK = ".lock"  # in the building folder, beside the folder being built; locked while its run lives


def _left_by_stopped_runs(target: Path) -> list[Path]:
    """Building folders of `target` whose run is gone; a live run holds an exclusive lock on its
    folder's LOCK file for as long as it runs (a pid could be reused: in a container every run is
    pid 1). A folder too new to hold its lock yet is left alone."""
    stale = []
    for folder in sorted(target.parent.glob(f".{target.name}.building-*")):
        try:
            descriptor = os.open(folder / LOCK, os.O_RDWR)  # not created: a missing one is not a free one
        except OSError:
            if time.time() - _mtime(folder) >= 60:  # older than any run takes to lock its folder
                stale.append(folder)
            continue
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SetupError(f"{target} is being built by another run (in {folder}); wait for it") from None
        finally:
            os.close(descriptor)
        stale.append(folder)
    return stale


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def check_replaceable(target: Path, scorer: str) -> Path:
    """The real folder a run of `scorer` may replace whole: a new or empty folder, or a store folder of
    that same scorer. A folder of user files, the store root, and another model's or component's folder
    (which `train ruber --out model_store/glove-50d` would replace) are refused."""
    real = Path(target).resolve()  # a symlinked store folder: its target is replaced, the link kept
    try:  # the folder is built in its parent: found now, not after the training
        real.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=real.parent):
            pass
    except OSError as exc:
        raise SetupError(f"{real.parent} is not writable ({exc.strerror or exc}): {target} is built there") from None
    if not real.is_dir() or not any(real.iterdir()):
        return real
    manifest = real / "manifest.json"
    if not manifest.is_file():
        raise SetupError(f"{target} holds files but no manifest.json: the model is built beside it and swapped in "
                         "whole, so name a new or empty folder, or the model's store folder")
    try:
        found = json.loads(manifest.read_text(encoding="utf-8")).get("scorer")
    except (OSError, ValueError, AttributeError):
        found = None
    if found != scorer:
        raise SetupError(f"{target} is the store folder of {found or 'an unreadable manifest'}, not of {scorer}: "
                         f"it would be replaced whole; name {scorer}'s folder or a new one")
    return real


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the run is, so the clean-up runs (python -m training exits 143 for it)."""


@contextmanager
def _terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM (timeout, systemd, Kubernetes) runs the clean-up as Ctrl-C does, instead of none."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):  # noqa: ARG001
        raise Terminated

    before = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


@contextmanager
def staged_folder(target: Path, scorer: str) -> Iterator[Path]:
    """Yield an empty folder of `target`'s name inside a hidden folder beside it; when the block ends
    without an exception it replaces `target` (the old folder is removed), and otherwise it is removed
    and `target` is as it was. The name is kept because manifests are written with their folder's."""
    name = Path(target).name  # a link's name, not its target's: manifests take their folder's name
    real = check_replaceable(target, scorer)
    for stale in _left_by_stopped_runs(real):
        log.warning("removing %s, left by a run that was stopped", stale)
        shutil.rmtree(stale, ignore_errors=True)
    building = Path(tempfile.mkdtemp(prefix=f".{real.name}.building-", dir=real.parent))
    lock = open(building / LOCK, "w")  # held until the end: a live run's folder is never removed
    fcntl.flock(lock, fcntl.LOCK_EX)
    keep = False
    try:
        stage = building / name
        umask = os.umask(0)
        os.umask(umask)
        stage.mkdir()
        # the old folder's mode (setgid included); a new one gets the umask's
        stage.chmod(real.stat().st_mode & 0o7777 if real.is_dir() else 0o777 & ~umask)
        old = building / ".replaced"
        with _terminated_as_interrupt():
            yield stage
            try:
                if real.exists():
                    os.replace(real, old)
                os.replace(stage, real)
            except BaseException:  # Ctrl-C between the two renames too: the old folder goes back
                if old.exists() and not real.exists():
                    os.replace(old, real)
                keep = stage.exists()
                if keep:  # a finished build is not thrown away because the swap failed
                    log.error("the new %s was not swapped in; it is kept in %s", name, stage)
                raise
    finally:
        lock.close()
        if not keep:
            shutil.rmtree(building, ignore_errors=True)


@contextmanager
def staged_store(store: Path) -> Iterator[Path]:
    """A hidden folder in `store` (the service skips names starting with '.') to build several store
    folders into, for `publish`; removed at the end, with whatever it holds."""
    store.mkdir(parents=True, exist_ok=True)
    for stale in store.glob(".export-*"):  # a killed export's (full copies of the old folders)
        log.warning("removing %s, left by an export that was stopped", stale)
        shutil.rmtree(stale, ignore_errors=True)
    stage = Path(tempfile.mkdtemp(prefix=".export-", dir=store))
    try:
        yield stage
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def publish(stage: Path, store: Path, names: list[str]) -> None:
    """Move the folders built in `stage` into `store`, each replacing the folder of that name."""
    for name in names:
        target = store / name
        if target.exists() or target.is_symlink():
            os.replace(target, stage / f"{name}.replaced")
        os.replace(stage / name, target)
