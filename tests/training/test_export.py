"""`python -m training export` keeps a store consistent: every input is checked before anything is
written, a head is only published (and only served) on the encoder it was trained on, and an
unfinished or mixed pre-training folder is refused (a probe, 2026-11-23, findings 1-3)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from tests.conftest import MODEL_STORE
from tests.hred_tiny import TINY, pretrain_tiny, train_heads_tiny
from training.__main__ import main

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Two tiny encoder runs (a, and b with fewer steps), heads trained on a, and a store of a + heads."""
    from training import pretrain

    root = tmp_path_factory.mktemp("export")
    vhred_a = pretrain_tiny(root / "vhred-a")
    assert pretrain.main(["--out", str(root / "vhred-b"), "--steps", "10", "--max-dialogues", "120",
                          "--eval-dialogues", "10", "--vocab-size", "300", "--sources", "dailydialog",
                          "--batch-size", "8", "--kl-anneal-steps", "6", "--config", json.dumps(TINY)]) == 0
    adem, autojudge = train_heads_tiny(vhred_a, root)
    store = root / "store"
    assert main(["export", "--vhred", str(vhred_a), "--adem", str(adem), "--autojudge", str(autojudge),
                 "--store", str(store)]) == 0
    return {"a": vhred_a, "b": root / "vhred-b", "adem": adem, "autojudge": autojudge, "store": store}


def refused(argv: list[str], capsys) -> str:
    """Runs the command, asserts exit 2 with one error line (after any log lines) and no traceback."""
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and err.rstrip().endswith(errors[0]) and "Traceback" not in err, err
    return errors[0]


def snapshot(store: Path) -> dict[str, bytes]:
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file()}


def test_export_with_nothing_to_export_is_a_usage_error(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["export"])
    assert exited.value.code == 2 and "--vhred" in capsys.readouterr().err


def test_heads_record_their_encoder_files(runs) -> None:
    encoder = json.loads((runs["store"] / "hred-encoder" / "manifest.json").read_text())["files"]
    for head in ("adem", "autojudge"):
        config = json.loads((runs["store"] / head / "manifest.json").read_text())["config"]
        assert config["encoder_files"] == {n: e["sha256"] for n, e in encoder.items()}
    assert not [p for p in runs["store"].iterdir() if p.name.startswith(".")]  # the staging folder is gone


def test_a_head_is_not_exported_with_another_encoder(runs, tmp_path, capsys) -> None:
    store = tmp_path / "store"
    err = refused(["export", "--vhred", str(runs["b"]), "--adem", str(runs["adem"]), "--store", str(store)], capsys)
    assert "--adem" in err and "another encoder" in err and "10 steps" in err and "12 steps" in err
    assert not store.exists() or not snapshot(store)  # nothing written, not even the encoder


def test_a_head_is_not_exported_onto_the_store_encoder_of_another_run(runs, tmp_path, capsys) -> None:
    store = tmp_path / "store"
    assert main(["export", "--vhred", str(runs["b"]), "--store", str(store)]) == 0
    before = snapshot(store)
    err = refused(["export", "--autojudge", str(runs["autojudge"]), "--store", str(store)], capsys)
    assert "another encoder" in err and f"hred-encoder in {store}" in err
    assert snapshot(store) == before


def test_an_encoder_alone_may_not_orphan_the_heads_in_the_store(runs, tmp_path, capsys) -> None:
    """The probe's finding 1: `export --vhred` alone replaced the encoder under the committed heads."""
    store = tmp_path / "store"
    shutil.copytree(runs["store"], store)
    before = snapshot(store)
    err = refused(["export", "--vhred", str(runs["b"]), "--store", str(store)], capsys)
    assert "adem, autojudge" in err and "--adem RUN --autojudge RUN" in err
    assert snapshot(store) == before
    # The same encoder again (export is deterministic) orphans nothing.
    assert main(["export", "--vhred", str(runs["a"]), "--store", str(store)]) == 0
    assert snapshot(store)["hred-encoder/utterance_encoder.onnx"] == before["hred-encoder/utterance_encoder.onnx"]


