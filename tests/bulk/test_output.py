"""`service.bulk.output`: shard file names, the resume point (torn lines, foreign files, lines written
twice, the shard split and options) and the output's lock."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from service import bulk
from tests.bulk.conftest import GOOD, _cli, _env, encoded, json_lines, read_output, start_holder, write_lines


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


def test_a_torn_line_shorter_than_a_record_start_is_cut_too(store, tmp_path):
    """A kill can leave fewer bytes of the last record than its fixed start `{"line": `: they are
    a torn record as well, cut and scored again, not a foreign file."""
    scorer = store.get("length")
    source = write_lines(tmp_path / "in.jsonl", encoded(GOOD))
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        bulk.run(scorer, handle, output)
    complete = output.read_bytes()
    first = complete.splitlines(keepends=True)[0]
    output.write_bytes(first + b'{"li')
    with open(source, "rb") as handle:
        counts = bulk.run(scorer, handle, output)
    assert counts.resumed_after == 1 and output.read_bytes() == complete


def test_a_torn_output_of_another_model_is_refused_before_anything_is_cut(store, tmp_path):
    """The whole records are checked before the torn line is cut: a run with the wrong model leaves the
    file as it was, for the run that wrote it to resume."""
    source = write_lines(tmp_path / "in.jsonl", encoded(GOOD))
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        bulk.run(store.get("length"), handle, output)
    torn = b"".join(output.read_bytes().splitlines(keepends=True)[:2]) + b'{"line": 3, "mod'
    output.write_bytes(torn)
    with open(source, "rb") as handle, pytest.raises(bulk.BulkError, match="written by length"):
        bulk.run(store.get("bleu4"), handle, output)
    assert output.read_bytes() == torn


class _FillsUp:
    """An output file on a volume that fills up during the second batch: half of it is written, then
    ENOSPC, as a real full volume answers."""

    def __init__(self, raw) -> None:
        self.raw, self.batches = raw, 0

    def write(self, data) -> int:
        self.batches += 1
        if self.batches == 2:
            self.raw.write(bytes(data[: len(data) // 2]))
            raise OSError(28, "No space left on device")
        return self.raw.write(data)

    def __getattr__(self, name):
        return getattr(self.raw, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.raw.close()


def test_a_write_that_fails_leaves_whole_records_only_and_a_rerun_goes_on(store, tmp_path, monkeypatch):
    """A full volume left half a record, not JSON, at the end of the output until a rerun cut it."""
    from service.bulk import runner

    source = write_lines(tmp_path / "in.jsonl", encoded([dict(GOOD[i % 3], id=i) for i in range(12)]))
    output = tmp_path / "out.jsonl"
    monkeypatch.setattr(runner, "open", lambda *a, **k: _FillsUp(open(*a, **k)), raising=False)
    with open(source, "rb") as handle, pytest.raises(OSError, match="No space left"):
        bulk.run(store.get("length"), handle, output, batch_size=4)
    assert [r["line"] for r in read_output(output)] == [1, 2, 3, 4]  # strict JSON, the first batch whole
    assert output.read_bytes().endswith(b"\n")
    monkeypatch.undo()
    with open(source, "rb") as handle:
        counts = bulk.run(store.get("length"), handle, output, batch_size=4)
    assert counts.resumed_after == 4 and [r["line"] for r in read_output(output)] == list(range(1, 13))


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

        def for_options(self, options):
            return self

        def item_problem(self, item, options):
            return None

        def bit_exact_across_batches(self):
            return True

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


def test_resume_must_keep_where_scores_that_move_with_their_batch_were_computed(store, tmp_path):
    """Where a model is not bit-exact across batches (OpenVINO, CUDA), records name its encoders' provider
    and compute, and a resume on other ones (DIALSCORE_PROVIDERS changed, another node) is refused."""
    exact = store.get("length")
    source = write_lines(tmp_path / "in.jsonl", encoded([dict(GOOD[i % 3], id=i) for i in range(8)]))

    class Encoder:  # what GET /models says of an encoder OpenVINO runs in bf16, whatever this machine's CPU
        def describe(self):
            return {"name": "minilm-l6", "provider": "OpenVINOExecutionProvider", "compute": "bf16"}

    class Moving:
        components = {"minilm-l6": Encoder()}

        def __getattr__(self, attribute):  # the rest is the exact model's
            return getattr(exact, attribute)

        def bit_exact_across_batches(self):
            return False

    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        bulk.run(Moving(), handle, output, batch_size=3)
    assert {r["compute"] for r in read_output(output)} == {"OpenVINOExecutionProvider bf16"}
    output.write_bytes(b"".join(output.read_bytes().splitlines(keepends=True)[:3]))
    with open(source, "rb") as handle, pytest.raises(bulk.BulkError, match="compute OpenVINOExecutionProvider bf16"):
        bulk.run(exact, handle, output, batch_size=3)
    plain = tmp_path / "plain.jsonl"
    with open(source, "rb") as handle:
        bulk.run(exact, handle, plain, batch_size=3)
    assert all("compute" not in r for r in read_output(plain))  # the CPU EP's records stay as they were


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
    # {count} alone named one file for every shard, and the second shard's run was refused
    assert bulk.shard_output(tmp_path / "o-of-{count}.jsonl", 1, 2).name == "o-of-00002.jsonl.00001-of-00002"
    assert bulk.shard_output(tmp_path / "{index}-of-{count}.jsonl", 1, 2).name == "00001-of-00002.jsonl"
    assert bulk.shard_output(tmp_path / "o-{index}.jsonl", 0, 1).name == "o-00000.jsonl"  # no literal {index}


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


def test_a_stop_while_waiting_for_the_lock_ends_the_wait(tmp_path, monkeypatch):
    """SIGTERM (Stop.requested) while another process holds the lock: the wait ends at once, unheld, rather
    than running on to --lock-wait and past the pod's grace period."""
    from service.bulk.output import output_lock
    from service.bulk.signals import Stop

    output = tmp_path / "out.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | "
                               "os.O_CREAT); fcntl.lockf(fd, fcntl.LOCK_EX); print('locked', flush=True); "
                               "sys.stdin.read()", f"{output}.lock"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b"locked\n"
        monkeypatch.setattr(Stop, "requested", True)
        started = time.monotonic()
        with output_lock(output, wait=30) as held:
            assert held is False
        assert time.monotonic() - started < 5
    finally:
        holder.communicate(timeout=30)


