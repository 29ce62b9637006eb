"""Bulk scoring: one output line per input line, bad lines reported, kill-and-resume without duplicates."""
from __future__ import annotations

import errno
import json
import logging
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from service import bulk
from service.config import REPO_ROOT
from service.runtime import Runtime, RuntimeSettings
from service.scorers.base import Item
from service.store import ModelStore

REPO_K8S_BULK = REPO_ROOT / "k8s" / "bulk"

GOOD = [
    {"id": "a", "context": ["hi, how are you?"], "response": "fine, thanks. and you?", "reference": "good, you?"},
    {"context": ["what time is it?", "about noon."], "response": "then let's have lunch.",
     "reference": "great, i'm hungry.", "human": 4.5},
    {"id": 7, "context": ["do you like jazz?"], "response": "yes, very much indeed", "reference": "i love it."},
]


@pytest.fixture(scope="module")
def store_root(tmp_path_factory) -> Path:
    """The committed bleu4 and length folders alone, so that no unrelated component is loaded."""
    root = tmp_path_factory.mktemp("store")
    for name in ("bleu4", "length"):
        shutil.copytree(REPO_ROOT / "model_store" / name, root / name)
    return root


@pytest.fixture(scope="module")
def store(store_root) -> ModelStore:
    runtime = Runtime(RuntimeSettings(providers=("CPUExecutionProvider",), intra_op_threads=1, workers=1))
    store = ModelStore(store_root, runtime, ("bleu4", "length"))
    store.load()
    assert {"bleu4", "length"} <= set(store.scorers), store.failures
    return store


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def encoded(items: list[dict]) -> list[bytes]:
    return [json.dumps(item).encode() for item in items]


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    if not math.isfinite(float(text)):
        raise ValueError(f"{text} overflows a double")
    return float(text)