def test_the_service_refuses_a_head_on_another_encoder(runs, tmp_path) -> None:
    """A store put together by hand (or by an export from before the check): the heads fail by name."""
    from service.store import ModelStore

    other = tmp_path / "other"
    assert main(["export", "--vhred", str(runs["b"]), "--store", str(other)]) == 0
    store = tmp_path / "store"
    shutil.copytree(runs["store"], store)
    shutil.rmtree(store / "hred-encoder")
    shutil.copytree(other / "hred-encoder", store / "hred-encoder")
    served = ModelStore(store)
    assert not served.load()
    assert set(served.failures) == {"adem", "autojudge"}
    assert "trained on other hred-encoder files" in served.failures["adem"]
    assert served.public_failures["autojudge"] == "trained on another hred-encoder"


@pytest.mark.skipif(not (MODEL_STORE / "adem" / "manifest.json").is_file(), reason="model_store/adem not built")
def test_the_committed_heads_record_the_committed_encoder() -> None:
    from service.manifest import encoder_drift, read_manifest

    encoder = read_manifest(MODEL_STORE / "hred-encoder")
    for head in ("adem", "autojudge"):
        manifest = read_manifest(MODEL_STORE / head)
        assert manifest.config["encoder_files"] and encoder_drift(manifest, encoder) == {}


def _copy(run: Path, tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(run, target)
    return target


def test_inputs_are_checked_before_anything_is_written(runs, tmp_path, capsys) -> None:
    """The probe's finding 2: a bad head run left a new encoder in the store beside the old heads."""
    store = tmp_path / "store"
    vhred = ["export", "--vhred", str(runs["a"]), "--store", str(store)]
    err = refused([*vhred, "--adem", str(runs["autojudge"])], capsys)
    assert "AutoJudge run" in err
    junk = _copy(runs["adem"], tmp_path, "junk-adem")
    (junk / "head.pt").write_bytes(b"not a checkpoint" * 10)
    assert "head.pt is not a readable ADEM head" in refused([*vhred, "--adem", str(junk)], capsys)
    empty = _copy(runs["adem"], tmp_path, "empty-adem")
    metrics = json.loads((empty / "metrics.json").read_text())
    (empty / "metrics.json").write_text(json.dumps({**metrics, "train_items": 0, "sets": ["conture"]}))
    assert "trained on 0 items" in refused([*vhred, "--adem", str(empty)], capsys)
    assert not store.exists() or not snapshot(store)


def test_an_unfinished_or_mixed_pretraining_folder_is_refused(runs, tmp_path, capsys) -> None:
    """The probe's finding 3: a checkpoint of an interrupted rerun beside the last run's metrics.json."""
    from training.encoders.vhred import load_checkpoint, save_checkpoint

    model, extra = load_checkpoint(runs["a"] / "model.pt")
    unfinished = _copy(runs["a"], tmp_path, "unfinished")
    save_checkpoint(model, unfinished / "model.pt", extra={"steps_done": 40, "epoch": 1, "minutes": 0.1})
    err = refused(["export", "--vhred", str(unfinished), "--store", str(tmp_path / "s1")], capsys)
    assert "unfinished run (stopped after step 40)" in err
    mixed = _copy(runs["a"], tmp_path, "mixed")
    shutil.copyfile(runs["b"] / "metrics.json", mixed / "metrics.json")
    assert "different runs" in refused(["export", "--vhred", str(mixed), "--store", str(tmp_path / "s2")], capsys)
    corrupt = _copy(runs["a"], tmp_path, "corrupt")
    (corrupt / "model.pt").write_bytes((runs["a"] / "model.pt").read_bytes()[:1000])
    err = refused(["export", "--vhred", str(corrupt), "--store", str(tmp_path / "s3")], capsys)
    assert "is not a readable VHRED checkpoint" in err
    err = refused(["selftalk", "--model", str(corrupt), "--out", str(tmp_path / "talk.jsonl")], capsys)
    assert "is not a readable VHRED checkpoint" in err


def test_a_new_pretraining_run_clears_the_last_runs_outputs_first(runs, tmp_path, monkeypatch) -> None:
    """An interrupted rerun must not leave the previous model.pt and metrics.json to be taken as its own."""
    from training import pretrain

    folder = _copy(runs["a"], tmp_path, "rerun")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pretrain.judgements, "dev_holdout", interrupted)
    with pytest.raises(KeyboardInterrupt):
        pretrain.main(["--out", str(folder), "--steps", "2", "--config", json.dumps(TINY)])
    assert not any((folder / name).exists() for name in pretrain.RUN_OUTPUTS)
