"""`python -m service.bulk` (service.bulk.cli): arguments, set-up errors, JSON stderr, exit status, runtime settings."""
from __future__ import annotations

import json
import resource
import subprocess

from tests.bulk.conftest import GOOD, _cli, _env, encoded, json_lines, read_output, write_lines


def test_cli_rejects_an_unknown_model_and_a_bad_shard(store_root, tmp_path):
    source = write_lines(tmp_path / "in.jsonl", encoded(GOOD))
    unknown = subprocess.run(_cli("--model", "no-such-model", "--input", str(source), "--output",
                                  str(tmp_path / "o.jsonl")), env=_env(store_root), capture_output=True, timeout=120)
    assert unknown.returncode == 2 and b"no-such-model" in unknown.stderr
    shard = subprocess.run(_cli("--model", "length", "--input", str(source), "--output", str(tmp_path / "o.jsonl"),
                                "--shard-index", "3", "--shard-count", "2"), env=_env(store_root), capture_output=True,
                           timeout=120)
    assert shard.returncode == 2 and b"--shard-index 3" in shard.stderr
    none = subprocess.run(_cli("--model", "length", "--input", str(source), "--output", str(tmp_path / "o.jsonl"),
                               "--shard-count", "0"), env=_env(store_root), capture_output=True, timeout=120)
    assert none.returncode == 2 and b"--shard-count (or $DIALSCORE_SHARD_COUNT) must be at least 1" in none.stderr
    env = {**_env(store_root), "JOB_COMPLETION_INDEX": "abc"}
    bad_env = subprocess.run(_cli("--model", "length", "--input", str(source), "--output", str(tmp_path / "o.jsonl")),
                             env=env, capture_output=True, timeout=120)
    assert bad_env.returncode == 2 and b"JOB_COMPLETION_INDEX" in bad_env.stderr and b"Traceback" not in bad_env.stderr


def test_options_nested_past_a_lines_depth_are_refused_on_every_python():
    """--options is held to a line's depth (32), not to the parser's recursion limit: 5,000 levels were
    'nested too deeply' on 3.11 and 'Unknown option' on 3.13, and 40 were taken on both."""
    import argparse

    import pytest

    from service.bulk.cli import json_object

    assert json_object('{"signals": true, "x": [[1]]}') == {"signals": True, "x": [[1]]}
    for levels in (40, 5000):
        for text in ('{"x": ' + "[" * levels + "]" * levels + "}", '{"x": ' + "[" * levels):
            with pytest.raises(argparse.ArgumentTypeError, match="nested too deeply"):
                json_object(text)
    for text in ('{"x": NaN}', "[1]", '{"x": 1, "x": 2}', '{"x": "\\ud800"}', "{\udcff}"):
        with pytest.raises(argparse.ArgumentTypeError):
            json_object(text)


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
        "--max-line-bytes (default: $DIALSCORE_MAX_BODY_BYTES) is 0": ["--model", "length", "--input", str(source),
                                                                      "--max-line-bytes", "0"],
        # readline() overflowed on it, after set-up: exit 1, 'a rerun resumes', for ever
        "is 9223372036854775807; it must be 1 to": ["--model", "length", "--input", str(source),
                                                    "--max-line-bytes", str(2 ** 63 - 1)],
        "--progress-every must be": ["--model", "length", "--input", str(source), "--progress-every", "nan"],
        "--threads must be": ["--model", "length", "--input", str(source), "--threads", "-5"],
        "--threads must be 0 (every core) to 256": ["--model", "length", "--input", str(source), "--threads", "3000"],
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
    summary = json.loads(done.stdout)  # the summary stays on stdout
    assert summary["scored"] == 8 and summary["trained"] == 0 and summary["warnings_by_code"] == {}


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


def test_the_runtime_settings_of_the_service_reach_the_bulk_scorer(store_root, tmp_path, monkeypatch):
    """DIALSCORE_BATCH_SIZE (and every runtime variable the server honours) holds for bulk too: bulk once
    built its own RuntimeSettings and scored with 64-text batches whatever the variable said."""
    from service.bulk import cli

    monkeypatch.setenv("DIALSCORE_BATCH_SIZE", "8")
    monkeypatch.setenv("DIALSCORE_PROVIDERS", "CPUExecutionProvider")
    monkeypatch.setenv("DIALSCORE_CUDA_OPTIONS", "device_id=0")
    args = cli._parse_args(["--model", "length", "--input", str(tmp_path / "in.jsonl"), "--output",
                            str(tmp_path / "out.jsonl"), "--model-store", str(store_root), "--threads", "1"])
    [scorer] = cli.load_scorers(args.model_store, [args.model], args.settings, args.threads)
    settings = scorer.runtime.settings
    assert (settings.batch_size, settings.providers, settings.cuda_options) == (8, ("CPUExecutionProvider",),
                                                                                ("device_id=0",))
    assert (settings.intra_op_threads, settings.workers) == (1, 1)  # bulk's own: one process, --threads
    assert args.max_line_bytes == 1 << 20  # a line may be as large as a request body
    monkeypatch.setenv("DIALSCORE_MAX_BODY_BYTES", "4096")
    assert cli._parse_args(["--model", "length", "--input", "i", "--output", "o"]).max_line_bytes == 4096


def test_cli_marks_and_counts_training_items_and_unreadable_replies(store_root, tmp_path):
    """The command reads the model's shipped keys and DIALSCORE_NOT_ENGLISH_CONFIDENCE, as `dialscore score` does."""
    from tests.conftest import copy_store, with_trained_items

    root = copy_store(tmp_path / "store", ("length",))
    with_trained_items(root, "length", [(GOOD[0]["context"], GOOD[0]["response"])])
    source = write_lines(tmp_path / "in.jsonl", encoded([GOOD[0], GOOD[1], {**GOOD[2], "response": "  "}]))
    done = subprocess.run(_cli("--model", "length", "--input", str(source), "--output", str(tmp_path / "o.jsonl")),
                          env=_env(root), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    summary = json.loads(done.stdout)
    assert summary["trained"] == 1 and summary["warnings_by_code"] == {"empty": 1}
    records = read_output(tmp_path / "o.jsonl")
    assert [r.get("trained") for r in records] == [True, None, None] and records[2]["warning"]["code"] == "empty"
