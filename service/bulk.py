"""`python -m service.bulk`: score a JSONL corpus offline with one model; streaming, resumable, shardable.

Why a separate command and not a loop over POST /score: a corpus of millions of replies is
scored fastest in-process (no HTTP, no JSON round trip, no request limits), and a Kubernetes
indexed Job (k8s/bulk/) can split it over pods with `JOB_COMPLETION_INDEX`.

Contract of the output: exactly one line per input line of this shard, in input order,
`{"line": n, "model", "version", "score", "details"?, "id"?}` or, for a line that cannot be
scored, `{"line": n, "model", "version", "error": {"code", "message"}}`; nothing is dropped, and
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
  143  stopped by SIGTERM (130: Ctrl-C) after finishing the batch in hand; a rerun resumes
"""
from __future__ import annotations

import argparse
import errno
import fcntl
import hashlib
import json
import logging
import os
import signal
import socket
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO, Iterator, NoReturn

from marshmallow import EXCLUDE, ValidationError

from service.config import load_settings
from service.json_body import NotFinite, RepeatedKey, find_problem, loads
from service.runtime import Runtime, RuntimeSettings
from service.schemas import DIALOGUE, ITEM, flatten_messages
from service.scorers.base import Dialogue, EncodeCache, Item, Scorer, Turn
from service.store import ModelStore

log = logging.getLogger("service.bulk")


class BulkError(Exception):
    """A problem with the run's set-up, found before any line is scored (unknown model, unreadable
    input, foreign or busy output): exit 2, which fails the whole Job, since a retry cannot help."""


class TransientSetUpError(Exception):
    """An I/O error during set-up that a retry may not meet (EIO, ESTALE, ETIMEDOUT: a network
    volume that blinked, a server that restarted): exit 1, which the Job retries, rather than 2,
    which would fail every shard of it for a moment's outage."""


TRANSIENT_ERRNOS = frozenset({errno.EIO, errno.ESTALE, errno.ETIMEDOUT, errno.EINTR, errno.ENETDOWN,
                              errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ECONNRESET, errno.ECONNABORTED})


def set_up_error(message: str, exc: OSError) -> Exception:
    """The exception for an OSError met during set-up: transient (exit 1) or not (exit 2)."""
    text = f"{message}: {exc.strerror or exc}"
    return TransientSetUpError(text) if exc.errno in TRANSIENT_ERRNOS else BulkError(text)


class BadLine(ValueError):
    """One input line that cannot be scored; carries its `id` when that much could be read."""

    def __init__(self, message: str, item_id: Any = None) -> None:
        super().__init__(message)
        self.item_id = item_id


MAX_LINE_DEPTH = 32  # JSON nesting of one item (the item shapes need 4)


@dataclass
class Counts:
    """What one run did; printed as JSON at the end."""

    resumed_after: int = 0  # lines of this shard already in the output when the run started
    scored: int = 0
    errors: int = 0
    seconds: float = 0.0
    load_seconds: float = 0.0
    by_code: dict[str, int] = field(default_factory=dict)

    @property
    def written(self) -> int:
        return self.scored + self.errors