def test_output_of_another_version_of_the_model_is_not_extended(tmp_path):
    from service.bulk.output import resume_point

    output = tmp_path / "out.jsonl"
    output.write_bytes(json.dumps({"line": 1, "model": "length", "version": "1.0", "score": 3.0}).encode() + b"\n")
    assert resume_point(output, "length", "1.0") == (1, 1)
    with pytest.raises(bulk.BulkError, match="written by length 1.0, not length 2.0"):
        resume_point(output, "length", "2.0")


def test_a_second_run_on_an_output_in_use_is_refused(store, store_root, tmp_path):
    """Two real processes: the second exits 2 naming the first and writes nothing (it used to write
    alongside, 59,888 lines for 30,000, both exiting 0)."""
    lines = encoded([dict(GOOD[i % 3], id=i) for i in range(12)])
    source = write_lines(tmp_path / "in.jsonl", lines)
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    output = tmp_path / "out.jsonl"
    holder, writer = start_holder(store_root, fifo, output, lines, 4, 4)
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
    old, writer = start_holder(store_root, fifo, output, lines, 6, 4)  # 4 written, 2 in hand
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
        old.send_signal(signal.SIGTERM)  # old pod: stops reading, writes lines 5 and 6, exits 143
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
    assert summary["already_done"] == 6 and summary["scored"] == 14
    assert [r["line"] for r in read_output(output)] == list(range(1, 21))
    assert any("waiting" in r["message"] for r in json_lines(log_path.read_bytes()))
