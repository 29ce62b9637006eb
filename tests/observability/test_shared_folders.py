"""service/observability/shared_folders.py: the folders a server's workers share, and those a killed one left."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from service.observability import shared_folders
from tests.conftest import REPO


def _server_folder(parent: Path, name: str, age_s: float) -> Path:
    folder = parent / f"{shared_folders.TEMP_PREFIX}{name}"
    folder.mkdir()
    (folder / shared_folders.LOCK_NAME).touch()
    (folder / "counter_1.db").write_bytes(b"x")
    then = time.time() - age_s
    os.utime(folder, (then, then))
    return folder


def test_a_killed_servers_folders_are_removed_and_live_or_foreign_ones_kept(tmp_path, monkeypatch):
    """A master killed with SIGKILL left its two folders in /tmp, and every such kill left two more."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    dead = _server_folder(tmp_path, "dead", 3600)
    fresh = _server_folder(tmp_path, "fresh", 1)  # being made by a server starting now
    live = _server_folder(tmp_path, "live", 3600)
    foreign = tmp_path / f"{shared_folders.TEMP_PREFIX}mpnet-base-cache"  # no lock file: not a server's
    foreign.mkdir()
    os.utime(foreign, (0, 0))
    elsewhere = _server_folder(tmp_path / "..", f"elsewhere-{tmp_path.name}", 3600)
    link = tmp_path / f"{shared_folders.TEMP_PREFIX}link"  # a link to a dead server's folder is not followed
    link.symlink_to(elsewhere)
    os.utime(link, (0, 0), follow_symlinks=False)
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys; "
                               f"d = os.open({str(live / shared_folders.LOCK_NAME)!r}, os.O_RDWR); "
                               "fcntl.flock(d, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()"],
                              cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert shared_folders.remove_stale() == [str(dead)]
    finally:
        holder.communicate("", timeout=10)
    assert not dead.exists() and fresh.is_dir() and live.is_dir() and foreign.is_dir()
    assert link.is_symlink() and (elsewhere / "counter_1.db").exists()


def test_claiming_a_new_folder_first_removes_the_stale_ones(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    dead = _server_folder(tmp_path, "dead", 3600)
    monkeypatch.setenv("DIALSCORE_READY_DIR", "")  # unset for claim, which sets it; restored after the test
    owned = shared_folders.claim(["DIALSCORE_READY_DIR"])
    try:
        assert not dead.exists() and [Path(f).parent for f in owned] == [tmp_path]
    finally:
        shared_folders.remove(owned)


@pytest.mark.parametrize("age_s", [0.0, shared_folders.STALE_AFTER_S / 2])
def test_a_folder_changed_lately_is_kept_even_with_its_lock_free(tmp_path, monkeypatch, age_s):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    folder = _server_folder(tmp_path, "young", age_s)
    assert shared_folders.remove_stale() == [] and folder.is_dir()