# --- input -----------------------------------------------------------------------------------------
def parse_line(raw: bytes, scorer: Scorer) -> tuple[Any, Any]:
    """(item, id) for one input line, or raise ValueError with a message a person can act on.

    Items use the HTTP contract's shapes (service/schemas.py); unknown keys are ignored so that a
    corpus may carry its own fields (ratings, systems) beside the item, and `id` is echoed back.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not text.strip():
        raise ValueError("empty line")
    try:
        obj = loads(text, finite=True)  # `id` is copied to the output, which must stay JSON
    except RepeatedKey as exc:
        raise ValueError(f"ambiguous JSON: {exc}") from None
    except NotFinite as exc:
        raise ValueError(f"not JSON ({exc})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:  # the parser's own limit, far past MAX_LINE_DEPTH: one bad line, not a failed run
        raise ValueError(f"nested deeper than {MAX_LINE_DEPTH} levels") from None
    if not isinstance(obj, dict):
        raise ValueError(f"a line must hold a JSON object, not {type(obj).__name__}")
    problem = find_problem(obj, raw, MAX_LINE_DEPTH)  # lone surrogates would break writing the output
    if problem is not None:
        raise ValueError(f"{problem[0]}: {problem[1]}")
    item_id = obj.get("id")
    try:
        if scorer.kind == "dialogue":
            data = DIALOGUE.load(obj, unknown=EXCLUDE)
            return Dialogue([Turn(t["speaker"], t["text"]) for t in data["turns"]]), item_id
        data = ITEM.load(obj, unknown=EXCLUDE)
    except ValidationError as exc:
        fields = flatten_messages(exc.messages)
        raise BadLine("; ".join(f"{k}: {v}" for k, v in fields.items()), item_id) from None
    if "reference" in scorer.manifest.requires and data.get("reference") is None:
        raise BadLine(f"reference: {scorer.name} is a referenced model and needs a reference.", item_id)
    return Item(list(data["context"]), data["response"], data.get("reference")), item_id


class InputCheckpoint:
    """`<output>.input.json`: the SHA-256 of the input's first k lines, k the output's last line.

    Why: a resume skips every input line up to the output's last record without reading what
    they were scored from, so rerunning with another file (a regenerated corpus, the wrong
    shard's input, lines re-sorted or cut) would silently extend the output with records for
    other text under the same line numbers. Records cannot carry a digest of their own line
    without growing every line; one small file beside the lock says what was read. It is
    replaced after every fsync'd batch (written to a temporary file, fsync'd, renamed), so it can
    lag the output after a kill but never runs ahead of it. A resume hashes the input as it
    skips and stops with a set-up error (exit 2, nothing scored) where it differs. An input that
    only grew at the end still matches. An output without a readable checkpoint (written before
    it existed, or the file was lost) is resumed unchecked, with a warning, rather than blocking
    every retry of a Job.
    """

    def __init__(self, output: Path) -> None:
        self.path = Path(f"{output}.input.json")

    def read(self) -> tuple[int, str, str] | None:
        """(line, sha256 hex, input name) as last written, or None (absent or unreadable)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return int(data["line"]), str(data["sha256"]), str(data.get("input", "?"))
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno in TRANSIENT_ERRNOS:  # unchecked is for a lost file, not a volume that blinked
                raise set_up_error(f"cannot read {self.path}", exc) from None
            log.warning("%s is unreadable (%s); the input cannot be checked against the output", self.path, exc)
            return None
        except (ValueError, KeyError, TypeError, OverflowError, RecursionError) as exc:
            log.warning("%s is unreadable (%s); the input cannot be checked against the output", self.path,
                        type(exc).__name__)
            return None

    def write(self, line: int, digest: str, input_name: str) -> None:
        temporary = Path(f"{self.path}.tmp")
        with open(temporary, "wb") as handle:
            handle.write(json.dumps({"line": line, "sha256": digest, "input": input_name}).encode("utf-8") + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.path)


class HashedLines:
    """The input's lines with a running SHA-256, checked against a checkpoint while skipping.

    `written` is (line, hash state) of the last line handed out, which is what the output holds
    once that line's batch is fsync'd; the state is copied at hand-out time because the iterator
    may read further (other shards' lines) before the last batch is written, and finished into a
    digest only when a batch is (`written_digest`), not for every line.
    """

    def __init__(self, source: BinaryIO, output: Path, after: int, expected: tuple[int, str, str] | None) -> None:
        self.source, self.output, self.after = source, output, after
        self.name = str(getattr(source, "name", "<stream>"))
        self.hash = hashlib.sha256()
        self.written: tuple[int, Any] | None = None
        self.expected = expected
        if expected is not None and expected[0] > after:
            # The checkpoint runs ahead of the output only if the output was cut by hand: the lines
            # it covers beyond `after` would be scored before they could be compared.
            log.warning("%s: its input checkpoint is at line %d, past the output's last line %d (the output "
                        "was cut?); the input is not checked", output, expected[0], after)
            self.expected = None

    def lines(self, index: int, count: int) -> Iterator[tuple[int, bytes]]:
        """(1-based line number, raw line) of shard `index` of `count`, skipping lines up to `after`."""
        number = 0
        for number, raw in enumerate(self.source, start=1):
            # Each line hashed with exactly one newline: a last line without one still matches
            # once more lines are appended after it.
            self.hash.update(raw if raw.endswith(b"\n") else raw + b"\n")
            if self.expected is not None and number == self.expected[0]:
                self._compare(number)
            if (number - 1) % count == index and number > self.after:
                self.written = (number, self.hash.copy())
                yield number, raw
        if number < self.after:
            raise BulkError(f"{self.name} has {number} lines but {self.output} already holds records up to line "
                            f"{self.after}: it is not the input this output was scored from; resume with that "
                            "input or use another --output")

    def written_digest(self) -> tuple[int, str] | None:
        """(line, SHA-256 hex) of the input up to the last line handed out, or None before any."""
        return None if self.written is None else (self.written[0], self.written[1].hexdigest())

    def _compare(self, number: int) -> None:
        line, digest, name = self.expected
        self.expected = None
        if self.hash.hexdigest() != digest:
            raise BulkError(f"the first {line} lines of {self.name} differ from those {self.output} was scored "
                            f"from ({name}, per {self.output}.input.json): it is not the same input; resume with "
                            "that input or use another --output")
        log.info("%s: its first %d lines are those the output was scored from", self.name, number)