def strict_json(text: str | bytes):
    """json.loads as a strict reader (jq, Go, JavaScript) sees it: NaN and infinity are not JSON."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)


def read_output(path: Path) -> list[dict]:
    return [strict_json(line) for line in path.read_text(encoding="utf-8").splitlines()]


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


def test_torn_last_line_is_cut_and_rescored_once(store, tmp_path):
    scorer = store.get("length")
    items = [dict(GOOD[i % 3], id=i) for i in range(10)]
    source = write_lines(tmp_path / "in.jsonl", encoded(items))
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        bulk.run(scorer, handle, output, batch_size=3)
    complete = output.read_bytes()
    # What a kill in the middle of a write leaves: 4 whole lines and half of the 5th.
    kept = b"".join(complete.splitlines(keepends=True)[:4])
    output.write_bytes(kept + complete.splitlines(keepends=True)[4][:20])
    with open(source, "rb") as handle:
        counts = bulk.run(scorer, handle, output, batch_size=3)
    assert counts.resumed_after == 4 and counts.scored == 6
    assert output.read_bytes() == complete


def test_output_of_another_model_is_not_extended(store, tmp_path):
    source = write_lines(tmp_path / "in.jsonl", encoded(GOOD))
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        bulk.run(store.get("length"), handle, output)
    with open(source, "rb") as handle, pytest.raises(bulk.BulkError, match="written by length"):
        bulk.run(store.get("bleu4"), handle, output)


def test_a_foreign_file_without_a_final_newline_is_refused_not_cut(store, tmp_path):
    source = write_lines(tmp_path / "in.jsonl", encoded(GOOD))
    output = tmp_path / "results.json"
    output.write_bytes(b'{"results": [1, 2, 3]}')  # someone else's file, no newline at the end
    with open(source, "rb") as handle, pytest.raises(bulk.BulkError, match="not a bulk output record"):
        bulk.run(store.get("length"), handle, output)
    assert output.read_bytes() == b'{"results": [1, 2, 3]}'


def test_resume_must_keep_the_shard_split_and_the_options(store, tmp_path):
    scorer = store.get("length")
    source = write_lines(tmp_path / "in.jsonl", encoded([dict(GOOD[i % 3], id=i) for i in range(12)]))
    output = tmp_path / "out-{index}.jsonl"
    first = bulk.shard_output(output, 0, 3)
    with open(source, "rb") as handle:
        bulk.run(scorer, handle, first, shard_index=0, shard_count=3)
    assert {r["shard"] for r in read_output(first)} == {"0/3"}
    with open(source, "rb") as handle, pytest.raises(bulk.BulkError, match="shard 0/3"):
        bulk.run(scorer, handle, bulk.shard_output(output, 0, 2), shard_index=0, shard_count=2)
    # options: records say which non-default options scored them, and a resume must repeat them
    class Options:  # the committed length model has no options; one with a default stands in
        name, version, kind, manifest = scorer.name, scorer.version, scorer.kind, scorer.manifest
        reads_reference = scorer.reads_reference

        def resolve_options(self, options):
            return {"unit": "words", **(options or {})}

        def score(self, items, options, cache):
            return scorer.score(items, None, cache)

    plain = tmp_path / "plain.jsonl"
    with open(source, "rb") as handle:
        bulk.run(Options(), handle, plain, options={"unit": "words"}, batch_size=5)
    assert "options" not in read_output(plain)[0]  # the defaults add nothing
    odd = tmp_path / "odd.jsonl"
    with open(source, "rb") as handle:
        bulk.run(Options(), handle, odd, options={"unit": "chars"}, batch_size=5)
    assert read_output(odd)[0]["options"] == {"unit": "chars"}
    odd.write_bytes(b"".join(odd.read_bytes().splitlines(keepends=True)[:5]))
    with open(source, "rb") as handle, pytest.raises(bulk.BulkError, match="options"):
        bulk.run(Options(), handle, odd, batch_size=5)


def test_bad_lines_keep_their_id_and_a_lone_surrogate_is_one_bad_line(store, tmp_path):
    lines = encoded(GOOD) + [b'{"id": "keep-me", "context": [], "response": "x"}',
                             b'{"id": "\\ud800", "context": ["a"], "response": "b"}'] + encoded(GOOD)
    source = write_lines(tmp_path / "in.jsonl", lines)
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        counts = bulk.run(store.get("length"), handle, output)
    records = read_output(output)
    assert [r["line"] for r in records] == list(range(1, 9)) and counts.errors == 2
    assert records[3]["id"] == "keep-me" and records[3]["error"]["code"] == "bad_line"
    assert "surrogate" in records[4]["error"]["message"] and "score" in records[5]


def test_a_line_that_repeats_a_key_is_one_bad_line(store, tmp_path):
    lines = encoded(GOOD) + [b'{"context": ["a"], "response": "short", "response": "a much longer reply"}']
    source = write_lines(tmp_path / "in.jsonl", lines)
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        counts = bulk.run(store.get("length"), handle, output)
    records = read_output(output)
    assert counts.errors == 1 and "'response' appears twice" in records[-1]["error"]["message"]
    assert all("score" in r for r in records[:-1])


def test_shards_cover_every_line_once(store, tmp_path):
    scorer = store.get("length")
    items = [dict(GOOD[i % 3], id=i) for i in range(11)]
    source = write_lines(tmp_path / "in.jsonl", encoded(items))
    seen: list[int] = []
    for index in range(3):
        output = bulk.shard_output(tmp_path / "out-{index}.jsonl", index, 3)
        assert output.name == f"out-{index:05d}.jsonl"
        with open(source, "rb") as handle:
            bulk.run(scorer, handle, output, batch_size=2, shard_index=index, shard_count=3)
        seen += [r["line"] for r in read_output(output)]
    assert sorted(seen) == list(range(1, 12))
    assert bulk.shard_output(tmp_path / "o.jsonl", 1, 4).name == "o.jsonl.00001-of-00004"
    assert bulk.shard_output(tmp_path / "o.jsonl", 0, 1).name == "o.jsonl"
    assert bulk.shard_output(tmp_path / "o-{index}.jsonl", 0, 1).name == "o-00000.jsonl"  # no literal {index}


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


def test_non_finite_numbers_in_a_line_are_bad_lines_not_copied_into_the_output(store, tmp_path):
    """Python's json takes NaN, Infinity and 1e999 (-> inf); echoed as `id` they made the output not JSON."""
    good = b'{"context": ["hi"], "response": "hello", "reference": "hey"'
    lines = [good + b', "id": NaN}', good + b', "id": -Infinity}', good + b', "id": 1e999}',
             good + b', "rating": -1e999}', good + b', "id": 1e308}']
    source = write_lines(tmp_path / "in.jsonl", lines)
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        counts = bulk.run(store.get("length"), handle, output)
    records = read_output(output)  # strict: the whole output is JSON
    assert counts.errors == 4 and [r["error"]["code"] for r in records[:4]] == ["bad_line"] * 4
    assert all(r["error"]["message"].startswith("not JSON") for r in records[:4])
    assert "NaN" in records[0]["error"]["message"] and "1e999" in records[2]["error"]["message"]
    assert records[4]["id"] == 1e308 and "score" in records[4]


