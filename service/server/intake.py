"""Whether the bytes a connection has sent so far hold one whole HTTP/1.1 request (scan_request).

The worker reads each request on its event loop until it is whole and only then gives it to a
thread, so an idle or slow client holds a socket, never a thread. This scan only finds where the
request ends and reads the few headers admission needs; gunicorn's parser still parses every
request in the thread. Anything the scan does not follow (a malformed head, a body past the limit,
a transfer coding other than chunked) is handed over as it is, and gunicorn answers it as before.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

HEAD_LIMIT = 64 * 1024  # bytes of a head held on the loop; a longer one is gunicorn's to refuse (414 / 431)
READ_HEADERS = frozenset({"content-length", "transfer-encoding", "expect", "x-request-timeout", "x-request-id"})


class Scan(enum.Enum):
    WAITING = "waiting"  # more bytes are needed
    WHOLE = "whole"  # buffer[:end] is one request, head and body
    HAND_OVER = "hand_over"  # give the connection to a thread as it is (gunicorn reads and answers the rest)


@dataclass
class Head:
    """The request line and the headers admission reads (lower-case names; the last one of a name wins)."""

    method: str
    path: str  # without the query
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def expects_continue(self) -> bool:
        return self.headers.get("expect", "").strip().lower() == "100-continue"


@dataclass
class Scanned:
    state: Scan
    head: Head | None = None
    end: int = 0  # where the request ends in the buffer (WHOLE)
    body_started: bool = False  # whether any body byte has arrived (for 100 Continue)


def parse_head(raw: bytes) -> Head | None:
    """The head before its blank line, or None where it is not one the scan can follow."""
    lines = raw.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[0] or not parts[1]:
        return None
    method, target = parts[0].decode("latin-1"), parts[1].decode("latin-1")
    head = Head(method=method, path=target.split("?", 1)[0])
    lengths = 0
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or not name or name != name.strip():
            return None
        key = name.decode("latin-1").lower()
        if key == "content-length":
            lengths += 1
        if key in READ_HEADERS:
            head.headers[key] = value.strip().decode("latin-1")
    if lengths > 1 or (lengths and "transfer-encoding" in head.headers):
        return None  # gunicorn refuses these (request smuggling): let it
    return head


def _chunked_end(buffer: bytes | bytearray, start: int, body_limit: int) -> tuple[Scan, int]:
    """Where a chunked body that starts at `start` ends (with its trailers), or why not yet."""
    position = start
    while True:
        line_end = buffer.find(b"\r\n", position)
        if line_end < 0:
            return (Scan.HAND_OVER if len(buffer) - position > 1024 else Scan.WAITING), 0
        size_text = bytes(buffer[position:line_end]).split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            return Scan.HAND_OVER, 0
        if size < 0 or position - start + size > body_limit:
            return Scan.HAND_OVER, 0
        if size == 0:
            if buffer[line_end + 2:line_end + 4] == b"\r\n":
                return Scan.WHOLE, line_end + 4
            trailers_end = buffer.find(b"\r\n\r\n", line_end)
            return (Scan.WHOLE, trailers_end + 4) if trailers_end >= 0 else (Scan.WAITING, 0)
        data_end = line_end + 2 + size
        if len(buffer) < data_end + 2:
            return Scan.WAITING, 0
        if buffer[data_end:data_end + 2] != b"\r\n":
            return Scan.HAND_OVER, 0
        position = data_end + 2


def scan_request(buffer: bytes | bytearray, body_limit: int) -> Scanned:
    """Whether `buffer` (what a connection sent since its last request) holds a whole request."""
    head_end = buffer.find(b"\r\n\r\n")
    if head_end < 0:
        return Scanned(Scan.HAND_OVER if len(buffer) > HEAD_LIMIT else Scan.WAITING)
    head = parse_head(bytes(buffer[:head_end]))
    if head is None:
        return Scanned(Scan.HAND_OVER)
    body_start = head_end + 4
    started = len(buffer) > body_start
    coding = head.headers.get("transfer-encoding")
    if coding is not None:
        if coding.strip().lower() != "chunked":
            return Scanned(Scan.HAND_OVER, head)
        state, end = _chunked_end(buffer, body_start, body_limit)
        return Scanned(state, head, end, started)
    length_text = head.headers.get("content-length", "0").strip()
    if not length_text.isdigit() or len(length_text) > 18:
        return Scanned(Scan.HAND_OVER, head)
    length = int(length_text)
    if length > body_limit:
        return Scanned(Scan.HAND_OVER, head)  # the app answers 413 without waiting for the body
    if len(buffer) < body_start + length:
        return Scanned(Scan.WAITING, head, 0, started)
    return Scanned(Scan.WHOLE, head, body_start + length, started)
