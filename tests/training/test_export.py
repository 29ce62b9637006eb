"""`python -m training export` keeps a store consistent: every input is checked before anything is
written, a head is only published (and only served) on the encoder it was trained on, and an
unfinished or mixed pre-training folder is refused."""
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
    from training.encoders.hred import train as pretrain

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


@pytest.mark.data
def test_heads_record_their_encoder_files(runs) -> None:
    encoder = json.loads((runs["store"] / "hred-encoder" / "manifest.json").read_text())["files"]
    for head in ("adem", "autojudge"):
        config = json.loads((runs["store"] / head / "manifest.json").read_text())["config"]
        assert config["encoder_files"] == {n: e["sha256"] for n, e in encoder.items()}
    assert not [p for p in runs["store"].iterdir() if p.name.startswith(".")]  # the staging folder is gone


@pytest.mark.data
def test_a_head_is_not_exported_with_another_encoder(runs, tmp_path, capsys) -> None:
    store = tmp_path / "store"
    err = refused(["export", "--vhred", str(runs["b"]), "--adem", str(runs["adem"]), "--store", str(store)], capsys)
    assert "--adem" in err and "another encoder" in err and "10 steps" in err and "12 steps" in err
    assert not store.exists() or not snapshot(store)  # nothing written, not even the encoder


@pytest.mark.data
def test_a_head_is_not_exported_onto_the_store_encoder_of_another_run(runs, tmp_path, capsys) -> None:
    store = tmp_path / "store"
    assert main(["export", "--vhred", str(runs["b"]), "--store", str(store)]) == 0
    before = snapshot(store)
    err = refused(["export", "--autojudge", str(runs["autojudge"]), "--store", str(store)], capsys)
    assert "another encoder" in err and f"hred-encoder in {store}" in err
    assert snapshot(store) == before


@pytest.mark.data
def test_an_encoder_alone_may_not_orphan_the_heads_in_the_store(runs, tmp_path, capsys) -> None:
    """`export --vhred` alone may not replace the encoder under the heads already in the store."""
    store = tmp_path / "store"
    shutil.copytree(runs["store"], store)
    before = snapshot(store)
    err = refused(["export", "--vhred", str(runs["b"]), "--store", str(store)], capsys)
    assert "adem, autojudge" in err and "--adem RUN --autojudge RUN" in err
    assert snapshot(store) == before
    # The same encoder again (export is deterministic) orphans nothing.
    assert main(["export", "--vhred", str(runs["a"]), "--store", str(store)]) == 0
    assert snapshot(store)["hred-encoder/utterance_encoder.onnx"] == before["hred-encoder/utterance_encoder.onnx"]


@pytest.mark.data
def test_the_service_refuses_a_head_on_another_encoder(runs, tmp_path) -> None:
    """A store put together by hand (or by an export from before the check): the heads fail by name."""
    from service.store.model_store import ModelStore

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
    from service.artifacts.manifest import encoder_drift, read_manifest

    encoder = read_manifest(MODEL_STORE / "hred-encoder")
    for head in ("adem", "autojudge"):
        manifest = read_manifest(MODEL_STORE / head)
        assert manifest.config["encoder_files"] and encoder_drift(manifest, encoder) == {}


def _copy(run: Path, tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(run, target)
    return target


@pytest.mark.data
def test_inputs_are_checked_before_anything_is_written(runs, tmp_path, capsys) -> None:
    """A bad head run leaves no new encoder in the store beside the old heads."""
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


@pytest.mark.data
def test_an_unfinished_or_mixed_pretraining_folder_is_refused(runs, tmp_path, capsys) -> None:
    """A checkpoint of an interrupted rerun beside the last run's metrics.json is no finished run."""
    from training.encoders.hred.model import load_checkpoint, save_checkpoint

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
    # The trainers and self-talk refuse an unfinished run too, before their work rather than at export.
    for argv in (["train", "adem", "--encoder", str(unfinished), "--out", str(tmp_path / "adem-run")],
                 ["train", "autojudge", "--encoder", str(unfinished), "--out", str(tmp_path / "aj-run")],
                 ["selftalk", "--model", str(unfinished), "--out", str(tmp_path / "talk.jsonl")]):
        assert "checkpoint of an unfinished pre-training run (stopped after step 40)" in refused(argv, capsys)
    # A missing or unreadable tokenizer.json: one line, not tokenizers' bare Exception
    no_tokenizer = _copy(runs["a"], tmp_path, "no-tokenizer")
    (no_tokenizer / "tokenizer.json").unlink()
    assert "tokenizer.json" in refused(["export", "--vhred", str(no_tokenizer), "--store", str(tmp_path / "s4")],
                                       capsys)
    (no_tokenizer / "tokenizer.json").write_text("{not json")
    err = refused(["selftalk", "--model", str(no_tokenizer), "--out", str(tmp_path / "talk.jsonl")], capsys)
    assert "is not a readable tokenizer" in err


@pytest.mark.data
def test_a_new_pretraining_run_clears_the_last_runs_outputs_first(runs, tmp_path, monkeypatch) -> None:
    """An interrupted rerun must not leave the previous model.pt and metrics.json to be taken as its own:
    they go before the new run writes its tokenizer."""
    from training.encoders.hred import train as pretrain

    folder = _copy(runs["a"], tmp_path, "rerun")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pretrain.bpe, "train_bpe", interrupted)
    with pytest.raises(KeyboardInterrupt):
        pretrain.main(["--out", str(folder), "--steps", "2", "--max-dialogues", "50", "--eval-dialogues", "5",
                       "--sources", "dailydialog", "--config", json.dumps(TINY)])
    assert not any((folder / name).exists() for name in pretrain.RUN_OUTPUTS)