def test_a_score_that_is_not_finite_is_a_scoring_error_not_invalid_json(store, tmp_path):
    scorer = store.get("length")

    class Broken:  # a model fault: NaN out of the network for one item
        name, version, kind, manifest = scorer.name, scorer.version, scorer.kind, scorer.manifest
        reads_reference = scorer.reads_reference

        def resolve_options(self, options):
            return scorer.resolve_options(options)

        def score(self, items, options, cache):
            result = scorer.score(items, options, cache)
            result.scores = [math.nan if item.response == "x" else s for item, s in zip(items, result.scores)]
            return result

    items = [dict(GOOD[0], id=0), dict(GOOD[0], id=1, response="x"), dict(GOOD[0], id=2)]
    source = write_lines(tmp_path / "in.jsonl", encoded(items))
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        counts = bulk.run(Broken(), handle, output)
    records = read_output(output)
    assert [r["line"] for r in records] == [1, 2, 3] and counts.scored == 2 and counts.errors == 1
    assert records[1]["id"] == 1 and records[1]["error"]["code"] == "scoring_failed" and "score" not in records[1]


def test_lines_written_twice_are_refused_on_resume(store, tmp_path):
    """What two writers at once left before the lock (232 lines for 200): never extended, never counted as done."""
    scorer = store.get("length")
    source = write_lines(tmp_path / "in.jsonl", encoded([dict(GOOD[i % 3], id=i) for i in range(12)]))
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        bulk.run(scorer, handle, output, batch_size=4)
    lines = output.read_bytes().splitlines(keepends=True)
    output.write_bytes(b"".join(lines[:8] + lines[4:8]))  # batch 2 twice; the last line is still line 8
    with open(source, "rb") as handle, pytest.raises(bulk.BulkError, match="12 records for the 8 input lines"):
        bulk.run(scorer, handle, output, batch_size=4)
    assert output.read_bytes() == b"".join(lines[:8] + lines[4:8])
    # A shard's file holds every count-th line: the expected count follows the split.
    shard = bulk.shard_output(tmp_path / "s-{index}.jsonl", 1, 3)
    with open(source, "rb") as handle:
        bulk.run(scorer, handle, shard, batch_size=2, shard_index=1, shard_count=3)
    shard.write_bytes(b"".join(shard.read_bytes().splitlines(keepends=True)[:3]))  # lines 2, 5, 8
    with open(source, "rb") as handle:
        counts = bulk.run(scorer, handle, shard, batch_size=2, shard_index=1, shard_count=3)
    assert counts.resumed_after == 3 and [r["line"] for r in read_output(shard)] == [2, 5, 8, 11]


def test_a_resume_from_another_input_is_refused_and_a_grown_input_goes_on(store, tmp_path, caplog):
    scorer = store.get("length")
    items = [dict(GOOD[i % 3], id=i) for i in range(10)]
    source = write_lines(tmp_path / "in.jsonl", encoded(items[:6]))
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        bulk.run(scorer, handle, output, batch_size=4)
    checkpoint = json.loads((tmp_path / "out.jsonl.input.json").read_text())
    assert checkpoint["line"] == 6 and checkpoint["input"] == str(source)
    done = output.read_bytes()

    edited = [dict(item) for item in items]
    edited[2]["response"] = "another reply altogether"
    other = write_lines(tmp_path / "other.jsonl", encoded(edited))
    with open(other, "rb") as handle, pytest.raises(bulk.BulkError, match="first 6 lines of .*differ"):
        bulk.run(scorer, handle, output, batch_size=4)
    short = write_lines(tmp_path / "short.jsonl", encoded(items[:4]))
    with open(short, "rb") as handle, pytest.raises(bulk.BulkError, match="has 4 lines but .* up to line 6"):
        bulk.run(scorer, handle, output, batch_size=4)
    assert output.read_bytes() == done  # nothing appended by a refused run

    grown = write_lines(tmp_path / "grown.jsonl", encoded(items))  # the same six lines, four more
    with open(grown, "rb") as handle:
        counts = bulk.run(scorer, handle, output, batch_size=4)
    assert counts.resumed_after == 6 and counts.scored == 4
    assert [r["line"] for r in read_output(output)] == list(range(1, 11))
    assert json.loads((tmp_path / "out.jsonl.input.json").read_text())["line"] == 10

    # An output from before checkpoints (none beside it) is resumed, with a warning, not refused.
    (tmp_path / "out.jsonl.input.json").unlink()
    output.write_bytes(b"".join(output.read_bytes().splitlines(keepends=True)[:8]))
    with caplog.at_level(logging.WARNING, logger="service.bulk"), open(grown, "rb") as handle:
        counts = bulk.run(scorer, handle, output, batch_size=4)
    assert counts.resumed_after == 8 and counts.scored == 2
    assert "no input checkpoint" in caplog.text


