"""One run: read this shard's lines, score them in batches, append and fsync, keep the checkpoint."""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from service.bulk.checkpoint import HashedLines, InputCheckpoint, OversizedLine
from service.bulk.errors import BulkError, set_up_error
from service.bulk.output import append_whole, check_complete, output_lock, regular_output, resume_point
from service.bulk.records import LineChecks, encode_records, run_fields, score_batch
from service.bulk.signals import Stop
from service.scorers.base import Scorer

log = logging.getLogger("service.bulk")  # one logger for the whole command: its records name it


@dataclass
class Counts:
    """What one run did; printed as JSON at the end."""

    resumed_after: int = 0  # lines of this shard already in the output when the run started
    scored: int = 0
    errors: int = 0
    seconds: float = 0.0
    load_seconds: float = 0.0
    by_code: dict[str, int] = field(default_factory=dict)
    trained: int = 0  # lines scored that are the model's training items
    warnings: dict[str, int] = field(default_factory=dict)  # lines scored whose reply was warned, by code

    @property
    def written(self) -> int:
        return self.scored + self.errors


def run(scorer: Scorer, source: BinaryIO, output: Path, *, options: dict[str, Any] | None = None,
        batch_size: int = 256, shard_index: int = 0, shard_count: int = 1,
        progress_every: float | None = None, lock_wait: float = 0.0, max_line_bytes: int | None = None,
        checks: LineChecks | None = None) -> Counts:
    """Score this shard of `source` into `output` (appending, resuming); returns the counts.

    Every set-up problem raises BulkError (or TransientSetUpError, for an I/O error a retry may
    not meet) before a line is scored, so that whatever is raised later (an I/O error) marks a
    failure a retry can get past. Progress is logged every
    `progress_every` seconds when given. A line longer than `max_line_bytes` is a `too_large`
    error record, never read into memory whole. `checks`: what each record says of its line beside the
    score (records.LineChecks).
    """
    try:
        options = scorer.resolve_options(options)
    except ValueError as exc:
        raise BulkError(f"bad --options: {exc}") from None
    fields = run_fields(scorer, options, shard_index, shard_count)
    counts = Counts()
    # The lock and checkpoint belong to the file, not to the path that names it: a symlink (or a
    # path through one) to an output another run is writing must meet that run's lock.
    output = regular_output(output, "to append to")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise set_up_error(f"cannot create the folder of {output}", exc) from None
    with output_lock(output, lock_wait) as locked:
        if not locked:
            return counts
        sink, after, counts.resumed_after = _open_output(output, scorer, fields, shard_index, shard_count)
        checkpoint = InputCheckpoint(output)
        try:
            checkpoint.check_writable()
        except OSError as exc:
            sink.close()
            raise set_up_error(f"cannot write {checkpoint.path} beside the output", exc) from None
        expected = checkpoint.read() if after else None
        if after and expected is None:
            log.warning("%s has no input checkpoint (%s); resuming without checking that the input is the one "
                        "it was scored from", output, checkpoint.path.name)
        reader = HashedLines(source, output, after, expected, max_line_bytes)
        started = last_report = time.perf_counter()
        try:
            total_bytes = os.fstat(source.fileno()).st_size
        except (AttributeError, OSError):  # an in-memory stream (io.UnsupportedOperation is an OSError)
            total_bytes = 0
        with sink:
            batch: list[tuple[int, bytes | OversizedLine]] = []

            def flush() -> None:
                records = score_batch(batch, scorer, options, fields, checks=checks)
                append_whole(sink, encode_records(records))
                done = reader.written_digest()
                if done is not None:
                    checkpoint.write(*done, reader.name)
                _count(counts, records)
                batch.clear()

            for number, raw in reader.lines(shard_index, shard_count):
                batch.append((number, raw))
                if len(batch) >= batch_size:
                    flush()
                    now = time.perf_counter()
                    if progress_every is not None and now - last_report >= progress_every:
                        last_report = now
                        _report(counts, now - started, source, total_bytes)
                    if Stop.requested:
                        break
            if batch:  # the end of the input, or a stop that ended a read: the lines in hand are written
                flush()
        counts.seconds = time.perf_counter() - started
    return counts


def _open_output(output: Path, scorer: Scorer, fields: dict[str, Any], shard_index: int,
                 shard_count: int) -> tuple[BinaryIO, int, int]:
    """(append handle, last input line done, records already written) of an output checked for
    resuming. Called under output_lock: nobody else may write between the check and the first batch."""
    try:
        after, written = resume_point(output, scorer.name, scorer.version, fields)
        check_complete(output, after, written, shard_index, shard_count)
        sink = open(output, "ab", buffering=0)  # noqa: SIM115 - closed by run(); unbuffered: see append_whole
    except OSError as exc:
        raise set_up_error(f"cannot read or open {output}", exc) from None
    if after:
        log.info("%s: resuming after input line %d (%d lines already written)", output, after, written)
    return sink, after, written


def _count(counts: Counts, records: list[dict[str, Any]]) -> None:
    for r in records:
        if "error" in r:
            counts.errors += 1
            code = r["error"]["code"]
            counts.by_code[code] = counts.by_code.get(code, 0) + 1
            log.warning("line %d skipped: %s", r["line"], r["error"]["message"])
        else:
            counts.scored += 1
            counts.trained += bool(r.get("trained"))
            if "warning" in r:
                counts.warnings[r["warning"]["code"]] = counts.warnings.get(r["warning"]["code"], 0) + 1


def _report(counts: Counts, seconds: float, source: BinaryIO, total_bytes: int) -> None:
    """One progress record: fields for the log pipeline, the same in words for a person."""
    fields: dict[str, Any] = {"lines_written": counts.written, "errors": counts.errors,
                              "lines_per_second": round(counts.written / seconds, 1) if seconds > 0 else 0.0}
    done = ""
    if total_bytes:
        try:
            fields["percent"] = round(100.0 * source.tell() / total_bytes, 1)
            done = f" ({fields['percent']:.1f}% of the input)"
        except OSError:
            pass
    log.info("%d lines written, %d errors, %.0f lines/s%s", counts.written, counts.errors,
             fields["lines_per_second"], done, extra=fields)
