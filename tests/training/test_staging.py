"""training/staging.py: a store folder is built beside its place and swapped in whole."""
from __future__ import annotations

import stat

import pytest

from training.cli_types import SetupError
from training.staging import staged_folder


def store_folder(root, name="ruber"):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text('{"old": true}')
    (folder / "head.onnx").write_bytes(b"old graph")
    return folder


def test_a_failed_build_leaves_the_folder_as_it_was(tmp_path) -> None:
    folder = store_folder(tmp_path)
    with pytest.raises(FileNotFoundError), staged_folder(folder) as stage:
        (stage / "head.onnx").write_bytes(b"new graph")  # a trainer's first writes, then a missing data file
        raise FileNotFoundError("dev.json")
    assert (folder / "head.onnx").read_bytes() == b"old graph" and (folder / "manifest.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ruber"]  # nothing hidden left behind


def test_a_finished_build_replaces_the_folder_whole(tmp_path) -> None:
    folder = store_folder(tmp_path)
    (folder / "stale.npy").write_bytes(b"from the old model")
    with staged_folder(folder) as stage:
        assert stage.name == "ruber" and stage != folder  # manifests take their folder's name
        (stage / "manifest.json").write_text('{"new": true}')
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json"]
    assert (folder / "manifest.json").read_text() == '{"new": true}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ruber"]
    assert stat.S_IMODE(folder.stat().st_mode) & 0o055  # not mkdtemp's 0700


def test_a_new_folder_is_made(tmp_path) -> None:
    with staged_folder(tmp_path / "store" / "ruber-minilm") as stage:
        (stage / "manifest.json").write_text("{}")
    assert (tmp_path / "store" / "ruber-minilm" / "manifest.json").is_file()


def test_a_folder_of_other_files_is_refused_not_replaced(tmp_path) -> None:
    mine = tmp_path / "experiments"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    with pytest.raises(SetupError, match="no manifest.json"), staged_folder(mine):
        pass
    assert (mine / "notes.txt").read_text() == "keep me"


def test_a_killed_runs_building_folder_is_removed(tmp_path) -> None:
    folder = store_folder(tmp_path)
    (tmp_path / ".ruber.building-abc123" / "ruber").mkdir(parents=True)
    with staged_folder(folder) as stage:
        (stage / "manifest.json").write_text("{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ruber"]


def test_train_ruber_that_fails_leaves_the_store_folder(tmp_path, monkeypatch) -> None:
    """A probe: `train ruber` without DailyDialog++'s dev.json exited 2 and left the store's ruber with a
    placeholder manifest and an empty card, which the service served."""
    from training.ruber import train as ruber_train

    folder = store_folder(tmp_path)

    def fails(out, *args, **kwargs):
        (out / "head.onnx").write_bytes(b"half a model")
        raise FileNotFoundError(2, "No such file or directory", "dev.json")

    monkeypatch.setattr(ruber_train, "run", fails)
    with pytest.raises(FileNotFoundError):
        ruber_train.main(["--out", str(folder), "--minutes", "0"])
    assert (folder / "head.onnx").read_bytes() == b"old graph"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ruber"]