# --- output and resumption ----------------------------------------------------------------------
def shard_output(output: Path, index: int, count: int) -> Path:
    """One output file per shard: `{index}`/`{count}` in the name are filled, else a suffix is added."""
    name = str(output)
    if "{index}" in name or "{count}" in name:
        return Path(name.replace("{index}", f"{index:05d}").replace("{count}", f"{count:05d}"))
    if count == 1:
        return output
    return Path(f"{name}.{index:05d}-of-{count:05d}")


@contextmanager
def output_lock(output: Path, wait: float = 0.0) -> Iterator[bool]:
    """Hold an exclusive lock on `<output>.lock` for the block; True once held, False if SIGTERM
    came while waiting. Held by another run after `wait` seconds: BulkError naming the holder.

    Why this lock: a POSIX record lock (fcntl) is what NFS (v4 natively, v3 through NLM), CephFS
    and SMB carry between machines, and it dies with its holder (the kernel drops it; after a lost
    node the NFS server does when the lease ends, about 90 s), so a SIGKILLed run never leaves a
    stale lock behind as an O_EXCL marker file would, which would block every retry. Why a sidecar
    file and not the output: it can be locked before the output exists; a POSIX lock is dropped as
    soon as its process closes *any* descriptor of the file, and the resume check and the writer
    open the output themselves; and SMB enforces byte-range locks, which would block our own
    writes. flock() is no better: Linux emulates it with these locks on NFS, and not every network
    filesystem has it. The file is never deleted: unlinking it while a second run waits on it
    would let a third lock a new file beside the second. The lock belongs to the process, so two
    runs inside one process are not kept apart (the command runs one).
    """
    path = Path(f"{output}.lock")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o664)
    except OSError as exc:
        raise set_up_error(f"cannot create the lock file {path}", exc) from None
    try:
        if not _acquire(fd, path, output, wait):
            yield False
            return
        holder = f"pid {os.getpid()} on {socket.gethostname()} since {datetime.now(timezone.utc):%Y-%m-%dT%H:%M:%SZ}"
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder.encode("utf-8") + b"\n", 0)  # for the message of a run that is refused
        yield True
    finally:
        os.close(fd)  # releases the lock


def _acquire(fd: int, path: Path, output: Path, wait: float) -> bool:
    """Take the lock, retrying for up to `wait` seconds; False if SIGTERM or Ctrl-C came first."""
    deadline = time.monotonic() + wait
    waiting = False
    while True:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno in TRANSIENT_ERRNOS:
                raise set_up_error(f"cannot lock {path}", exc) from None
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise BulkError(f"cannot lock {path} ({exc.strerror}): the volume must support POSIX file "
                                "locks, which keep two runs from writing one output") from None
        holder = os.pread(fd, 512, 0).decode("utf-8", "replace").strip() or "a process that just started"
        if time.monotonic() >= deadline:
            raise BulkError(f"{output} is being written by another run ({holder}; lock {path}); refusing to "
                            "write to it too: let that run end or stop it, then run this again (or give "
                            "--lock-wait SECONDS)")
        if not waiting:
            log.info("%s is being written by another run (%s); waiting up to %.0f s for it to end", output,
                     holder, wait, extra={"lock": str(path), "holder": holder})
            waiting = True
        if _Stop.requested:
            return False
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))


