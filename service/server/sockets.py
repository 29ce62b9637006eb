"""The client socket a request thread reads from (RequestSocket), and the drain of an unread body."""
from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from gunicorn.http.body import ChunkedReader, EOFReader, LengthReader

from service.errors import RequestTimeout

CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


class RequestSocket:
    """A client socket whose reads first return what the event loop already read (`replay`), then
    share one deadline while armed; everything else is the socket's.

    Armed by the worker for each request it takes up and disarmed when that request is done, so
    the app's time between reads, keep-alive waits and the response's writes are not counted.
    """

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._deadline: float | None = None
        self._seconds = 0.0
        self.request: Any = None  # gunicorn's Request being read, told to close once its body stalls
        self._replay = memoryview(b"")
        self.continue_sent = False  # the loop answered `Expect: 100-continue`; gunicorn must not again

    def replay(self, data: bytes, continue_sent: bool = False) -> None:
        """Serve `data` (one request, read by the loop) before anything from the socket."""
        self._replay = memoryview(data)
        self.continue_sent = continue_sent

    def arm(self, seconds: float) -> None:
        self._seconds = seconds
        self._deadline = time.monotonic() + seconds

    def disarm(self) -> None:
        self._deadline = None

    @contextmanager
    def draining(self, seconds: float) -> Iterator[None]:
        """A block under a short deadline of its own; the request's deadline is back after it."""
        saved = (self._deadline, self._seconds)
        self.arm(seconds)
        try:
            yield
        finally:
            self._deadline, self._seconds = saved

    def _timed_out(self) -> RequestTimeout:
        # The rest of the body is never read, so the connection cannot carry another request: the
        # app's 408 must say `Connection: close` (it said keep-alive and the server then closed).
        if self.request is not None:
            self.request.must_close = True
        return RequestTimeout(self._seconds)

    def _before_read(self) -> None:
        if self._deadline is not None:
            remaining = self._deadline - time.monotonic()
            if remaining <= 0:
                raise self._timed_out()
            self._sock.settimeout(remaining)

    def _read(self, method: str, *args: Any) -> Any:
        self._before_read()
        try:
            return getattr(self._sock, method)(*args)
        except TimeoutError:
            if self._deadline is None:
                raise
            raise self._timed_out() from None
        finally:
            if self._deadline is not None:
                self._sock.settimeout(None)  # writes in between are not held to the read deadline

    def recv(self, size: int, *args: Any) -> bytes:
        if self._replay:
            data, self._replay = self._replay[:size], self._replay[size:]
            return bytes(data)
        return self._read("recv", size, *args)

    def recv_into(self, buffer: Any, size: int = 0, *args: Any) -> int:
        if self._replay:
            size = min(size or len(buffer), len(self._replay))
            buffer[:size] = self._replay[:size]
            self._replay = self._replay[size:]
            return size
        return self._read("recv_into", buffer, size, *args)

    def send(self, data: Any, *args: Any) -> int:
        if self.continue_sent and bytes(data) == CONTINUE:
            self.continue_sent = False
            return len(data)
        return self._sock.send(data, *args)

    def sendall(self, data: Any, *args: Any) -> None:
        if self.continue_sent and bytes(data) == CONTINUE:
            self.continue_sent = False
            return None
        return self._sock.sendall(data, *args)

    def fileno(self) -> int:
        return self._sock.fileno()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


DRAIN_BYTES = 64 * 1024  # the most of an unread body read so that the connection can be kept
DRAIN_SECONDS = 0.05  # for what the client has already sent: it is in the socket's buffer


def body_unread(body: Any) -> bool:
    """Whether the app left part of the request body unread (gunicorn's three body readers)."""
    reader = getattr(body, "reader", None)
    if isinstance(reader, LengthReader):
        return reader.length > 0
    if isinstance(reader, ChunkedReader):
        return reader.parser is not None  # set to None once the last chunk was read
    if isinstance(reader, EOFReader):
        return not reader.finished
    return False


def drain(body: Any, sock: Any) -> bool:
    """Read the rest of a small body that has already arrived; True when the body was read to its end."""
    reader = getattr(body, "reader", None)
    if not isinstance(sock, RequestSocket) or (isinstance(reader, LengthReader) and reader.length > DRAIN_BYTES):
        return False
    try:
        with sock.draining(DRAIN_SECONDS):
            read = 0
            while read <= DRAIN_BYTES:
                chunk = body.read(8192)
                if not chunk:
                    return True
                read += len(chunk)
    except Exception:  # noqa: BLE001 - a stall (RequestTimeout), a bad chunk, a reset: the connection ends
        return False
    return False
