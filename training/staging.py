"""Build a store folder beside its place and swap it in whole, so a failed or killed run leaves the old one.

`train ruber` and `train-minilm --out` wrote straight into their store folder (by default the
committed `model_store/ruber`): a run that failed on a missing data file, or was stopped, left new
graphs beside the old manifest, which the service then refused (hash mismatch), or a placeholder
manifest and empty card it served (a probe of the training commands, 2026-11-25). `export` has
built in a hidden staging folder since 2026-11-23; this is the same for one folder. The building
folder's name starts with '.', which the service's store skips.
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from training.cli_types import SetupError

log = logging.getLogger("training.staging")


def _stale(target: Path) -> list[Path]:
    return sorted(target.parent.glob(f".{target.name}.building-*"))


def check_replaceable(target: Path) -> None:
    """Refuse a --out that holds files but is not a store folder: the swap replaces the folder whole,
    and must not take a user's other files with it."""
    target = Path(target)
    if target.is_dir() and any(target.iterdir()) and not (target / "manifest.json").is_file():
        raise SetupError(f"{target} holds files but no manifest.json: the model is built beside it and swapped in "
                         "whole, so name a new or empty folder, or a store folder")


@contextmanager
def staged_folder(target: Path) -> Iterator[Path]:
    """Yield an empty folder of `target`'s name inside a hidden folder beside it; when the block ends
    without an exception it replaces `target` (the old folder is removed), and otherwise it is removed
    and `target` is as it was. The name is kept because manifests are written with their folder's."""
    target = Path(target)
    check_replaceable(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    for stale in _stale(target):  # left by a run that was killed (SIGKILL runs no clean-up)
        log.warning("removing %s, left by a run that was stopped", stale)
        shutil.rmtree(stale, ignore_errors=True)
    building = Path(tempfile.mkdtemp(prefix=f".{target.name}.building-", dir=target.parent))
    stage = building / target.name
    umask = os.umask(0)
    os.umask(umask)
    stage.mkdir(mode=0o777 & ~umask)
    try:
        yield stage
        old = building / ".replaced"
        if target.exists() or target.is_symlink():
            os.replace(target, old)
        try:
            os.replace(stage, target)
        except OSError:
            if old.exists() or old.is_symlink():
                os.replace(old, target)
            raise
    finally:
        shutil.rmtree(building, ignore_errors=True)
