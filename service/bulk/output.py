"""The output file of a shard: its name, its lock, and where a resumed run goes on from."""
from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import socket
import stat
import time
from contextlib import contextmanager, suppress
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from service.bulk.errors import TRANSIENT_ERRNOS, BulkError, set_up_error
from service.bulk.signals import Stop

log = logging.getLogger("service.bulk")  # one logger for the whole command: its records name it


def regular_output(output: Path, use: str) -> Path:
    """The file `output` names, its links resolved (the file they point to is the one written); BulkError when
    it exists and is not a regular file (a FIFO, a device, a folder), which writing would block on or replace.
    `use`: what the command does with the file, for the message. It may not be the command's own standard
    input, output or error (`/dev/stdout` redirected to a file): replacing it would drop what it holds."""
    try:
        found = os.stat(output)
    except OSError:  # no such file (yet): nothing to compare
        return Path(os.path.realpath(output))
    if not stat.S_ISREG(found.st_mode):
        raise BulkError(f"{output} is not a regular file; --output must name a file {use}")
    for number, stream in ((0, "input"), (1, "output"), (2, "error")):
        try:
            held = os.fstat(number)
        except OSError:  # the stream is closed
            continue
        if (held.st_dev, held.st_ino) == (found.st_dev, found.st_ino):
            raise BulkError(f"{output} is this command's standard {stream}; --output must name another file {use}")
    return Path(os.path.realpath(output))


def shard_output(output: Path, index: int, count: int) -> Path:
    """One output file per shard: `{index}` (and `{count}`) in the name are filled; without `{index}`
    a suffix is added too, since `{count}` alone named one file for every shard."""
    name = str(output).replace("{count}", f"{count:05d}")
    if "{index}" in name:
        return Path(name.replace("{index}", f"{index:05d}"))
    if count == 1:
        return Path(name)
    return Path(f"{name}.{index:05d}-of-{count:05d}")


def append_whole(sink: BinaryIO, data: bytes) -> None:
    """Append `data` (whole lines) to an unbuffered append-mode file and fsync it; on an I/O error
    cut the file back to where it was before raising, so that a full volume leaves whole records
    only, never half a record that whoever reads a failed Job's output meets first. Unbuffered, so
    that no bytes wait in a buffer to be written after the cut when the file is closed."""
    fd = sink.fileno()
    start = os.fstat(fd).st_size  # append mode: this run holds the lock, so the end is ours
    try:
        view = memoryview(data)
        while view:
            view = view[sink.write(view):]
        os.fsync(fd)
    except OSError:
        with suppress(OSError):  # a cut frees space, so it works on a full volume
            os.ftruncate(fd, start)
            os.fsync(fd)
        raise


@contextmanager
def output_lock(output: Path, wait: float = 0.0) -> Iterator[bool]:
    """Hold an exclusive lock on `<output>.lock` for the block; True once held, False if SIGTERM came while
    waiting; BulkError naming the holder when another run holds it after `wait` seconds.

    A POSIX record lock (fcntl), because network filesystems (NFS, CephFS, SMB) carry it between machines
    and it dies with its holder, so a killed run leaves no stale lock. A sidecar file, because it can be
    locked before the output exists and a POSIX lock is dropped when its process closes any descriptor of
    the file. Never deleted: unlinking it while a run waits would let a third run lock a new file beside it.
    The lock belongs to the process: two runs inside one process are not kept apart."""
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
        if Stop.requested:
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
    written by another model or version, shard split, options or compute is refused rather than extended.
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
        line = last["line"]
        if type(line) is not int or line < 1:  # what this tool writes; int() would take "5" and 5.9
            raise TypeError("line is not a positive whole number")
    except (ValueError, KeyError, TypeError, OverflowError, RecursionError) as exc:
        raise BulkError(f"{path}: the last line is not a bulk output record ({type(exc).__name__}); refusing to "
                        "extend it") from None
    if (last.get("model"), last.get("version")) != (model, version):
        raise BulkError(f"{path} was written by {last.get('model')} {last.get('version')}, not {model} {version}; "
                        "use another --output")
    for key in ("shard", "options", "compute"):
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
