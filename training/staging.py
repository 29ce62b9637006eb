"""Build a store folder beside its place and swap it in whole, so a failed or killed run leaves the old one.

`train ruber` and `train-minilm --out` wrote straight into their store folder (by default the
committed `model_store/ruber`): a run that failed on a missing data file, or was stopped, left new
graphs beside the old manifest, which the service then refused (hash mismatch), or a placeholder
manifest and empty card it served (a probe of the training commands, 2026-11-25). `export` has
built in a hidden staging folder since 2026-11-23; this is the same for one folder. The building
folder's name starts with '.', which the service's store skips, and holds the pid of its run, so
that a second run removes only the folders of runs that are gone.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from training.cli_types import SetupError

log = logging.getLogger("training.staging")
OWNER = ".pid"  # in the building folder, beside the folder being built


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _left_by_stopped_runs(target: Path) -> list[Path]:
    """Building folders of `target` whose run is gone (SIGKILL runs no clean-up); a live run's stay."""
    stale = []
    for folder in sorted(target.parent.glob(f".{target.name}.building-*")):
        try:
            pid = int((folder / OWNER).read_text())
        except (OSError, ValueError):
            pid = None
        if pid is None or not _alive(pid):
            stale.append(folder)
        else:
            raise SetupError(f"{target} is being built by another run (pid {pid}, in {folder}); wait for it or stop it")
    return stale


def check_replaceable(target: Path, scorer: str) -> Path:
    """The real folder a run of `scorer` may replace whole: a new or empty folder, or a store folder of
    that same scorer. A folder of user files, the store root, and another model's or component's folder
    (`train ruber --out model_store/glove-50d` replaced the GloVe table, a re-probe) are refused."""
    real = Path(target).resolve()  # a symlinked store folder: its target is replaced, the link kept
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


@contextmanager
def _terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM (timeout, systemd, Kubernetes) runs the clean-up as Ctrl-C does, instead of none."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):  # noqa: ARG001
        raise KeyboardInterrupt

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
    target = check_replaceable(target, scorer)
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in _left_by_stopped_runs(target):
        log.warning("removing %s, left by a run that was stopped", stale)
        shutil.rmtree(stale, ignore_errors=True)
    building = Path(tempfile.mkdtemp(prefix=f".{target.name}.building-", dir=target.parent))
    (building / OWNER).write_text(str(os.getpid()))
    stage = building / target.name
    umask = os.umask(0)
    os.umask(umask)
    stage.mkdir()
    # the old folder's mode (setgid included), else mkdtemp's 0700 would become the store folder's
    stage.chmod(target.stat().st_mode & 0o7777 if target.is_dir() else 0o777 & ~umask)
    old = building / ".replaced"
    with _terminated_as_interrupt():
        try:
            yield stage
            try:
                if target.exists():
                    os.replace(target, old)
                os.replace(stage, target)
            except BaseException:  # Ctrl-C between the two renames too: the old folder goes back
                if old.exists() and not target.exists():
                    os.replace(old, target)
                raise
        finally:
            shutil.rmtree(building, ignore_errors=True)
