"""What a resumed run checks: that the input is the one the output was scored from."""
from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from service.bulk.errors import TRANSIENT_ERRNOS, BulkError, set_up_error
from service.bulk.signals import Stop

log = logging.getLogger("service.bulk")  # one logger for the whole command: its records name it


_SKIP_CHUNK = 1 << 20  # bytes read at a time while an oversized line streams past


@dataclass(frozen=True)
class OversizedLine:
    """Stands for an input line longer than the run's limit, which was hashed but not kept."""

    size: int  # bytes, its newline not counted
    limit: int

    def describe(self) -> str:
        return f"the line is {self.size} bytes; the limit is {self.limit} (--max-line-bytes)"


class InputCheckpoint:
    """`<output>.input.json`: the SHA-256 of the input's first k lines, k the output's last line.

    A resume skips the input up to the output's last record without reading what it was scored from, so
    another input (regenerated, another shard's, re-sorted) would extend the output with records of other
    text; the resume hashes what it skips and stops with a set-up error (exit 2) where it differs. The file
    is replaced atomically after every fsync'd batch, so after a kill it may lag the output, never run
    ahead. An input that only grew at the end still matches; an output without a readable checkpoint is
    resumed unchecked, with a warning, rather than blocking every retry of a Job."""

    def __init__(self, output: Path) -> None:
        self.path = Path(f"{output}.input.json")
        self.temporary = Path(f"{self.path}.tmp")  # written, then renamed over `path`

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

    def check_writable(self) -> None:
        """Create and remove the temporary file `write` renames, as set-up: in a folder that is not
        writable (the output file itself being so) every retry would append one batch and then fail
        with exit 1, 'a rerun resumes', for ever."""
        with open(self.temporary, "wb"):
            pass
        os.unlink(self.temporary)

    def write(self, line: int, digest: str, input_name: str) -> None:
        with open(self.temporary, "wb") as handle:
            handle.write(json.dumps({"line": line, "sha256": digest, "input": input_name}).encode("utf-8") + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(self.temporary, self.path)


class HashedLines:
    """The input's lines with a running SHA-256, checked against a checkpoint while skipping.

    `written` is (line, hash state) of the last line handed out, which is what the output holds
    once that line's batch is fsync'd; the state is copied at hand-out time because the iterator
    may read further (other shards' lines) before the last batch is written, and finished into a
    digest only when a batch is (`written_digest`), not for every line.
    """

    def __init__(self, source: BinaryIO, output: Path, after: int, expected: tuple[int, str, str] | None,
                 max_line_bytes: int | None = None) -> None:
        self.source, self.output, self.after = source, output, after
        self.max_line_bytes = max_line_bytes
        self.name = str(getattr(source, "name", "<stream>"))
        self.hash = hashlib.sha256()
        self.written: tuple[int, Any] | None = None
        self.interrupted = False  # set when a stop ended the reading (signals.Stop)
        self.expected = expected
        if expected is not None and expected[0] > after:
            # The checkpoint runs ahead of the output only if the output was cut by hand: the lines it covers
            # beyond `after` would be scored before they could be compared, so a file is read ahead once.
            if source.seekable():
                self._compare_ahead(expected[0])
            else:
                log.warning("%s: its input checkpoint is at line %d, past the output's last line %d (the output "
                            "was cut?); a stream cannot be read twice, so the input is not checked", output,
                            expected[0], after)
                self.expected = None

    def lines(self, index: int, count: int) -> Iterator[tuple[int, bytes | OversizedLine]]:
        """(1-based line number, raw line) of shard `index` of `count`, skipping lines up to `after`.

        A line longer than `max_line_bytes` (its newline not counted) is never held whole: it is
        hashed as it streams past and handed out as an OversizedLine, which becomes one bad line.
        Why: a single runaway line (a corpus without newlines, a binary file) would otherwise be
        read into memory at once, and a pod killed for it would meet it again on every retry.
        """
        number = 0
        for number, raw in enumerate(self._raw_lines(), start=1):
            if self.expected is not None and number == self.expected[0]:
                self._compare(number)
            if (number - 1) % count == index and number > self.after:
                self.written = (number, self.hash.copy())
                yield number, raw
        if number < self.after and not self.interrupted:
            raise BulkError(f"{self.name} has {number} lines but {self.output} already holds records up to line "
                            f"{self.after}: it is not the input this output was scored from; resume with that "
                            "input or use another --output")

    def _raw_lines(self) -> Iterator[bytes | OversizedLine]:
        """Each line, hashed with exactly one newline (a last line without one still matches once
        more lines are appended after it); a line over the limit as an OversizedLine. Ends early,
        with `interrupted` set, when SIGTERM or Ctrl-C comes (signals.Stop)."""
        try:
            while True:
                with Stop.reading():
                    line = self._read_line()
                if line is None:
                    return
                yield line
        except Stop.Interrupted:
            self.interrupted = True

    def _read_line(self) -> bytes | OversizedLine | None:
        limit = self.max_line_bytes
        raw = self.source.readline() if limit is None else self.source.readline(limit + 1)
        if not raw:
            return None
        if limit is not None and raw.endswith(b"\r") and len(raw) > limit:
            raw += self.source.readline(1)  # a CRLF line of exactly the limit: its \r\n is not counted
        if limit is None or len(raw) - raw.endswith(b"\n") - raw.endswith(b"\r\n") <= limit:
            self.hash.update(raw if raw.endswith(b"\n") else raw + b"\n")
            return raw
        size = len(raw)
        self.hash.update(raw)
        tail = raw[-2:]  # the line's last two bytes, whichever reads they came in
        while not raw.endswith(b"\n"):
            raw = self.source.readline(_SKIP_CHUNK)
            if not raw:
                self.hash.update(b"\n")
                break
            self.hash.update(raw)
            size += len(raw)
            tail = (tail + raw)[-2:]
        return OversizedLine(size - tail.endswith(b"\n") - tail.endswith(b"\r\n"), limit)

    def written_digest(self) -> tuple[int, str] | None:
        """(line, SHA-256 hex) of the input up to the last line handed out, or None before any."""
        return None if self.written is None else (self.written[0], self.written[1].hexdigest())

    def _compare_ahead(self, line: int) -> None:
        """Compare the input's first `line` lines with the checkpoint, then start again from the top."""
        start, number = self.source.tell(), 0
        for number, _ in enumerate(self._raw_lines(), start=1):
            if number == line:
                self._compare(number)
                break
        if number < line and not self.interrupted:
            raise BulkError(f"{self.name} has {number} lines but {self.output} was scored from {line} "
                            f"(per {self.output}.input.json): it is not the same input; resume with that input "
                            "or use another --output")
        self.source.seek(start)
        self.hash, self.expected = hashlib.sha256(), None

    def _compare(self, number: int) -> None:
        line, digest, name = self.expected
        self.expected = None
        if self.hash.hexdigest() != digest:
            raise BulkError(f"the first {line} lines of {self.name} differ from those {self.output} was scored "
                            f"from ({name}, per {self.output}.input.json): it is not the same input; resume with "
                            "that input or use another --output")
        log.info("%s: its first %d lines are those the output was scored from", self.name, number)
