"""A loopback server that answers every request with the same raw bytes: answers no HTTP library would send
(a body its Content-Encoding does not decode, a body cut short, a head sent a byte at a time, a stall).

`requests` lists each request's first line.
"""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class RawServer:
    url: str
    requests: list[str] = field(default_factory=list)


def head(status: str, *headers: str, body: bytes = b"", length: int | None = None) -> bytes:
    """An HTTP/1.1 answer closing its connection: `length` (default len(body)) as its Content-Length."""
    lines = [f"HTTP/1.1 {status}", *headers, f"Content-Length: {len(body) if length is None else length}",
             "Connection: close"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@contextmanager
def serving(answer_one: Callable[[socket.socket, threading.Event], None], port: int = 0) -> Iterator[str]:
    """A loopback server on `port` (0: a free one) that calls `answer_one(connection, stop)` on a thread of
    its own for each connection; `stop` is set when the server stops. Yields its URL."""
    listener = socket.create_server(("127.0.0.1", port))
    listener.settimeout(0.05)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=answer_one, args=(conn, stop), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


@contextmanager
def raw_answering(answer: bytes, drip: float = 0.0, hold: bool = False, port: int = 0) -> Iterator[RawServer]:
    """Answers each request with `answer`, one byte every `drip` seconds (0: at once), then closes the
    connection, or with `hold` keeps it open, sending nothing more, until the server stops; on `port`
    (0: a free one)."""
    served = RawServer("")

    def answer_one(conn: socket.socket, stop: threading.Event) -> None:
        try:
            with conn:
                served.requests.append(_read_request(conn))
                pieces = [answer[i:i + 1] for i in range(len(answer))] if drip else [answer]
                for piece in pieces:
                    if stop.is_set():
                        return
                    conn.sendall(piece)
                    time.sleep(drip)
                while hold and not stop.wait(0.05):
                    pass
        except OSError:
            pass

    with serving(answer_one, port) as url:
        served.url = url
        yield served


def _read_request(conn: socket.socket) -> str:
    """The request's first line, its head and body read off the connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    head_bytes, _, body = data.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head_bytes.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return head_bytes.split(b"\r\n", 1)[0].decode("latin-1")
