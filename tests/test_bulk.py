"""Bulk scoring: one output line per input line, bad lines reported, kill-and-resume without duplicates."""
from __future__ import annotations

import io
import json
import os
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


def read_output(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


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


def test_progress_is_reported(store, tmp_path):
    source = write_lines(tmp_path / "in.jsonl", encoded(GOOD * 4))
    stream = io.StringIO()
    with open(source, "rb") as handle:
        bulk.run(store.get("length"), handle, tmp_path / "out.jsonl", batch_size=2, progress_every=0.0,
                 progress=stream)
    assert "lines written" in stream.getvalue() and "% of the input" in stream.getvalue()


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
    records = read_output(output)
    assert [r["line"] for r in records] == list(range(1, 21))
    assert records[5]["error"]["code"] == "bad_line"
    assert [r["id"] for r in records if "id" in r] == [i for i in range(20) if i != 5]


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