@pytest.mark.data
def test_a_rerun_that_cannot_start_keeps_the_last_run(runs, tmp_path, capsys) -> None:
    """A run that fails before training (a wrong --data-dir) leaves the finished run in --out as it was."""
    folder = _copy(runs["a"], tmp_path, "kept")
    before = snapshot(folder)
    refused(["pretrain", "--out", str(folder), "--data-dir", str(tmp_path / "nowhere")], capsys)
    after = snapshot(folder)
    assert {k: v for k, v in after.items() if k != "pretrain.log"} == {k: v for k, v in before.items()
                                                                      if k != "pretrain.log"}


@pytest.mark.data
def test_finish_writes_the_stopped_runs_settings_not_its_own_defaults(runs, tmp_path) -> None:
    """metrics.json's seed and KL annealing are part of what export matches heads by."""
    from training.encoders.hred import train as pretrain
    from training.encoders.hred.model import load_checkpoint, save_checkpoint

    model, _ = load_checkpoint(runs["a"] / "model.pt")
    stopped = _copy(runs["a"], tmp_path, "stopped")
    (stopped / "metrics.json").unlink()
    save_checkpoint(model, stopped / "model.pt", extra={"steps_done": 9, "epoch": 1, "minutes": 0.1, "seed": 3,
                                                          "kl_anneal_steps": 6, "batch_size": 8, "lr": 0.002,
                                                          "threads": 1})
    assert pretrain.main(["--out", str(stopped), "--finish", "--max-dialogues", "120", "--eval-dialogues", "10",
                          "--sources", "dailydialog", "--config", json.dumps(TINY)]) == 0
    metrics = json.loads((stopped / "metrics.json").read_text())
    assert (metrics["seed"], metrics["kl_anneal_steps"], metrics["batch_size"], metrics["lr"], metrics["steps"]) == (
        3, 6, 8, 0.002, 9)
    # The data options are the stopped run's too, so metrics.json counts the data the model trained on.
    first = metrics
    (stopped / "metrics.json").unlink()
    save_checkpoint(model, stopped / "model.pt", extra={"steps_done": 9, "epoch": 1, "minutes": 0.1, "seed": 3,
                                                          "kl_anneal_steps": 6, "batch_size": 8, "lr": 0.002,
                                                          "threads": 1, "sources": "dailydialog",
                                                          "max_dialogues": 120, "eval_dialogues": 10})
    assert pretrain.main(["--out", str(stopped), "--finish", "--config", json.dumps(TINY)]) == 0
    metrics = json.loads((stopped / "metrics.json").read_text())
    assert (metrics["train_dialogues"], metrics["train_fingerprint"]) == (first["train_dialogues"],
                                                                          first["train_fingerprint"])


@pytest.mark.data
def test_finish_without_the_runs_tokenizer_is_refused(runs, tmp_path, capsys) -> None:
    """It trained a new tokenizer, unlike the saved model's (perplexity 183 -> 335), and export took it."""
    stopped = _copy(runs["a"], tmp_path, "no-tokenizer")
    (stopped / "tokenizer.json").unlink()
    with pytest.raises(SystemExit) as exited:
        main(["pretrain", "--out", str(stopped), "--finish"])
    assert exited.value.code == 2 and "tokenizer.json does not exist" in capsys.readouterr().err
    assert not (stopped / "tokenizer.json").exists()