def test_a_shard_checkpoint_covers_the_lines_of_every_shard(store, tmp_path):
    """Line numbers are positions in the whole input, so a change anywhere before the resume
    point moves what the shard's numbers mean: it is refused too."""
    scorer = store.get("length")
    items = [dict(GOOD[i % 3], id=i) for i in range(12)]
    source = write_lines(tmp_path / "in.jsonl", encoded(items[:7]))
    shard = bulk.shard_output(tmp_path / "s-{index}.jsonl", 1, 3)
    with open(source, "rb") as handle:
        bulk.run(scorer, handle, shard, batch_size=1, shard_index=1, shard_count=3)
    assert [r["line"] for r in read_output(shard)] == [2, 5]
    assert json.loads(Path(f"{shard}.input.json").read_text())["line"] == 5  # the shard's last line, not 7
    dropped = write_lines(tmp_path / "dropped.jsonl", encoded(items[1:]))  # line 1 (shard 0's) gone
    with open(dropped, "rb") as handle, pytest.raises(bulk.BulkError, match="differ"):
        bulk.run(scorer, handle, shard, batch_size=1, shard_index=1, shard_count=3)
    whole = write_lines(tmp_path / "whole.jsonl", encoded(items))
    with open(whole, "rb") as handle:
        counts = bulk.run(scorer, handle, shard, batch_size=1, shard_index=1, shard_count=3)
    assert counts.resumed_after == 2 and [r["line"] for r in read_output(shard)] == [2, 5, 8, 11]


def test_lines_the_parser_or_the_writer_would_choke_on_are_one_bad_line_each(store, tmp_path):
    """Nesting past the parser's recursion limit, a lone surrogate in a key (named in the message):
    each is one bad_line record, and the good lines around them are scored."""
    good = encoded(GOOD[:1])[0]
    lines = [good, b'{"context": ["hi"], "response": "yo", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}", good,
             b'{"context": ["hi"], "response": "yo", "\\ud800": 1}', b'{"id": {"\\udfff": 1}, "response": "x"}', good]
    source = write_lines(tmp_path / "in.jsonl", lines)
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        counts = bulk.run(store.get("length"), handle, output)
    records = read_output(output)
    assert [r["line"] for r in records] == [1, 2, 3, 4, 5, 6] and counts.errors == 3
    assert [("error" in r) for r in records] == [False, True, False, True, True, False]
    assert "nested deeper than" in records[1]["error"]["message"]
    assert "\\ud800" in records[3]["error"]["message"]  # the key, escaped


def test_an_input_without_a_final_newline_may_grow_and_resume(store, tmp_path):
    scorer = store.get("length")
    items = encoded([dict(GOOD[i % 3], id=i) for i in range(8)])
    source = tmp_path / "in.jsonl"
    source.write_bytes(b"\n".join(items[:5]))  # no newline after line 5
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        bulk.run(scorer, handle, output, batch_size=2)
    source.write_bytes(b"".join(line + b"\n" for line in items))  # the same five lines, three more
    with open(source, "rb") as handle:
        counts = bulk.run(scorer, handle, output, batch_size=2)
    assert counts.resumed_after == 5 and [r["line"] for r in read_output(output)] == list(range(1, 9))


def test_a_symlink_to_an_output_meets_its_lock_and_only_files_are_outputs(store, tmp_path):
    scorer = store.get("length")
    source = write_lines(tmp_path / "in.jsonl", encoded(GOOD))
    target = tmp_path / "out.jsonl"
    target.touch()
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    # Another process holds the file's lock (POSIX locks belong to a process, so not this one).
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | "
                               "os.O_CREAT); fcntl.lockf(fd, fcntl.LOCK_EX); print('locked', flush=True); "
                               "sys.stdin.read()", f"{target}.lock"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b"locked\n"
        with open(source, "rb") as handle, pytest.raises(bulk.BulkError, match="being written by another run"):
            bulk.run(scorer, handle, link)
    finally:
        holder.communicate(timeout=30)
    with open(source, "rb") as handle:
        bulk.run(scorer, handle, link)
    assert link.is_symlink() and len(read_output(target)) == len(GOOD)  # written through the link
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with open(source, "rb") as handle, pytest.raises(bulk.BulkError, match="not a regular file"):
        bulk.run(scorer, handle, fifo)


