"""`service.bulk.checkpoint`: a resume checks that the input is the one the output was scored from."""
from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
from pathlib import Path

import pytest

from service import bulk
from tests.bulk.conftest import GOOD, encoded, read_output, write_lines


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


def test_a_rerun_of_a_finished_output_with_its_input_scores_nothing_and_succeeds(store, tmp_path):
    """A Job retried after its run finished meets an input exactly as long as the output: nothing to do, no
    error (an input shorter than the output is refused; one of the same length is the same input)."""
    scorer = store.get("length")
    source = write_lines(tmp_path / "in.jsonl", encoded(GOOD))
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        bulk.run(scorer, handle, output, batch_size=2)
    done = output.read_bytes()
    with open(source, "rb") as handle:
        counts = bulk.run(scorer, handle, output, batch_size=2)
    assert counts.resumed_after == 3 and counts.scored == 0 and output.read_bytes() == done


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


def test_a_shard_checkpoint_hashes_up_to_its_last_line_though_the_reading_went_further(store, tmp_path):
    """A shard's last batch is written after the lines of other shards behind it are read: its checkpoint is
    the digest of the input up to the shard's last line, which a resume from a grown input compares."""
    scorer = store.get("length")
    lines = encoded([dict(GOOD[i % 3], id=i) for i in range(7)])
    source = write_lines(tmp_path / "in.jsonl", lines)
    shard = bulk.shard_output(tmp_path / "s-{index}.jsonl", 1, 3)
    with open(source, "rb") as handle:
        bulk.run(scorer, handle, shard, batch_size=10, shard_index=1, shard_count=3)
    checkpoint = json.loads(Path(f"{shard}.input.json").read_text())
    assert checkpoint["line"] == 5
    assert checkpoint["sha256"] == hashlib.sha256(b"".join(line + b"\n" for line in lines[:5])).hexdigest()


def test_a_resume_that_read_ahead_to_its_checkpoint_writes_the_inputs_digest(store, tmp_path):
    """After an output cut by hand is checked by reading ahead, the input is hashed again from its top: the
    next checkpoint is the input's digest, so that a later resume of the same input goes on."""
    scorer = store.get("length")
    source = write_lines(tmp_path / "in.jsonl", encoded([dict(GOOD[i % 3], id=i) for i in range(6)]))
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        bulk.run(scorer, handle, output, batch_size=4)
    output.write_bytes(b"".join(output.read_bytes().splitlines(keepends=True)[:2]))
    with open(source, "rb") as handle:
        counts = bulk.run(scorer, handle, output, batch_size=4)
    assert counts.resumed_after == 2 and counts.scored == 4
    assert json.loads(Path(f"{output}.input.json").read_text())["sha256"] == hashlib.sha256(
        source.read_bytes()).hexdigest()


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


def test_unparsable_numbers_in_an_output_or_its_checkpoint_are_refused_or_skipped(store, tmp_path, caplog):
    scorer = store.get("length")
    source = write_lines(tmp_path / "in.jsonl", encoded(GOOD))
    output = tmp_path / "out.jsonl"
    for line in ("Infinity", '"2"', "2.9", "true", "0"):  # int() took "2", 2.9 and true for line numbers
        output.write_text(f'{{"line": {line}, "model": "length", "version": "{scorer.version}"}}\n', encoding="utf-8")
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


@pytest.mark.parametrize("error", [errno.EIO, errno.ESTALE, errno.EACCES])
def test_a_checkpoint_on_a_volume_that_blinked_stops_the_run_for_a_retry(tmp_path, monkeypatch, caplog, error):
    """Resuming unchecked is for a checkpoint that is lost or unreadable for good (EACCES): a read that a
    retry may pass (EIO, ESTALE) is a transient set-up error (exit 1), so the retry checks the input."""
    from service.bulk.checkpoint import InputCheckpoint
    from service.bulk.errors import TransientSetUpError

    checkpoint = InputCheckpoint(tmp_path / "out.jsonl")
    checkpoint.write(3, "ab" * 32, "in.jsonl")
    real = Path.read_text

    def failing(self, *args, **kwargs):
        if self == checkpoint.path:
            raise OSError(error, os.strerror(error))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_text", failing)
    if error == errno.EACCES:
        with caplog.at_level(logging.WARNING, logger="service.bulk"):
            assert checkpoint.read() is None
        assert "cannot be checked" in caplog.text
    else:
        with pytest.raises(TransientSetUpError, match="cannot read .*input.json"):
            checkpoint.read()


