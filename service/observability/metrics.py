"""Prometheus metrics, correct with several gunicorn workers.

With PROMETHEUS_MULTIPROC_DIR set (server/gunicorn.conf.py sets it before any worker imports this
module) every worker writes its samples to that folder and /metrics sums them, so a scrape sees
every worker. fold_dead_worker keeps the folder from growing as workers are replaced.
"""
from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from prometheus_client import (CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Counter, Histogram,
                               generate_latest, multiprocess)
from prometheus_client.mmap_dict import MmapedDict

# The `method` label's values: a client can send any token as the method (a 405 answers it), and
# each distinct label value is a series kept for the life of the process, so the rest are "other".
METHODS = frozenset({"GET", "POST", "HEAD", "OPTIONS", "PUT", "DELETE", "PATCH"})

REQUESTS = Counter("dialscore_requests_total", "HTTP requests by endpoint, method and status.",
                   ["endpoint", "method", "status"])
LATENCY = Histogram("dialscore_request_seconds", "Request latency by endpoint and model.", ["endpoint", "model"],
                    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
ERRORS = Counter("dialscore_errors_total", "Error responses by contract code.", ["code"])
ITEMS = Counter("dialscore_items_scored_total", "Items scored by model.", ["model"])
SKIPPED = Counter("dialscore_items_skipped_total",
                  "Invalid items (/score) and candidates (/rerank) left out under on_invalid skip.", ["endpoint"])
WARNINGS = Counter("dialscore_warnings_total", "Replies (/score) and candidates (/rerank) warned about, by endpoint "
                   "and code (not_english, no_words, empty): text the models were not made to read.",
                   ["endpoint", "code"])
BATCH = Histogram("dialscore_batch_items", "Items per scoring request by model.", ["model"],
                  buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024))
# A worker adds 1 as it loads each sentence encoder, by where and how (the provider, the file's precision,
# OpenVINO's compute precision or "-" off OpenVINO). Folded across recycles like every counter, it counts the
# loads since the server started, not the workers serving now (2 workers recycled 6 times: 8); those are
# in GET /models. A rise in another provider's series is a load that fell back.
ENCODER_LOADS = Counter("dialscore_encoder_loads_total", "Sentence encoder loads since the server started, every "
                        "worker's (replaced ones included), by component, execution provider and precision.",
                        ["component", "provider", "precision", "compute"])
MODEL_SECONDS = Histogram("dialscore_model_seconds", "Time inside a model's score() by model.", ["model"],
                          buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))

# Admission (server/admission.py): what a worker refused before computing it, how long admitted work
# waited for a thread, and work that finished after its deadline (started in time, but ran past it).
REFUSED = Counter("dialscore_refused_total", "Requests answered 503 before any work, by reason (overloaded, "
                  "deadline_exceeded, shutting_down).", ["reason"])
QUEUE_WAIT = Histogram("dialscore_queue_wait_seconds", "Time an admitted request waited for a thread.",
                       buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
FINISHED_LATE = Counter("dialscore_finished_late_total", "Requests whose answer was written after their deadline.")


# The latency histogram's `model` label of the request in hand: set by the data plane once it has
# read the store, reset by the app before each request, read when the answer is recorded.
_REQUEST_MODEL: ContextVar[str] = ContextVar("dialscore_request_model", default="")


def label_request_model(name: str) -> None:
    _REQUEST_MODEL.set(name)


def request_model() -> str:
    return _REQUEST_MODEL.get()


def method_label(method: str) -> str:
    """`method` as a label value: one of METHODS, or "other" (never a client-chosen string)."""
    return method if method in METHODS else "other"


# Only counters and histograms are defined above: their samples add up across files, so a dead
# worker's can be folded into a running total. A gauge would need its own rule (and a live one is
# deleted by mark_process_dead); a test checks that no other type is defined.
FOLDED_TYPES = ("counter", "histogram")
ARCHIVE_PID = "archive"  # "counter_archive.db": prometheus_client reads the type before the first "_"
LOCK_FILE = ".fold.lock"  # not *.db, so the collector does not read it


@contextmanager
def _folder_lock(folder: str, exclusive: bool) -> Iterator[None]:
    with open(os.path.join(folder, LOCK_FILE), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def fold_dead_worker(pid: int, folder: str) -> int:
    """Add an exited worker's counter and histogram samples to the archive files; delete its files.

    A worker's files hold its share of every counter, so prometheus_client keeps them after it exits
    (deleting them would make the counters go back); with workers recycled all day each scrape would
    read ever more files. Folded here (gunicorn's master calls this when a worker exits), the folder
    holds two files per live worker plus two. The lock keeps a scrape from reading halfway through a
    fold. Returns how many files were folded. Only for a process that has exited: a live one would go
    on writing to a deleted file.
    """
    folded = 0
    with _folder_lock(folder, exclusive=True):
        for kind in FOLDED_TYPES:
            dead = Path(folder) / f"{kind}_{pid}.db"
            if not dead.exists():
                continue
            archive = MmapedDict(str(Path(folder) / f"{kind}_{ARCHIVE_PID}.db"))
            try:
                for key, value, _timestamp, _pos in MmapedDict.read_all_values_from_file(str(dead)):
                    total, _ = archive.read_value(key)
                    archive.write_value(key, total + value, 0.0)
            finally:
                archive.close()
            dead.unlink()
            folded += 1
    return folded


def exposition() -> tuple[bytes, str]:
    """The text format of every worker's metrics (or this process's, outside gunicorn)."""
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if folder:
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry, path=folder)
        with _folder_lock(folder, exclusive=False):
            return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
