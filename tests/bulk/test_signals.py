"""`service.bulk.signals`: SIGTERM or Ctrl-C ends reading, writes the lines in hand and exits 143 / 130, in time for the Job's grace period."""
from __future__ import annotations

import contextlib
import json
import os
import signal

import pytest

from service.config import REPO_ROOT
from tests.bulk.conftest import GOOD, encoded, read_output, start_holder

REPO_K8S_BULK = REPO_ROOT / "k8s" / "bulk"


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


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stop_ends_a_read_blocked_on_a_pipe_and_writes_the_lines_in_hand(store_root, tmp_path, signum, status):
    """What Kubernetes sends on eviction, or Ctrl-C: the read waiting on the input ends, the lines
    already read are scored and written, then exit 143 / 130. The handler once only set a flag, so a
    read blocked on a paused producer went on waiting until the pipe closed, and the lines in hand
    were then dropped."""
    lines = encoded([dict(GOOD[i % 3], id=i) for i in range(16)])
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    output = tmp_path / "out.jsonl"
    # The first batch is on disk before its stop check: signal only once the tool waits for line 7.
    proc, writer = start_holder(store_root, fifo, output, lines, 6, 4)
    try:
        proc.send_signal(signum)  # lines 5 and 6 are in hand; no more input comes while the writer is open
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        with contextlib.suppress(BrokenPipeError):
            writer.close()
    assert proc.returncode == status, stderr.decode()
    assert [r["line"] for r in read_output(output)] == list(range(1, 7))
    summary = json.loads(stdout.decode().strip().splitlines()[-1])
    assert summary["stopped_early"] is True and summary["scored"] == 6