def test_unparsable_numbers_in_an_output_or_its_checkpoint_are_refused_or_skipped(store, tmp_path, caplog):
    scorer = store.get("length")
    source = write_lines(tmp_path / "in.jsonl", encoded(GOOD))
    output = tmp_path / "out.jsonl"
    output.write_text('{"line": Infinity, "model": "length"}\n', encoding="utf-8")
    with open(source, "rb") as handle, pytest.raises(bulk.BulkError, match="not a bulk output record"):
        bulk.run(scorer, handle, output)
    output.unlink()
    with open(source, "rb") as handle:
        bulk.run(scorer, handle, output, batch_size=2)
    output.write_bytes(b"".join(output.read_bytes().splitlines(keepends=True)[:2]))
    Path(f"{output}.input.json").write_text('{"line": 1e999, "sha256": "x"}', encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="service.bulk"), open(source, "rb") as handle:
        counts = bulk.run(scorer, handle, output, batch_size=2)
    assert counts.resumed_after == 2 and counts.scored == 1 and "unreadable" in caplog.text


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "service.bulk", *args]


def _env(store_root: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), "DIALSCORE_INTRA_OP_THREADS": "1",
            "DIALSCORE_MODEL_STORE": str(store_root)}


def test_killed_process_resumes_without_scoring_a_line_twice(store_root, tmp_path):
    """A real SIGKILL: the input comes through a FIFO, so the kill lands at a known point."""
    items = [dict(GOOD[i % 3], id=i) for i in range(20)]
    lines = encoded(items)
    lines[5] = b"{broken"
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    output = tmp_path / "out.jsonl"
    proc = subprocess.Popen(_cli("--model", "length", "--input", str(fifo), "--output", str(output),
                                 "--batch-size", "4"), env=_env(store_root), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        with open(fifo, "wb") as writer:
            writer.write(b"".join(line + b"\n" for line in lines[:10]))
            writer.flush()
            deadline = time.monotonic() + 60
            # Two full batches (8 lines) are written and fsync'd; 2 lines wait in the third batch.
            while time.monotonic() < deadline and (not output.exists() or output.read_bytes().count(b"\n") < 8):
                assert proc.poll() is None, proc.stderr.read().decode()
                time.sleep(0.05)
            proc.kill()
            proc.wait(timeout=30)
    except BrokenPipeError:
        pass
    finally:
        if proc.poll() is None:
            proc.kill()
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


def json_lines(stderr: bytes) -> list[dict]:
    """Every stderr line as the log pipeline reads it: one JSON object, else the test fails."""
    return [json.loads(line) for line in stderr.decode().splitlines()]


def test_cli_rejects_an_unknown_model_and_a_bad_shard(store_root, tmp_path):
    source = write_lines(tmp_path / "in.jsonl", encoded(GOOD))
    unknown = subprocess.run(_cli("--model", "no-such-model", "--input", str(source), "--output",
                                  str(tmp_path / "o.jsonl")), env=_env(store_root), capture_output=True, timeout=120)
    assert unknown.returncode == 2 and b"no-such-model" in unknown.stderr
    shard = subprocess.run(_cli("--model", "length", "--input", str(source), "--output", str(tmp_path / "o.jsonl"),
                                "--shard-index", "3", "--shard-count", "2"), env=_env(store_root), capture_output=True,
                           timeout=120)
    assert shard.returncode == 2 and b"--shard-index 3" in shard.stderr
    env = {**_env(store_root), "JOB_COMPLETION_INDEX": "abc"}
    bad_env = subprocess.run(_cli("--model", "length", "--input", str(source), "--output", str(tmp_path / "o.jsonl")),
                             env=env, capture_output=True, timeout=120)
    assert bad_env.returncode == 2 and b"JOB_COMPLETION_INDEX" in bad_env.stderr and b"Traceback" not in bad_env.stderr


def test_set_up_errors_exit_2_with_one_json_log_record(store_root, tmp_path):
    """Exit 2 means 'found before any line was scored' (the Job fails at once); stderr stays JSON."""
    source = write_lines(tmp_path / "in.jsonl", encoded(GOOD))
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text('{"line": 3, "model": "bleu4", "version": "0"}\n', encoding="utf-8")
    cases = {
        "no-such-model": ["--model", "no-such-model", "--input", str(source)],
        "No such file": ["--model", "length", "--input", str(tmp_path / "missing.jsonl")],
        "written by bleu4": ["--model", "length", "--input", str(source), "--output", str(foreign)],
        "--batch-size": ["--model", "length", "--input", str(source), "--batch-size", "0"],
        "not JSON (NaN": ["--model", "length", "--input", str(source), "--options", '{"x": NaN}'],
        "nested too deeply": ["--model", "length", "--input", str(source), "--options",
                              '{"x": ' + "[" * 5000 + "]" * 5000 + "}"],
        "--lock-wait must be": ["--model", "length", "--input", str(source), "--lock-wait", "nan"],
    }
    for expected, args in cases.items():
        if "--output" not in args:
            args = [*args, "--output", str(tmp_path / "o.jsonl")]
        done = subprocess.run(_cli(*args), env=_env(store_root), capture_output=True, timeout=120)
        assert done.returncode == 2, (expected, done.stderr.decode())
        [record] = [r for r in json_lines(done.stderr) if r["level"] == "ERROR"]
        assert expected in record["message"] and record["logger"] == "service.bulk", record
        assert done.stdout == b""
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("where", ["output", "model store"])
@pytest.mark.parametrize(("error", "status"), [(errno.EIO, 1), (errno.ESTALE, 1), (errno.EACCES, 2)])
def test_an_io_error_at_set_up_is_retried_only_when_it_may_pass(store_root, tmp_path, monkeypatch, error, status,
                                                                 where):
    """A volume that blinks while the resume point or the model store is read (EIO, ESTALE) exits 1,
    which the Job retries; one that refuses (EACCES) exits 2 like any set-up error. The volume is
    what is faked here."""
    source = write_lines(tmp_path / "in.jsonl", encoded(GOOD))

    def failing_volume(*args, **kwargs):
        raise OSError(error, os.strerror(error))

    if where == "output":
        monkeypatch.setattr(bulk.runner, "resume_point", failing_volume)
    else:
        monkeypatch.setattr(ModelStore, "load", failing_volume)
    monkeypatch.setenv("DIALSCORE_MODEL_STORE", str(store_root))
    monkeypatch.setenv("DIALSCORE_INTRA_OP_THREADS", "1")
    try:
        assert bulk.main(["--model", "length", "--input", str(source), "--output", str(tmp_path / "o.jsonl")]) == status
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    assert not (tmp_path / "o.jsonl").exists() or (tmp_path / "o.jsonl").read_bytes() == b""


def test_cli_stderr_is_one_json_object_a_line_with_progress_fields(store_root, tmp_path):
    lines = encoded([dict(GOOD[i % 3], id=i) for i in range(9)])
    lines[4] = b"{broken"
    source = write_lines(tmp_path / "in.jsonl", lines)
    done = subprocess.run(_cli("--model", "length", "--input", str(source), "--output", str(tmp_path / "o.jsonl"),
                               "--batch-size", "4", "--progress-every", "0"), env=_env(store_root),
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    records = json_lines(done.stderr)
    progress = [r for r in records if "lines_written" in r]
    assert [(r["lines_written"], r["errors"]) for r in progress] == [(4, 0), (8, 1)]
    assert 0 < progress[0]["percent"] < progress[1]["percent"] < 100 and progress[0]["lines_per_second"] > 0
    assert any(r["level"] == "WARNING" and "line 5" in r["message"] for r in records)
    assert json.loads(done.stdout)["scored"] == 8  # the summary stays on stdout


def test_a_failure_after_scoring_started_exits_1_and_a_retry_resumes(store_root, tmp_path):
    """A full volume half-way (EFBIG under a file-size limit stands in for ENOSPC) is retried by the Job
    for this index alone (exit 1), not treated as a set-up error (exit 2 fails the whole Job)."""
    source = write_lines(tmp_path / "in.jsonl", encoded([dict(GOOD[i % 3], id=i) for i in range(40)]))
    output = tmp_path / "out.jsonl"
    args = _cli("--model", "length", "--input", str(source), "--output", str(output), "--batch-size", "8")
    limit = 2_500  # a few batches of ~100-byte records, then the disk is "full"

    def small_disk() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    full = subprocess.run(args, env=_env(store_root), capture_output=True, timeout=120, preexec_fn=small_disk)
    assert full.returncode == 1, full.stderr.decode()
    [error] = [r for r in json_lines(full.stderr) if r["level"] == "ERROR"]
    assert "File too large" in error["message"]
    assert 0 < output.stat().st_size <= limit
    done = subprocess.run(args, env=_env(store_root), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert 0 < json.loads(done.stdout)["already_done"] < 40
    assert [r["line"] for r in read_output(output)] == list(range(1, 41))


def _start_holder(store_root: Path, fifo: Path, output: Path, lines: list[bytes], first: int, batch: int):
    """A run that was given `first` lines, has written its full batches and now waits on its FIFO for
    more: it holds the output."""
    proc = subprocess.Popen(_cli("--model", "length", "--input", str(fifo), "--output", str(output),
                                 "--batch-size", str(batch)), env=_env(store_root), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    writer = open(fifo, "wb")  # noqa: SIM115 - the caller closes it, which ends the holder's input
    writer.write(b"".join(line + b"\n" for line in lines[:first]))
    writer.flush()
    deadline = time.monotonic() + 60
    written = first - first % batch
    while time.monotonic() < deadline and (not output.exists() or output.read_bytes().count(b"\n") < written):
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.05)
    _wait_blocked_on_pipe(proc.pid, deadline)
    return proc, writer


def test_a_second_run_on_an_output_in_use_is_refused(store, store_root, tmp_path):
    """Two real processes: the second exits 2 naming the first and writes nothing (it used to write
    alongside, 59,888 lines for 30,000, both exiting 0)."""
    lines = encoded([dict(GOOD[i % 3], id=i) for i in range(12)])
    source = write_lines(tmp_path / "in.jsonl", lines)
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    output = tmp_path / "out.jsonl"
    holder, writer = _start_holder(store_root, fifo, output, lines, 4, 4)
    try:
        before = output.read_bytes()
        with open(source, "rb") as handle, pytest.raises(bulk.BulkError, match=f"pid {holder.pid} on "):
            bulk.run(store.get("length"), handle, output, batch_size=4)
        second = subprocess.run(_cli("--model", "length", "--input", str(source), "--output", str(output)),
                                env=_env(store_root), capture_output=True, timeout=120)
        assert second.returncode == 2, second.stderr.decode()
        [error] = [r for r in json_lines(second.stderr) if r["level"] == "ERROR"]
        assert "another run" in error["message"] and f"pid {holder.pid}" in error["message"]
        assert output.read_bytes() == before
        writer.write(b"".join(line + b"\n" for line in lines[4:]))
    finally:
        writer.close()
        stdout, stderr = holder.communicate(timeout=60)
    assert holder.returncode == 0, stderr.decode()
    assert [r["line"] for r in read_output(output)] == list(range(1, 13))


def test_a_redeployed_run_waits_for_the_old_pod_and_resumes_after_it(store_root, tmp_path):
    """docs/deploy.md's resume: `kubectl delete job` lets the old pod finish its batch while the new
    one starts. With --lock-wait the new run waits for the old one, then resumes: each line once, in order."""
    lines = encoded([dict(GOOD[i % 3], id=i) for i in range(20)])
    source = write_lines(tmp_path / "in.jsonl", lines)
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    output = tmp_path / "out.jsonl"
    old, writer = _start_holder(store_root, fifo, output, lines, 6, 4)  # 4 written, 2 in the batch in hand
    log_path = tmp_path / "new.err"
    with open(log_path, "wb") as log_file:
        new = subprocess.Popen(_cli("--model", "length", "--input", str(source), "--output", str(output),
                                    "--batch-size", "4", "--lock-wait", "60"), env=_env(store_root),
                               stdout=subprocess.PIPE, stderr=log_file)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and b"waiting" not in log_path.read_bytes():
            assert new.poll() is None, log_path.read_text()
            time.sleep(0.05)
        assert output.read_bytes().count(b"\n") == 4  # the new run has written nothing
        old.send_signal(signal.SIGTERM)  # old pod: finishes the batch in hand (lines 5..8), exits 143
        writer.write(b"".join(line + b"\n" for line in lines[6:]))
    except BrokenPipeError:
        pass
    finally:
        writer.close()
        old.communicate(timeout=60)
        stdout, _ = new.communicate(timeout=120)
    assert old.returncode == 143
    assert new.returncode == 0, log_path.read_text()
    summary = json.loads(stdout)
    assert summary["already_done"] == 8 and summary["scored"] == 12
    assert [r["line"] for r in read_output(output)] == list(range(1, 21))
    assert any("waiting" in r["message"] for r in json_lines(log_path.read_bytes()))


def test_the_bulk_job_gives_a_worst_case_batch_time_to_finish_on_sigterm():
    """SIGTERM lets the batch in hand finish: the grace period must cover model loading plus one batch
    of the longest items (the encoders truncate at 256 tokens, about 2,000 characters an utterance)."""
    import yaml

    job = yaml.safe_load((REPO_K8S_BULK / "job.yaml").read_text(encoding="utf-8"))
    config = yaml.safe_load((REPO_K8S_BULK / "kustomization.yaml").read_text(encoding="utf-8"))
    literals = dict(item.split("=", 1) for item in config["configMapGenerator"][0]["literals"])
    pod = job["spec"]["template"]["spec"]
    # The slowest models on 1 thread, items of ~2,000-character utterances (/tmp/review9b/worst200.jsonl):
    # ruber-minilm and minilm-cosine 0.239 s an item (adem-minilm 0.22, autojudge-minilm 0.15), loading < 2 s.
    seconds_per_item = 0.239
    load_seconds = 10.0
    worst = load_seconds + 2 * seconds_per_item * int(literals["BULK_BATCH_SIZE"])  # x2: a slower or busier node
    assert pod["terminationGracePeriodSeconds"] >= worst
    # A new pod (a retry, or a redeploy's) waits for the old one's lock at least that long.
    [container] = pod["containers"]
    [wait] = [a.split("=", 1)[1] for a in container["args"] if a.startswith("--lock-wait=")]
    assert float(wait) >= pod["terminationGracePeriodSeconds"]
    [fail] = [r for r in job["spec"]["podFailurePolicy"]["rules"] if r["action"] == "FailJob"]
    assert fail["onExitCodes"]["values"] == [2]


def _wait_blocked_on_pipe(pid: int, deadline: float) -> None:
    """Until the process sleeps in a pipe read (/proc wchan); a fixed second where wchan is hidden."""
    wchan = Path(f"/proc/{pid}/wchan")
    while time.monotonic() < deadline:
        try:
            where = wchan.read_text()
        except OSError:
            where = "0"
        if where in ("", "0"):
            time.sleep(1.0)
            return
        if "pipe" in where:
            return
        time.sleep(0.02)


def test_sigterm_finishes_the_batch_in_hand_and_exits_143(store_root, tmp_path):
    """What Kubernetes sends on eviction: the batch being filled is scored and written, then exit 143."""
    lines = encoded([dict(GOOD[i % 3], id=i) for i in range(16)])
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    output = tmp_path / "out.jsonl"
    proc = subprocess.Popen(_cli("--model", "length", "--input", str(fifo), "--output", str(output),
                                 "--batch-size", "4"), env=_env(store_root), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        with open(fifo, "wb") as writer:
            writer.write(b"".join(line + b"\n" for line in lines[:6]))
            writer.flush()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and (not output.exists() or output.read_bytes().count(b"\n") < 4):
                assert proc.poll() is None, proc.stderr.read().decode()
                time.sleep(0.05)
            # The first batch is on disk before its stop check: signal only once the tool waits for line 7.
            _wait_blocked_on_pipe(proc.pid, deadline)
            proc.send_signal(signal.SIGTERM)  # lines 5 and 6 wait in the batch being filled
            time.sleep(0.5)
            writer.write(b"".join(line + b"\n" for line in lines[6:]))
    except BrokenPipeError:
        pass
    finally:
        stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr.decode()
    assert [r["line"] for r in read_output(output)] == list(range(1, 9))
    summary = json.loads(stdout.decode().strip().splitlines()[-1])
    assert summary["stopped_early"] is True and summary["scored"] == 8


def test_a_file_that_opens_with_a_byte_order_mark_scores_its_first_line(store, tmp_path):
    lines = encoded(GOOD)
    lines[0] = b"\xef\xbb\xbf" + lines[0]
    source = write_lines(tmp_path / "in.jsonl", lines)
    with open(source, "rb") as handle:
        counts = bulk.run(store.get("bleu4"), handle, tmp_path / "out.jsonl")
    assert counts.errors == 0 and "score" in read_output(tmp_path / "out.jsonl")[0]


def test_the_runtime_settings_of_the_service_reach_the_bulk_scorer(store_root, tmp_path, monkeypatch):
    """DIALSCORE_BATCH_SIZE (and every runtime variable the server honours) holds for bulk too: bulk once
    built its own RuntimeSettings and scored with 64-text batches whatever the variable said."""
    from service.bulk import cli

    monkeypatch.setenv("DIALSCORE_BATCH_SIZE", "8")
    monkeypatch.setenv("DIALSCORE_PROVIDERS", "CPUExecutionProvider")
    monkeypatch.setenv("DIALSCORE_CUDA_OPTIONS", "device_id=0")
    args = cli._parse_args(["--model", "length", "--input", str(tmp_path / "in.jsonl"), "--output",
                            str(tmp_path / "out.jsonl"), "--model-store", str(store_root), "--threads", "1"])
    settings = cli._load_scorer(args).runtime.settings
    assert (settings.batch_size, settings.providers, settings.cuda_options) == (8, ("CPUExecutionProvider",),
                                                                                ("device_id=0",))
    assert (settings.intra_op_threads, settings.workers) == (1, 1)  # bulk's own: one process, --threads


def test_bulk_refuses_a_missing_reference_exactly_where_the_api_does(store):
    """One answer to "does this model read `reference`?" (Scorer.reads_reference), asked by the API and bulk."""
    from service.bulk.records import BadLine, parse_line

    line = json.dumps({"context": ["hi"], "response": "hello"}).encode()
    for name in ("bleu4", "length"):
        scorer = store.get(name)
        assert scorer.reads_reference == (scorer.kind == "referenced") == ("reference" in scorer.manifest.requires)
        if scorer.reads_reference:
            with pytest.raises(BadLine, match="needs a reference"):
                parse_line(line, scorer)
        else:
            assert parse_line(line, scorer)[0].reference is None
