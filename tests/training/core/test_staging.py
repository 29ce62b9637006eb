"""training/core/staging.py: a store folder is built beside its place and swapped in whole."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from training.core import staging
from training.core.cli import SetupError
from training.core.staging import staged_folder


def store_folder(root, name="ruber", scorer="ruber"):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(f'{{"scorer": "{scorer}"}}')
    (folder / "head.onnx").write_bytes(b"old graph")
    return folder


def test_a_failed_build_leaves_the_folder_as_it_was(tmp_path) -> None:
    folder = store_folder(tmp_path)
    with pytest.raises(FileNotFoundError), staged_folder(folder, "ruber") as stage:
        (stage / "head.onnx").write_bytes(b"new graph")  # a trainer's first writes, then a missing data file
        raise FileNotFoundError("dev.json")
    assert (folder / "head.onnx").read_bytes() == b"old graph" and (folder / "manifest.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ruber"]  # nothing hidden left behind


def test_a_finished_build_replaces_the_folder_whole(tmp_path) -> None:
    folder = store_folder(tmp_path)
    (folder / "stale.npy").write_bytes(b"from the old model")
    folder.chmod(0o2755)
    with staged_folder(folder, "ruber") as stage:
        assert stage.name == "ruber" and stage != folder  # manifests take their folder's name
        (stage / "manifest.json").write_text('{"new": true}')
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json"]
    assert (folder / "manifest.json").read_text() == '{"new": true}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ruber"]
    assert stat.S_IMODE(folder.stat().st_mode) == 0o2755  # the old folder's mode, setgid included


def test_a_new_folder_is_made(tmp_path) -> None:
    with staged_folder(tmp_path / "store" / "ruber-minilm", "ruber-minilm") as stage:
        (stage / "manifest.json").write_text("{}")
    assert (tmp_path / "store" / "ruber-minilm" / "manifest.json").is_file()


@pytest.mark.parametrize("make", ["user files", "another model", "store root"])
def test_a_folder_that_is_not_this_models_is_refused_not_replaced(tmp_path, make: str) -> None:
    """`train ruber --out model_store/glove-50d` may not replace the GloVe table."""
    if make == "user files":
        target = tmp_path / "experiments"
        target.mkdir()
        (target / "notes.txt").write_text("keep me")
    elif make == "another model":
        target = store_folder(tmp_path, "glove-50d", "glove")
    else:
        store_folder(tmp_path / "store")
        target = tmp_path / "store"
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(SetupError), staged_folder(target, "ruber"):
        pass
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_symlinked_store_folder_is_replaced_where_it_points(tmp_path) -> None:
    real = store_folder(tmp_path / "real")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "ruber").symlink_to(real)
    with staged_folder(tmp_path / "store" / "ruber", "ruber") as stage:
        (stage / "manifest.json").write_text('{"new": true}')
    assert (tmp_path / "store" / "ruber").is_symlink() and (real / "manifest.json").read_text() == '{"new": true}'


def test_only_the_building_folders_of_runs_that_are_gone_are_removed(tmp_path) -> None:
    """A live run holds a lock in its folder; pids are no test (in a container every run is pid 1)."""
    import fcntl

    folder = store_folder(tmp_path)
    dead = tmp_path / ".ruber.building-dead"  # a killed run's folder without a lock file, long ago
    (dead / "ruber").mkdir(parents=True)
    (dead / ".pid").write_text(str(os.getpid()))
    os.utime(dead, (0, 0))
    unlocked = tmp_path / ".ruber.building-unlocked"  # SIGKILL: its lock went with the process
    (unlocked / "ruber").mkdir(parents=True)
    (unlocked / ".lock").write_text("")
    with staged_folder(folder, "ruber") as stage:
        (stage / "manifest.json").write_text('{"scorer": "ruber"}')
    assert not dead.exists() and not unlocked.exists()
    live = tmp_path / ".ruber.building-live"
    (live / "ruber").mkdir(parents=True)
    with open(live / ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(SetupError, match="being built by another run"), staged_folder(folder, "ruber"):
            pass
    assert live.exists()


def test_a_store_folder_linked_under_another_name_keeps_the_links_name(tmp_path) -> None:
    """model_store/ruber -> versions/ruber-2026.11.2: the build was named after the target, and the
    service refused 'manifest names ruber-2026.11.2, folder is ruber' (a review)."""
    real = store_folder(tmp_path / "versions", "ruber-2026.11.2")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "ruber").symlink_to(real)
    with staged_folder(tmp_path / "store" / "ruber", "ruber") as stage:
        assert stage.name == "ruber"
        (stage / "manifest.json").write_text('{"scorer": "ruber"}')
    assert (tmp_path / "store" / "ruber").is_symlink() and (real / "manifest.json").read_text() == '{"scorer": "ruber"}'


def test_a_failed_swap_keeps_the_finished_build(tmp_path, monkeypatch) -> None:
    folder = store_folder(tmp_path)
    real_replace = os.replace

    def busy(src, dst):
        raise OSError(16, "Device or resource busy")

    monkeypatch.setattr(staging.os, "replace", busy)
    with pytest.raises(OSError), staged_folder(folder, "ruber") as stage:
        (stage / "manifest.json").write_text('{"new": true}')
    monkeypatch.setattr(staging.os, "replace", real_replace)
    assert (folder / "head.onnx").read_bytes() == b"old graph"
    kept = list(tmp_path.glob(".ruber.building-*/ruber/manifest.json"))
    assert len(kept) == 1 and kept[0].read_text() == '{"new": true}'


def test_ctrl_c_between_the_two_renames_puts_the_old_folder_back(tmp_path, monkeypatch) -> None:
    folder = store_folder(tmp_path)
    real_replace, calls = os.replace, []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real_replace(src, dst)

    monkeypatch.setattr(staging.os, "replace", replace)
    with pytest.raises(KeyboardInterrupt), staged_folder(folder, "ruber") as stage:
        (stage / "manifest.json").write_text('{"new": true}')
    monkeypatch.setattr(staging.os, "replace", real_replace)
    assert (folder / "head.onnx").read_bytes() == b"old graph"
    assert len(list(tmp_path.glob(".ruber.building-*/ruber/manifest.json"))) == 1  # the finished build, kept


_SIGTERM_SCRIPT = """
import os, signal, sys
from pathlib import Path
from training.core.staging import staged_folder
folder = Path(sys.argv[1])
before = signal.getsignal(signal.SIGTERM)
try:
    with staged_folder(folder, "ruber") as stage:
        (stage / "head.onnx").write_bytes(b"half")
        os.kill(os.getpid(), signal.SIGTERM)