def shard_lines_upto(after: int, index: int, count: int) -> int:
    """How many of input lines 1..`after` belong to shard `index` of `count`."""
    return 0 if after <= index else (after - 1 - index) // count + 1


_RECORD_START = b'{"line": '


def resume_point(path: Path, model: str, version: str, fields: dict[str, Any] | None = None) -> tuple[int, int]:
    """(last input line already written, lines written) for an existing output; (0, 0) if none.

    A process killed mid-write can leave a torn last line: it is cut off here (it was never
    counted as done, so its item is scored again, once), but only once the file is known to be
    a bulk output, so a foreign file without a final newline is refused, never cut. Output
    written by another model or version, shard split or options is refused rather than extended.
    """
    if not path.exists():
        return 0, 0
    fields = fields or {}
    with open(path, "rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        end = size
        # Walk back to the last newline: everything after it is a torn line.
        while end > 0:
            step = min(1 << 16, end)
            handle.seek(end - step)
            chunk = handle.read(step)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                end = end - step + cut + 1
                break
            end -= step
        if end != size:
            handle.seek(end)
            torn = handle.read(min(size - end, len(_RECORD_START)))
            if not (torn.startswith(_RECORD_START) or _RECORD_START.startswith(torn)):
                raise BulkError(f"{path} does not end with a newline and its last line is not a bulk output "
                                "record; refusing to cut or extend it")
            if end:
                _check_record(path, _last_line(handle, end), model, version, fields)
            log.warning("%s: cutting a torn last line (%d bytes) left by an interrupted run", path, size - end)
            handle.truncate(end)
            handle.flush()
            os.fsync(handle.fileno())
        if end == 0:
            return 0, 0
        line = _check_record(path, _last_line(handle, end), model, version, fields)
        handle.seek(0)
        written = sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b""))
    return line, written


def _last_line(handle: BinaryIO, end: int) -> bytes:
    start = max(0, end - (1 << 20))
    handle.seek(start)
    return handle.read(end - start).rstrip(b"\n").rsplit(b"\n", 1)[-1]


def _check_record(path: Path, raw: bytes, model: str, version: str, fields: dict[str, Any]) -> int:
    """The input line number of an output record written by this very run set-up, else BulkError."""
    try:
        last = json.loads(raw)
        line = int(last["line"])
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError) as exc:
        raise BulkError(f"{path}: the last line is not a bulk output record ({type(exc).__name__}); refusing to "
                        "extend it") from None
    if (last.get("model"), last.get("version")) != (model, version):
        raise BulkError(f"{path} was written by {last.get('model')} {last.get('version')}, not {model} {version}; "
                        "use another --output")
    for key in ("shard", "options"):
        if last.get(key) != fields.get(key):
            raise BulkError(f"{path} was written with {key} {last.get(key) or '(default)'}, this run has "
                            f"{fields.get(key) or '(default)'}; resume with the same {key} or use another --output")
    return line


def check_complete(output: Path, after: int, written: int, shard_index: int, shard_count: int) -> None:
    """BulkError unless the output holds one record per shard line up to `after`.

    resume_point reads only the last record; a file that two runs wrote at once (possible before
    output_lock) ends in a plausible record with lines repeated above it, and extending it would
    report them all as done."""
    expected = shard_lines_upto(after, shard_index, shard_count)
    if written != expected:
        raise BulkError(f"{output} holds {written} records for the {expected} input lines of this shard up to "
                        f"line {after}: lines were written twice (two runs at once) or the file was edited; "
                        "keep one record per line number, in order, or use another --output")