def test_an_oversized_line_is_hashed_whole_so_a_resume_across_it_checks_the_input(store, tmp_path):
    """The checkpoint's digest is of the input's bytes, not of what the limit let through: a run
    with another --max-line-bytes resumes the same output, and an edit inside the long line is seen."""
    scorer = store.get("length")
    long_item = dict(GOOD[0], response="z" * 3000)
    items = encoded([GOOD[0], long_item, GOOD[1], GOOD[2]])
    source = write_lines(tmp_path / "in.jsonl", items[:3])
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        bulk.run(scorer, handle, output, batch_size=1, max_line_bytes=300)
    digest = json.loads(Path(f"{output}.input.json").read_text())["sha256"]
    assert digest == hashlib.sha256(source.read_bytes()).hexdigest()

    edited = write_lines(tmp_path / "edited.jsonl", [items[0], items[1].replace(b"zzz", b"zzy", 1), items[2]])
    with open(edited, "rb") as handle, pytest.raises(bulk.BulkError, match="differ"):
        bulk.run(scorer, handle, output, batch_size=1, max_line_bytes=300)
    grown = write_lines(tmp_path / "grown.jsonl", items)
    with open(grown, "rb") as handle:
        counts = bulk.run(scorer, handle, output, batch_size=1, max_line_bytes=10_000)
    assert counts.resumed_after == 3 and counts.scored == 1
    assert [r.get("error", {}).get("code") for r in read_output(output)] == [None, "too_large", None, None]


def test_a_checkpoint_that_cannot_be_written_is_a_set_up_error_before_any_line(store, tmp_path):
    """Where the output could be appended to but its checkpoint not replaced (a folder that is not
    writable), each retry appended one batch, then failed with exit 1, 'a rerun resumes', for ever."""
    source = write_lines(tmp_path / "in.jsonl", encoded(GOOD))
    output = tmp_path / "out.jsonl"
    Path(f"{output}.input.json.tmp").mkdir()  # cannot be opened for writing, root or not
    with open(source, "rb") as handle, pytest.raises(bulk.BulkError, match="cannot write .*input.json beside"):
        bulk.run(store.get("length"), handle, output)
    assert not output.exists() or output.read_bytes() == b""


def test_a_checkpoint_past_an_output_cut_by_hand_still_checks_a_file_input(store, tmp_path, caplog):
    """An output cut back below its checkpoint (to score its tail again) was resumed from any input with a
    warning: the lines past the output would be scored before they could be compared. A file is read
    ahead to the checkpoint first; a stream, which cannot be read twice, is still resumed with the warning."""
    import io

    scorer = store.get("length")
    items = [dict(GOOD[i % 3], id=i) for i in range(10)]
    source = write_lines(tmp_path / "in.jsonl", encoded(items))
    output = tmp_path / "out.jsonl"
    with open(source, "rb") as handle:
        bulk.run(scorer, handle, output, batch_size=4)
    whole = output.read_bytes()
    cut = b"".join(whole.splitlines(keepends=True)[:3])
    output.write_bytes(cut)
    edited = [dict(item) for item in items]
    edited[6]["response"] = "another reply altogether"  # past the cut, within the checkpoint
    other = write_lines(tmp_path / "other.jsonl", encoded(edited))
    with open(other, "rb") as handle, pytest.raises(bulk.BulkError, match="first 10 lines of .*differ"):
        bulk.run(scorer, handle, output, batch_size=4)
    short = write_lines(tmp_path / "short.jsonl", encoded(items[:8]))
    with open(short, "rb") as handle, pytest.raises(bulk.BulkError, match="has 8 lines but .* scored from 10"):
        bulk.run(scorer, handle, output, batch_size=4)
    assert output.read_bytes() == cut
    with open(source, "rb") as handle:  # the same input: its tail is scored again
        counts = bulk.run(scorer, handle, output, batch_size=4)
    assert counts.resumed_after == 3 and counts.scored == 7 and output.read_bytes() == whole
    output.write_bytes(cut)

    class Stream(io.BufferedReader):  # a pipe's: read once
        def seekable(self) -> bool:
            return False

    with caplog.at_level(logging.WARNING, logger="service.bulk"):
        counts = bulk.run(scorer, Stream(io.BytesIO(other.read_bytes())), output, batch_size=4)
    assert counts.scored == 7 and "a stream cannot be read twice" in caplog.text
