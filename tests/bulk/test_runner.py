"""`service.bulk.runner`: one output line per input line, progress in the log, append and fsync per batch."""
from __future__ import annotations

import contextlib
import json
import logging
import os
import subprocess

import pytest

from service import bulk
from service.scorers.base import Item
from tests.bulk.conftest import GOOD, _cli, _env, encoded, read_output, start_holder, write_lines


def test_one_output_line_per_input_line_and_bad_lines_reported(store, tmp_path):
    scorer = store.get("bleu4")
    lines = [
        encoded(GOOD)[0],
        b"{not json",
        b"",
        encoded(GOOD)[1],
        b"[1, 2]",
        b"\xff\xfe not utf-8",
        json.dumps({"context": [], "response": "x", "reference": "y"}).encode(),
        json.dumps({"context": ["a"], "response": "no reference"}).encode(),
        encoded(GOOD)[2],
    ]
    source = write_lines(tmp_path / "in.jsonl", lines)
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        counts = bulk.run(scorer, handle, output, batch_size=4)
    records = read_output(output)
    assert [r["line"] for r in records] == list(range(1, 10))
    assert counts.scored == 3 and counts.errors == 6 and counts.by_code == {"bad_line": 6}
    errors = {r["line"]: r["error"]["message"] for r in records if "error" in r}
    assert set(errors) == {2, 3, 5, 6, 7, 8}
    assert "not JSON" in errors[2] and errors[3] == "empty line" and "object" in errors[5]
    assert "UTF-8" in errors[6] and errors[7].startswith("context:") and errors[8].startswith("reference:")
    scored = [r for r in records if "score" in r]
    expected = scorer.score([Item(g["context"], g["response"], g["reference"]) for g in GOOD]).scores
    assert [r["score"] for r in scored] == pytest.approx(expected)
    assert [r.get("id") for r in scored] == ["a", None, 7]
    assert all(r["model"] == "bleu4" and r["version"] == scorer.version for r in records)


def test_progress_is_logged_with_structured_fields(store, tmp_path, caplog):
    """Progress goes through the logger, so that the bulk Job's stderr is one JSON object a line."""
    source = write_lines(tmp_path / "in.jsonl", encoded(GOOD * 4))
    caplog.set_level(logging.INFO, logger="service.bulk")
    with open(source, "rb") as handle:
        bulk.run(store.get("length"), handle, tmp_path / "out.jsonl", batch_size=2, progress_every=0.0)
    progress = [r for r in caplog.records if hasattr(r, "lines_written")]
    assert [r.lines_written for r in progress] == [2, 4, 6, 8, 10, 12]
    last = progress[-1]
    assert last.errors == 0 and last.lines_per_second > 0 and last.percent == 100.0
    assert "lines written" in last.getMessage()


def test_killed_process_resumes_without_scoring_a_line_twice(store_root, tmp_path):
    """A real SIGKILL: the input comes through a FIFO, so the kill lands at a known point."""
    items = [dict(GOOD[i % 3], id=i) for i in range(20)]
    lines = encoded(items)
    lines[5] = b"{broken"
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    output = tmp_path / "out.jsonl"
    # Two full batches (8 lines) are written and fsync'd; 2 lines wait in the third batch.
    proc, writer = start_holder(store_root, fifo, output, lines, 10, 4)
    try:
        proc.kill()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        with contextlib.suppress(BrokenPipeError):
            writer.close()
    assert proc.returncode == -9
    assert [r["line"] for r in read_output(output)] == list(range(1, 9))

    source = write_lines(tmp_path / "in.jsonl", lines)
    done = subprocess.run(_cli("--model", "length", "--input", str(source), "--output", str(output),
                               "--batch-size", "4"), env=_env(store_root), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    summary = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert summary["already_done"] == 8 and summary["scored"] == 12 and summary["errors"] == 0
    assert summary["items_per_second"] > 0
    assert "first 8 lines are those the output was scored from" in done.stderr.decode()  # FIFO, then a file
    records = read_output(output)
    assert [r["line"] for r in records] == list(range(1, 21))
    assert records[5]["error"]["code"] == "bad_line"
    assert [r["id"] for r in records if "id" in r] == [i for i in range(20) if i != 5]


def test_a_referenced_models_reference_free_part_scores_lines_without_a_reference(tmp_path):
    """--options '{"reference_free": true}': every line without a reference is scored, as /score scores it."""
    from service.store.model_store import ModelStore
    from tests.conftest import copy_store

    store = ModelStore(copy_store(tmp_path / "store", ("minilm-cosine",)))
    assert store.load(), store.failures
    scorer = store.get("minilm-cosine")
    items = [{"context": item["context"], "response": item["response"]} for item in GOOD]
    source = write_lines(tmp_path / "in.jsonl", encoded(items))
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        counts = bulk.run(scorer, handle, output, options={"reference_free": True})
    records = read_output(output)
    assert counts.scored == 3 and counts.errors == 0
    assert all(r["options"] == {"reference_free": True} for r in records)  # a resume must ask the same
    expected = scorer.score([Item(i["context"], i["response"]) for i in items], {"reference_free": True}).scores
    assert [r["score"] for r in records] == expected
