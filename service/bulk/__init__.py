"""`python -m service.bulk`: score a JSONL corpus offline with one model; streaming, resumable, shardable.

In-process rather than a loop over POST /score: no HTTP, no JSON round trip, no request limits, and
a Kubernetes indexed Job (k8s/bulk/) splits a corpus over pods by `JOB_COMPLETION_INDEX`. The output
(one record per input line) is described in records.py, the exit statuses in cli.main.
"""

from service.bulk.cli import main
from service.bulk.errors import BulkError, TransientSetUpError
from service.bulk.output import output_lock, resume_point, shard_output
from service.bulk.records import encode_records, parse_line, score_batch
from service.bulk.runner import Counts, run

__all__ = ["BulkError", "Counts", "TransientSetUpError", "encode_records", "main", "output_lock", "parse_line",
           "resume_point", "run", "score_batch", "shard_output"]