except KeyboardInterrupt:
    print("interrupted", signal.getsignal(signal.SIGTERM) == before)
"""


def test_sigterm_cleans_up_as_ctrl_c_does(tmp_path) -> None:
    """SIGTERM (timeout, Kubernetes) cleans up the building folder as Ctrl-C does. In a process of its own:
    a signal sent to the test process itself reaches native threads that earlier tests started there
    (OpenVINO's, after a compiled model was loaded from its cache, crashed the process)."""
    folder = store_folder(tmp_path)
    done = subprocess.run([sys.executable, "-c", _SIGTERM_SCRIPT, str(folder)], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[3])
    assert done.stdout.strip() == "interrupted True", done.stdout + done.stderr
    assert (folder / "head.onnx").read_bytes() == b"old graph"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ruber"]


def test_train_ruber_that_fails_leaves_the_store_folder(tmp_path, tmp_path_factory, monkeypatch) -> None:
    """`train ruber` failing on a missing data file (DailyDialog++'s dev.json) leaves the store's ruber
    folder as it was."""
    import tempfile

    from training.ruber import train as ruber_train

    kept = tmp_path_factory.mktemp("kept")  # the failed run's log is copied there, not into /tmp
    monkeypatch.setattr(tempfile, "tempdir", str(kept))

    folder = store_folder(tmp_path)

    def fails(out, *args, **kwargs):
        (out / "head.onnx").write_bytes(b"half a model")
        raise FileNotFoundError(2, "No such file or directory", "dev.json")

    monkeypatch.setattr(ruber_train, "run", fails)
    with pytest.raises(FileNotFoundError):
        ruber_train.main(["--out", str(folder), "--minutes", "0"])
    assert (folder / "head.onnx").read_bytes() == b"old graph"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ruber"]
    assert "dev.json" in next(kept.iterdir()).read_text()


def test_train_ruber_log_inside_out_is_a_usage_error(tmp_path, capsys) -> None:
    from training.ruber import train as ruber_train

    folder = store_folder(tmp_path)
    with pytest.raises(SystemExit) as exited:
        ruber_train.main(["--out", str(folder), "--log", str(folder / "mine.log")])
    assert exited.value.code == 2 and "replaced whole" in capsys.readouterr().err