def _record(line: int, scorer: Scorer, item_id: Any, extra: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {"line": line, "model": scorer.name, "version": scorer.version, **extra}
    if item_id is not None:
        record["id"] = item_id
    return record


def run_fields(scorer: Scorer, options: dict[str, Any], shard_index: int, shard_count: int) -> dict[str, Any]:
    """What else a resumed run must share with the output it extends, as fields of every record:
    the shard when there are several (another count would give the same file other lines) and
    the options where they differ from the model's defaults (a resume without them would score
    the rest differently). Default runs add nothing, so their records stay as they were."""
    fields: dict[str, Any] = {}
    if shard_count > 1:
        fields["shard"] = f"{shard_index}/{shard_count}"
    defaults = scorer.resolve_options({})
    changed = {k: v for k, v in options.items() if defaults.get(k) != v}
    if changed:
        fields["options"] = changed
    return fields


def score_batch(batch: list[tuple[int, bytes]], scorer: Scorer, options: dict[str, Any],
                extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Output records for a batch, in input order: scores, or an error per line that cannot be scored."""
    extra = extra or {}
    records: list[dict[str, Any] | None] = [None] * len(batch)
    good: list[int] = []
    items: list[Any] = []
    for i, (line, raw) in enumerate(batch):
        try:
            item, item_id = parse_line(raw, scorer)
        except ValueError as exc:
            records[i] = {**_record(line, scorer, getattr(exc, "item_id", None), extra),
                          "error": {"code": "bad_line", "message": str(exc)}}
            continue
        records[i] = _record(line, scorer, item_id, extra)
        good.append(i)
        items.append(item)
    if items:
        try:
            results = [scorer.score(items, options, EncodeCache())]
            groups = [good]
        except Exception:  # noqa: BLE001 - find the item that breaks the batch, score the rest
            log.exception("a batch of %d failed; scoring its items one by one", len(items))
            results, groups = [], []
            for i, item in zip(good, items):
                try:
                    results.append(scorer.score([item], options, EncodeCache()))
                    groups.append([i])
                except Exception as exc:  # noqa: BLE001 - an item the model cannot score is reported
                    records[i]["error"] = {"code": "scoring_failed", "message": f"{type(exc).__name__}: {exc}"}
        for result, indices in zip(results, groups):
            for j, i in enumerate(indices):
                records[i]["score"] = result.scores[j]
                if result.details:
                    records[i]["details"] = result.details[j]
    return [r for r in records if r is not None]


# --- the run ------------------------------------------------------------------------------------
class _Stop:
    """SIGTERM (Kubernetes eviction, `kubectl delete`) or Ctrl-C finishes the batch in hand, then
    stops with the summary and 128 + the signal's number (143, 130)."""

    requested = False
    signal_number = 0

    @classmethod
    def install(cls) -> None:
        def handler(signum: int, frame: Any) -> None:
            cls.requested = True
            cls.signal_number = signum

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)


def run(scorer: Scorer, source: BinaryIO, output: Path, *, options: dict[str, Any] | None = None,
        batch_size: int = 256, shard_index: int = 0, shard_count: int = 1,
        progress_every: float | None = None, lock_wait: float = 0.0) -> Counts:
    """Score this shard of `source` into `output` (appending, resuming); returns the counts.

    Every set-up problem raises BulkError (or TransientSetUpError, for an I/O error a retry may
    not meet) before a line is scored, so that whatever is raised later (an I/O error) marks a
    failure a retry can get past. Progress is logged every
    `progress_every` seconds when given.
    """
    try:
        options = scorer.resolve_options(options)
    except ValueError as exc:
        raise BulkError(f"bad --options: {exc}") from None
    fields = run_fields(scorer, options, shard_index, shard_count)
    counts = Counts()
    # The lock and checkpoint belong to the file, not to the path that names it: a symlink (or a
    # path through one) to an output another run is writing must meet that run's lock.
    output = Path(os.path.realpath(output))
    if output.exists() and not output.is_file():
        raise BulkError(f"{output} is not a regular file; --output must name a file to append to")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise set_up_error(f"cannot create the folder of {output}", exc) from None
    with output_lock(output, lock_wait) as locked:
        if not locked:
            return counts
        sink, after, counts.resumed_after = _open_output(output, scorer, fields, shard_index, shard_count)
        checkpoint = InputCheckpoint(output)
        expected = checkpoint.read() if after else None
        if after and expected is None:
            log.warning("%s has no input checkpoint (%s); resuming without checking that the input is the one "
                        "it was scored from", output, checkpoint.path.name)
        reader = HashedLines(source, output, after, expected)
        started = last_report = time.perf_counter()
        total_bytes = os.fstat(source.fileno()).st_size if hasattr(source, "fileno") else 0
        with sink:
            batch: list[tuple[int, bytes]] = []

            def flush() -> None:
                records = score_batch(batch, scorer, options, fields)
                sink.write(encode_records(records))
                sink.flush()
                os.fsync(sink.fileno())
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
                    if _Stop.requested:
                        break
            if batch and not _Stop.requested:
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
        sink = open(output, "ab")  # noqa: SIM115 - closed by run()
    except OSError as exc:
        raise set_up_error(f"cannot read or open {output}", exc) from None
    if after:
        log.info("%s: resuming after input line %d (%d lines already written)", output, after, written)
    return sink, after, written


def encode_records(records: list[dict[str, Any]]) -> bytes:
    """The output lines of a batch, strict JSON. A record that holds NaN or infinity (a model fault;
    input lines holding them are bad lines) becomes a `scoring_failed` error: one value must neither
    make the output unreadable nor stop the run, since a retry would meet it again."""
    lines = []
    for record in records:
        try:
            line = json.dumps(record, ensure_ascii=False, allow_nan=False)
        except ValueError:
            record.pop("score", None)
            record.pop("details", None)
            record["error"] = {"code": "scoring_failed", "message": "the model gave a score that is not a finite number"}
            line = json.dumps(record, ensure_ascii=False, allow_nan=False)
        try:
            lines.append(line.encode("utf-8"))
        except UnicodeEncodeError:  # a lone surrogate that reached a message: escaped, never a failed run
            lines.append(json.dumps(record, ensure_ascii=True, allow_nan=False).encode("ascii"))
    return b"".join(line + b"\n" for line in lines)


def _count(counts: Counts, records: list[dict[str, Any]]) -> None:
    for r in records:
        if "error" in r:
            counts.errors += 1
            code = r["error"]["code"]
            counts.by_code[code] = counts.by_code.get(code, 0) + 1
            log.warning("line %d skipped: %s", r["line"], r["error"]["message"])
        else:
            counts.scored += 1


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


def _env_int(name: str, default: int, parser: argparse.ArgumentParser) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        parser.error(f"${name}={raw!r} is not a whole number")
        raise  # unreachable: parser.error exits 2


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are one JSON log record (exit 2), like every other line on stderr."""

    def error(self, message: str) -> NoReturn:
        log.error("%s: %s (see --help)", self.prog, message, extra={"exit_status": 2})
        sys.exit(2)


def _json_object(text: str) -> dict[str, Any]:
    """--options: a JSON object, strictly (options are copied into every output record)."""
    try:
        value = loads(text, finite=True)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON ({exc})") from None
    except RecursionError:
        raise argparse.ArgumentTypeError("nested too deeply") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = _Parser(prog="python -m service.bulk", description=__doc__.split("\n\n")[0])
    try:
        settings = load_settings()
    except (ValueError, KeyError) as exc:  # a DIALSCORE_* variable that does not parse
        parser.error(str(exc))
    parser.add_argument("--model", required=True, help="model name (a folder of the model store)")
    parser.add_argument("--input", required=True, type=Path, help="JSONL, one item a line (the /score item shape)")
    parser.add_argument("--output", required=True, type=Path,
                        help="JSONL to append to; with several shards `{index}` in the name, or a suffix, "
                             "gives one file per shard")
    parser.add_argument("--batch-size", type=int, default=256, help="lines scored and fsync'd together (default 256)")
    parser.add_argument("--options", type=_json_object, default={}, help="model options as a JSON object")
    parser.add_argument("--shard-index", type=int, default=_env_int("JOB_COMPLETION_INDEX", 0, parser),
                        help="this worker's shard (default: $JOB_COMPLETION_INDEX, else 0)")
    parser.add_argument("--shard-count", type=int, default=_env_int("DIALSCORE_SHARD_COUNT", 1, parser),
                        help="number of shards; line n goes to shard (n-1) mod count (default: "
                             "$DIALSCORE_SHARD_COUNT, else 1)")
    parser.add_argument("--model-store", type=Path, default=settings.model_store)
    parser.add_argument("--threads", type=int, default=settings.intra_op_threads,
                        help="ONNX Runtime intra-op threads (0: all cores; default: $DIALSCORE_INTRA_OP_THREADS, else 0)")
    parser.add_argument("--progress-every", type=float, default=10.0, help="seconds between progress lines (default 10)")
    parser.add_argument("--lock-wait", type=float, default=0.0,
                        help="seconds to wait for another run writing the same output to end before refusing "
                             "(exit 2); default 0")
    args = parser.parse_args(argv)
    if args.batch_size < 1:
        parser.error("--batch-size must be at least 1")
    if args.shard_count < 1 or not 0 <= args.shard_index < args.shard_count:
        parser.error(f"--shard-index {args.shard_index} is not in 0..{args.shard_count - 1}")
    if not args.lock_wait >= 0:  # NaN too: it would never reach its deadline
        parser.error("--lock-wait must be a number of seconds, not negative")
    args.providers = settings.providers
    args.cuda_options = settings.cuda_options
    args.log_level = settings.log_level
    return args


def _why_not(root: Path, name: str, store: ModelStore) -> str:
    manifest = root / name / "manifest.json"
    try:
        kind = json.loads(manifest.read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError):
        kind = None
    if kind == "component":
        return "it is a component that models share, not a model"
    return store.failures.get(name, "not loaded")


def _load_scorer(args: argparse.Namespace) -> Scorer:
    runtime = Runtime(RuntimeSettings(providers=tuple(args.providers), intra_op_threads=args.threads, workers=1,
                                      cuda_options=tuple(args.cuda_options)))
    store = ModelStore(args.model_store, runtime, (args.model,))
    try:
        store.load()
    except OSError as exc:
        raise set_up_error(f"cannot read the model store {args.model_store}", exc) from None
    scorer = store.get(args.model)
    if scorer is None:
        raise BulkError(f"model {args.model} is not available: {_why_not(args.model_store, args.model, store)}")
    return scorer


def _open_input(path: Path) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise set_up_error(f"cannot read the input {path}", exc) from None


def main(argv: list[str] | None = None) -> int:
    from service.logging_setup import configure_logging

    configure_logging()  # before the arguments are checked: their errors are JSON records too
    args = _parse_args(argv)
    configure_logging(args.log_level)
    _Stop.install()
    started = time.perf_counter()
    output = shard_output(args.output, args.shard_index, args.shard_count)
    try:
        scorer = _load_scorer(args)
        load_seconds = time.perf_counter() - started
        with _open_input(args.input) as source:
            counts = run(scorer, source, output, options=args.options, batch_size=args.batch_size,
                         shard_index=args.shard_index, shard_count=args.shard_count,
                         progress_every=args.progress_every, lock_wait=args.lock_wait)
    except TransientSetUpError as exc:
        log.error("set-up failed on an I/O error that a retry may get past, nothing scored: %s", exc,
                  extra={"exit_status": 1})
        return 1
    except BulkError as exc:
        log.error("set-up error, nothing scored: %s", exc, extra={"exit_status": 2})
        return 2
    except Exception as exc:  # noqa: BLE001 - exit 1: the Job retries this shard alone, and it resumes
        log.error("failed after set-up; a rerun resumes: %s: %s", type(exc).__name__, exc,
                  exc_info=not isinstance(exc, OSError), extra={"exit_status": 1})
        return 1
    counts.load_seconds = load_seconds
    summary = {
        "model": scorer.name, "version": scorer.version, "providers": scorer.providers(),
        "input": str(args.input), "output": str(output), "shard": [args.shard_index, args.shard_count],
        "already_done": counts.resumed_after, "scored": counts.scored, "errors": counts.errors,
        "errors_by_code": counts.by_code, "load_seconds": round(load_seconds, 3),
        "seconds": round(counts.seconds, 3),
        "items_per_second": round(counts.written / counts.seconds, 1) if counts.seconds > 0 else None,
        "stopped_early": _Stop.requested,
    }
    print(json.dumps(summary), flush=True)
    return 128 + _Stop.signal_number if _Stop.requested else 0


if __name__ == "__main__":
    sys.exit(main())
