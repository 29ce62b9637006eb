"""Prometheus metrics, correct with several gunicorn workers.

With PROMETHEUS_MULTIPROC_DIR set (gunicorn.conf.py sets it before any worker imports this
module) every worker writes its samples to that folder and /metrics aggregates them, so a
scrape sees all workers, not whichever one answered.
"""
from __future__ import annotations

import os

from prometheus_client import (CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Counter, Histogram,
                               generate_latest, multiprocess)

# The `method` label's values: a client can send any token as the method (a 405 answers it), and
# each distinct label value is a series kept for the life of the process, so the rest are "other".
METHODS = frozenset({"GET", "POST", "HEAD", "OPTIONS", "PUT", "DELETE", "PATCH"})

REQUESTS = Counter("dialscore_requests_total", "HTTP requests by endpoint, method and status.",
                   ["endpoint", "method", "status"])
LATENCY = Histogram("dialscore_request_seconds", "Request latency by endpoint and model.", ["endpoint", "model"],
                    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
ERRORS = Counter("dialscore_errors_total", "Error responses by contract code.", ["code"])
ITEMS = Counter("dialscore_items_scored_total", "Items scored by model.", ["model"])
BATCH = Histogram("dialscore_batch_items", "Items per scoring request by model.", ["model"],
                  buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024))
MODEL_SECONDS = Histogram("dialscore_model_seconds", "Time inside a model's score() by model.", ["model"],
                          buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))


def method_label(method: str) -> str:
    """`method` as a label value: one of METHODS, or "other" (never a client-chosen string)."""
    return method if method in METHODS else "other"


def exposition() -> tuple[bytes, str]:
    """The text format of every worker's metrics (or this process's, outside gunicorn)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST
