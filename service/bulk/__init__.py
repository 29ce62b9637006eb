"""`python -m service.bulk`: score a JSONL corpus offline with one model; streaming, resumable, shardable.

Why a separate command and not a loop over POST /score: a corpus of millions of replies is
scored fastest in-process (no HTTP, no JSON round trip, no request limits), and a Kubernetes
indexed Job (k8s/bulk/) can split it over pods with `JOB_COMPLETION_INDEX`.

Contract of the output: exactly one line per input line of this shard, in input order,
`{"line": n, "model", "version", "score", "details"?, "id"?}` or, for a line that cannot be
scored, `{"line": n, "model", "version", "error": {"code", "message"}}` (code `bad_line`, `too_large`: a
line over --max-line-bytes, streamed past and never held whole, or `scoring_failed`); nothing is dropped, and
every line is strict JSON (no NaN or infinity). Each batch is appended and fsync'd before the
next is read, so after a kill (OOM, eviction, node loss) a restart truncates a torn last line,
skips every line already in the output (checking that the input is the one it was scored from:
InputCheckpoint) and goes on: no line is written twice. One run writes an
output at a time: it holds a lock on `<output>.lock` from before it reads the resume point to its
end (see output_lock), and a second run refuses, or waits `--lock-wait` seconds first.

Exit status (k8s/bulk/job.yaml's podFailurePolicy acts on it):
  0    done; lines that cannot be scored are in the output as error records
  1    failed otherwise: an I/O error once scoring started (a full or lost volume), a transient
       one during set-up (EIO, ESTALE, ETIMEDOUT: TransientSetUpError) or an unexpected error;
       the Job retries this shard alone, and the retry resumes
  2    set-up error, before any line was scored: bad arguments or environment, unknown model,
       bad --options, unreadable input, an output that cannot be created, is not this run's to
       extend (other model, version, shard split or options; not a bulk output; lines written
       twice), is held by another run, or was scored from another input (see InputCheckpoint);
       retrying the same command cannot help
  143  stopped by SIGTERM (130: Ctrl-C): reading ends, the lines in hand are written; a rerun resumes
"""

from service.bulk.cli import main
from service.bulk.errors import BulkError, TransientSetUpError
from service.bulk.output import output_lock, resume_point, shard_output
from service.bulk.records import encode_records, parse_line, score_batch
from service.bulk.runner import Counts, run

__all__ = ["BulkError", "Counts", "TransientSetUpError", "encode_records", "main", "output_lock", "parse_line",
           "resume_point", "run", "score_batch", "shard_output"]
