"""`python -m training`: an unknown command or a missing path is exit 2 with one line, not a traceback."""
from __future__ import annotations

import pytest

from training.__main__ import main


def test_unknown_command_and_missing_paths_are_set_up_errors(tmp_path, capsys) -> None:
    assert main(["nosuch"]) == 2
    assert "unknown command 'nosuch'" in capsys.readouterr().err
    assert main(["selftalk", "--model", str(tmp_path / "missing"), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert str(tmp_path / "missing") in capsys.readouterr().err



@pytest.mark.parametrize("argv, option", [
    (["pretrain", "--batch-size", "0"], "--batch-size"), (["pretrain", "--steps", "0"], "--steps"),
    (["pretrain", "--sources", "nosuch"], "--sources"), (["train", "adem", "--sets", "nosuch"], "--sets"),
    (["train", "adem", "--gamma", "nan"], "--gamma"), (["train", "autojudge", "--folds", "1"], "--folds"),
    (["train", "autojudge", "--lr", "-1"], "--lr"), (["train", "ruber", "--max-steps", "0"], "--max-steps"),
    (["selftalk", "--temperature", "nan"], "--temperature"), (["selftalk", "--contexts", "-1"], "--contexts"),
    (["export-glove", "--words", "-5"], "--words"), (["train-mh", "--ridge", "-1"], "--ridge"),
    (["finetune-minilm", "--max-judged", "-1"], "--max-judged"), (["train-minilm", "--epochs", "0"], "--epochs"),
    # outputs written only at the end of long work: checked first (RUBER failed after 90 minutes)
    (["train", "ruber", "--log", "/proc/nope/ruber.log"], "--log"), (["evaluate", "--plots", "/proc/nope"], "--plots"),
    # pretrain --config: max_turns 1 looped forever; the others were tracebacks after the corpora loaded
    (["pretrain", "--config", '{"max_turns": 1}'], "--config"), (["pretrain", "--config", '{"max_turns": 0}'], "--config"),
    (["pretrain", "--config", "{bad json"], "--config"), (["pretrain", "--config", '{"nosuch": 3}'], "--config"),
    (["pretrain", "--config", "[1, 2]"], "--config"), (["pretrain", "--config", '{"embedding": 0}'], "--config"),
    (["pretrain", "--config", '{"word_drop": 1.5}'], "--config"), (["pretrain", "--config", '{"vocab_size": 9}'], "--config"),
    # outputs (and an input) of the MiniLM commands, used only after minutes of work; their choices
    (["train-minilm", "--model", "adem-minilm", "--out", "/proc/nope"], "--out"),
    (["train-minilm", "--model", "adem-minilm", "--results", "/proc/nope/r.jsonl"], "--results"),
    (["train-minilm", "--model", "adem-minilm", "--encoding", "bogus"], "--encoding"),
    (["train-minilm", "--model", "adem-minilm", "--pooling", "bogus"], "--pooling"),
    (["train-minilm", "--model", "adem-minilm", "--search", "--choices", "bogus"], "--choices"),
    (["degenerate", "--models", "length", "--contexts", "5", "--out", "/proc/nope/x.md"], "--out"),
    (["minilm-report", "--sets", "conture", "--out", "/proc/nope/x.md", "--no-cards"], "--out"),
    (["minilm-report", "--sets", "conture", "--tried", "/nonexist.jsonl"], "--tried"),
    # the re-ranking cross-encoder's pack, GPU call and export: found wrong here, not on the device
    (["pack-rerank", "--ruber-pairs", "-1"], "--ruber-pairs"), (["train-rerank", "--epochs", "0"], "--epochs"),
    (["train-rerank", "--encoder-lr", "nan"], "--encoder-lr"), (["train-rerank", "--pack", "/nonexist"], "--pack"),
    (["export-rerank", "/nonexist"], "returned"),
    # --threads 100000 crashed pretrain with SIGSEGV; --batch-size 1 left RUBER no negatives (a traceback)
    (["pretrain", "--threads", "100000"], "--threads"), (["train", "ruber", "--threads", "257"], "--threads"),
    (["train", "ruber", "--batch-size", "1"], "--batch-size"),
    (["train", "adem", "--store", "/etc/passwd"], "--store"),  # a file: the card's baselines were dropped
    # root passed os.access for /proc: the write failed after every conversation
    (["selfplay", "--out", "/proc/selfplay.jsonl"], "--out"),
])
def test_a_number_or_name_no_run_can_use_is_a_usage_error(argv, option, capsys) -> None:
    """A value no run can use is argparse's exit 2, naming the option, before anything is read (not a
    traceback after loading, nor a run that 'succeeds' with nothing trained)."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert f"argument {option}" in capsys.readouterr().err


def test_a_failed_run_takes_back_the_empty_folders_its_options_made(tmp_path, capsys) -> None:
    """A run that fails after --out was checked takes back the folders (and parents) that check made."""
    out = tmp_path / "new" / "deeper" / "o.jsonl"
    missing = ["--data-dir", str(tmp_path / "nodata"), "--sets", "conture"]
    assert main(["dev-items", "--out", str(out), *missing]) == 2
    assert not (tmp_path / "new").exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    assert main(["dev-items", "--out", str(kept / "o.jsonl"), *missing]) == 2
    assert kept.is_dir()  # it was there before the run
    with pytest.raises(SystemExit):  # a bad option after --out: argparse exits, the folder goes too
        main(["dev-items", "--out", str(out), "--split", "nosuch"])
    assert not (tmp_path / "new").exists()
    capsys.readouterr()


def test_an_output_path_that_is_a_file_is_a_set_up_error(tmp_path, capsys) -> None:
    (tmp_path / "afile").write_text("x")
    assert main(["selftalk", "--model", str(tmp_path / "missing"), "--out", str(tmp_path / "afile" / "o.jsonl")]) == 2


@pytest.mark.parametrize("bad", ["", "../x y", "a" * 65])
def test_export_versions_are_what_models_can_show(bad, capsys) -> None:
    """A version is what /models can show: not empty, no path, no space, at most 64 characters."""
    from training.__main__ import main

    with pytest.raises(SystemExit) as exited:
        main(["export", "--adem", "runs/adem", "--version", bad])
    assert exited.value.code == 2 and "a version is" in capsys.readouterr().err


@pytest.mark.parametrize("raised, code, said", [("KeyboardInterrupt", 130, "interrupted"),
                                                 ("Terminated", 143, "terminated")])
def test_ctrl_c_and_sigterm_are_one_line_and_the_shells_exit_status(raised, code, said, monkeypatch, capsys) -> None:
    """A traceback and exit 1 before; SIGTERM is raised as Terminated while a store folder is built."""
    from training.evaluation import dev_items
    from training.core import staging

    def stopped(argv):
        raise getattr(staging, raised, KeyboardInterrupt)

    monkeypatch.setattr(dev_items, "main", stopped)
    assert main(["dev-items", "--out", "x.jsonl"]) == code
    assert capsys.readouterr().err.strip() == f"dev-items: {said}"


def test_a_store_without_the_folder_a_command_reads_is_one_line(tmp_path, capsys, monkeypatch) -> None:
    """`train ruber --store` without glove-50d was a ManifestError traceback; the --out it made goes."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where the failed run's log is kept
    (tmp_path / "tmp").mkdir()
    out = tmp_path / "ruber"
    assert main(["train", "ruber", "--store", str(tmp_path / "empty"), "--out", str(out), "--minutes", "0"]) == 2
    err = capsys.readouterr().err
    assert "glove-50d" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]  # the --out it made, still empty, taken back
    kept = [p.read_text() for p in (tmp_path / "tmp").iterdir()]
    assert len(kept) == 1 and "glove-50d" in kept[0]  # the kept log says why


def test_minilm_report_reads_its_tried_file_before_the_report(tmp_path, capsys) -> None:
    bad = tmp_path / "tried.jsonl"
    bad.write_text('{"dev_pearson": {"a": 0.1}}\nnot json\n')
    assert main(["minilm-report", "--sets", "conture", "--tried", str(bad), "--no-cards",
                 "--store", str(tmp_path / "nostore")]) == 2
    assert f"{bad}:2: not JSON" in capsys.readouterr().err


def test_export_glove_will_not_resize_a_table_store_models_use(tmp_path, capsys) -> None:
    """`export-glove --words 1000` into a store took ruber out of service (its word weights have a row per
    word) and changed mh's and the emb-* baselines' scores."""
    import json
    import shutil
    from pathlib import Path

    store = Path(__file__).resolve().parents[2] / "model_store"
    for name in ("glove-50d", "ruber"):
        shutil.copytree(store / name, tmp_path / name)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "manifest.json").write_text("{broken")  # was a JSONDecodeError traceback
    before = (tmp_path / "glove-50d" / "vectors.npy").read_bytes()
    assert main(["export-glove", "--out", str(tmp_path / "glove-50d"), "--words", "1000"]) == 2
    err = capsys.readouterr().err
    assert "holds 50000 words and ruber use it" in err
    assert (tmp_path / "glove-50d" / "vectors.npy").read_bytes() == before
    assert json.loads((tmp_path / "glove-50d" / "manifest.json").read_text())["config"]["words"] == 50000


def test_minilm_report_on_a_store_without_the_models_is_a_set_up_error(tmp_path, capsys) -> None:
    (tmp_path / "store").mkdir()
    assert main(["minilm-report", "--sets", "conture", "--no-cards", "--store", str(tmp_path / "store")]) == 2
    assert "nothing to report" in capsys.readouterr().err


def test_export_glove_repairs_a_table_whose_manifest_is_broken(tmp_path) -> None:
    (tmp_path / "glove-50d").mkdir()
    (tmp_path / "glove-50d" / "manifest.json").write_text("{broken")
    assert main(["export-glove", "--out", str(tmp_path / "glove-50d"), "--words", "1000"]) == 0
    from service.artifacts.manifest import read_manifest

    assert read_manifest(tmp_path / "glove-50d").config["words"] == 1000