def test_finish_without_a_checkpoint_is_a_usage_error(tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["pretrain", "--out", str(tmp_path / "empty"), "--finish"])
    assert exited.value.code == 2 and "nothing to finish" in capsys.readouterr().err
    assert not (tmp_path / "empty" / "tokenizer.json").exists()


@pytest.mark.data
def test_a_head_on_an_encoder_run_that_differs_only_in_its_weights_is_refused(runs, tmp_path, capsys) -> None:
    """A run with another lr (same corpus, steps, seed and width) is another encoder: the weights' hash says so."""
    from training.encoders.hred import train as pretrain

    other = tmp_path / "vhred-lr"
    assert pretrain.main(["--out", str(other), "--steps", "12", "--max-dialogues", "120", "--eval-dialogues", "10",
                          "--vocab-size", "300", "--sources", "dailydialog", "--batch-size", "8",
                          "--kl-anneal-steps", "6", "--lr", "0.003", "--config", json.dumps(TINY)]) == 0
    err = refused(["export", "--vhred", str(other), "--adem", str(runs["adem"]), "--store", str(tmp_path / "s")],
                  capsys)
    assert "trained on another encoder" in err and "weights" in err


@pytest.mark.data
def test_a_cut_short_checkpoint_is_one_line_not_a_traceback(runs, tmp_path, capsys) -> None:
    """torch reads a file cut at half its length as OSError [Errno 22], which was let through."""
    cut = _copy(runs["a"], tmp_path, "cut")
    data = (runs["a"] / "model.pt").read_bytes()
    (cut / "model.pt").write_bytes(data[: len(data) // 2])
    assert "is not a readable VHRED checkpoint" in refused(
        ["export", "--vhred", str(cut), "--store", str(tmp_path / "s4")], capsys)


@pytest.mark.data
def test_an_export_removes_what_a_killed_export_left(runs, tmp_path) -> None:
    """A kill during the final moves left a .export-* folder (full copies of the old folders) for good."""
    store = tmp_path / "store"
    shutil.copytree(runs["store"], store)
    (store / ".export-killed" / "adem").mkdir(parents=True)
    assert main(["export", "--adem", str(runs["adem"]), "--store", str(store)]) == 0
    assert not list(store.glob(".export-*"))


def test_a_graph_with_nan_weights_fails_the_parity_check(tmp_path) -> None:
    """A run with NaN weights fails the parity check (max() over NaN differences would pass it as 0.0),
    so it never replaces a working model in the store."""
    import torch

    from training.core.cli import SetupError
    from training.core.onnx_export import check_parity, export_onnx

    module = torch.nn.Linear(3, 1)
    with torch.no_grad():
        module.bias.fill_(float("nan"))
    example = (torch.randn(2, 3),)
    export_onnx(module, example, tmp_path / "nan.onnx", ["x"], ["y"], {"x": {0: "batch"}, "y": {0: "batch"}})
    with pytest.raises(SetupError, match="non-finite"):
        check_parity(module, tmp_path / "nan.onnx", [example], ["x"])


def test_a_head_with_nothing_left_to_fit_is_refused() -> None:
    import numpy as np

    from training.autojudge.train import fit_autojudge
    from training.core.cli import SetupError

    vectors = (np.ones((1, 4), np.float32), np.ones((1, 4), np.float32))
    with pytest.raises(SetupError, match="left to fit"):
        fit_autojudge(vectors, np.array([3.0]), ["only context"])


@pytest.mark.data
def test_finish_of_a_finished_run_still_works(runs, tmp_path) -> None:
    """A finished model.pt holds `sources` as a list (its metrics): applying it as the command line's
    comma-separated text was an AttributeError (a review of the --finish data settings)."""
    import json as json_module

    from training.encoders.hred import train as pretrain

    finished = _copy(runs["a"], tmp_path, "finished")
    before = json_module.loads((finished / "metrics.json").read_text())
    (finished / "metrics.json").unlink()  # a --finish killed between checkpoint and metrics
    assert pretrain.main(["--out", str(finished), "--finish", "--max-dialogues", "120", "--eval-dialogues", "10",
                          "--sources", "dailydialog", "--config", json.dumps(TINY)]) == 0
    after = json_module.loads((finished / "metrics.json").read_text())
    assert after["train_fingerprint"] == before["train_fingerprint"]


@pytest.mark.data
def test_the_exported_cards_follow_the_template(runs) -> None:
    from tests.training.card_checks import SECTIONS, headings

    for name in ("hred-encoder", "adem", "autojudge"):
        text = (runs["store"] / name / "README.md").read_text(encoding="utf-8")
        assert text.startswith(f"# {name}: ") and headings(text) == list(SECTIONS), name
