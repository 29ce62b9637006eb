"""The worker's h11 protocol (service/server/worker.py) on a real socket, serving a small ASGI app whose
timing the test sets: what a client sees when it closes its side at a given moment."""
from __future__ import annotations

import asyncio
import os
import signal
import time

import uvicorn
from uvicorn.server import ServerState

from service.server.worker import ContractH11Protocol

PAUSE_S = 0.3  # between the answer's head and its body: the client's FIN arrives in it


async def answer_in_two_parts(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 405, "headers": [(b"content-length", b"2")]})
    await asyncio.sleep(PAUSE_S)
    await send({"type": "http.response.body", "body": b"{}"})


async def serving(app, read_timeout: float = ContractH11Protocol.read_timeout):
    """A server of `app` on ContractH11Protocol with `read_timeout`; (server, its state, port)."""
    protocol = type("Protocol", (ContractH11Protocol,), {"read_timeout": read_timeout})
    config = uvicorn.Config(app, http=protocol, ws="none", lifespan="off", log_level="warning")
    config.load()
    state = ServerState()
    server = await asyncio.get_running_loop().create_server(
        lambda: protocol(config=config, server_state=state, app_state={}), "127.0.0.1", 0)
    return server, state, server.sockets[0].getsockname()[1]


async def exchange_closing_after_the_head(request: bytes) -> bytes:
    """Send `request`, read the answer's head, close our side, and read what else comes."""
    server, _, port = await serving(answer_in_two_parts)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        writer.write_eof()
        return head + await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()
        server.close()


def test_an_answer_under_way_when_the_client_closes_mid_body_is_sent_whole():
    """A client that declared 5 body bytes, sent 2 and closed its side while the app answered without
    reading them (a 405): its FIN closed the connection between the answer's head and body, and the
    client got a head announcing 2 bytes and none."""
    raw = asyncio.run(exchange_closing_after_the_head(
        b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n{}"))
    assert raw.startswith(b"HTTP/1.1 405 ") and raw.endswith(b"\r\n\r\n{}"), raw


async def answer_at_once(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"{}"})



def test_a_head_must_arrive_within_the_read_timeout_on_a_new_or_a_kept_connection():
    """An idle new connection is closed silently at the read timeout; a head begun on a kept connection
    gets its own read timeout from its first byte (not from the connection's start), then 408 with
    `Connection: close`, and the connection ends."""
    read_timeout = 0.6

    async def run() -> tuple[bytes, bytes, float]:
        server, _, port = await serving(answer_at_once, read_timeout)
        try:
            idle_reader, idle = await asyncio.open_connection("127.0.0.1", port)
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            first = await asyncio.wait_for(reader.readuntil(b"{}"), 5)
            await asyncio.sleep(read_timeout * 2 / 3)
            writer.write(b"GET / HTTP/1.1\r\n")  # a head begun, never ended
            begun = time.monotonic()
            late = await asyncio.wait_for(reader.read(), 5)
            waited = time.monotonic() - begun
            silent = await asyncio.wait_for(idle_reader.read(), 5)
            idle.close()
            writer.close()
            assert first.startswith(b"HTTP/1.1 200") and silent == b"", (first, silent)
            return late, waited
        finally:
            server.close()

    late, waited = asyncio.run(run())
    head = late.partition(b"\r\n\r\n")[0].lower()
    assert head.startswith(b"http/1.1 408") and b"connection: close" in head and b"request_timeout" in late, late
    assert waited >= read_timeout * 0.9, waited


def test_a_connection_with_no_request_at_shutdown_serves_the_request_that_comes_and_then_ends():
    """uvicorn closed a connection without a request at shutdown: a request under way in the client's
    send was lost. It stays open; the request that comes is answered, and is the last."""
    async def run() -> bytes:
        server, state, port = await serving(answer_at_once, 5.0)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            while not state.connections:
                await asyncio.sleep(0.01)
            for connection in list(state.connections):
                connection.shutdown()
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            raw = await asyncio.wait_for(reader.read(), 5)  # to the connection's end
            writer.close()
            return raw
        finally:
            server.close()

    raw = asyncio.run(run())
    assert raw.startswith(b"HTTP/1.1 200") and raw.endswith(b"\r\n\r\n{}"), raw  # whole, then the connection ends


def test_an_answer_to_unparsable_http_ends_the_connection():
    async def run() -> bytes:
        server, _, port = await serving(answer_at_once, 5.0)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"NOT HTTP\r\n\r\n")
            raw = await asyncio.wait_for(reader.read(), 5)  # without closing our side
            writer.close()
            return raw
        finally:
            server.close()

    raw = asyncio.run(run())
    assert raw.startswith(b"HTTP/1.1 400") and b'"bad_request"' in raw, raw


def _draining_server(monkeypatch, tmp_path, **config):
    from types import SimpleNamespace

    from service.server.worker import DrainingServer
    from service.store import readiness

    monkeypatch.setenv(readiness.DIR_ENV, str(tmp_path))
    front = SimpleNamespace(stopping_since=None)
    return DrainingServer(uvicorn.Config(app=front, **config), front, master=os.getppid()), front


def test_the_worker_counts_max_requests_and_a_recycle_closes_the_listener_at_once(monkeypatch, tmp_path):
    """The front counts DIALSCORE_MAX_REQUESTS (uvicorn's own count would stop the worker without waiting for
    its siblings); its recycle closes the listeners now, not at uvicorn's next tick."""
    server, front = _draining_server(monkeypatch, tmp_path, limit_max_requests=7)
    assert front.max_requests == 7 and server.config.limit_max_requests is None
    closed: list[int] = []
    server.servers = [type("Listener", (), {"close": lambda self: closed.append(1)})()]
    front.recycle()
    assert closed == [1] and server.should_exit


def test_sigterm_starts_the_drain_once_and_sigquit_exits_at_once(monkeypatch, tmp_path):
    server, front = _draining_server(monkeypatch, tmp_path)
    server.handle_exit(signal.SIGTERM, None)
    first = front.stopping_since
    server.handle_exit(signal.SIGTERM, None)
    assert first is not None and front.stopping_since == first and not server.force_exit  # refused from the first
    server.handle_exit(signal.SIGQUIT, None)
    assert server.force_exit


class _Connection:
    """A connection that closes after `requests` more calls of shutdown() (each tick's)."""

    def __init__(self, connections: set, requests: int) -> None:
        self.connections, self.left, self.calls = connections, requests, 0
        connections.add(self)

    def shutdown(self) -> None:
        self.calls += 1
        self.left -= 1
        if self.left <= 0:
            self.connections.discard(self)


def test_the_drain_closes_the_listener_only_once_no_connection_is_open(monkeypatch, tmp_path):
    """After SIGTERM: each tick asks every connection to end after its request, and the listener closes
    after QUIET_TICKS ticks with none open; a recycle (stopping_since infinite) does not drain."""
    from uvicorn.server import Server

    from service.server.worker import QUIET_TICKS

    server, front = _draining_server(monkeypatch, tmp_path, timeout_graceful_shutdown=5)
    open_at_close: list[int] = []

    async def listener_closes(self, sockets=None) -> None:
        open_at_close.append(len(self.server_state.connections))

    monkeypatch.setattr(Server, "shutdown", listener_closes)
    connection = _Connection(server.server_state.connections, requests=3)
    front.stopping_since = time.monotonic()
    started = time.monotonic()
    asyncio.run(server.shutdown())
    assert open_at_close == [0] and connection.calls == 3, (open_at_close, connection.calls)
    assert time.monotonic() - started >= (3 + QUIET_TICKS - 1) * 0.01
    recycled = _Connection(server.server_state.connections, requests=3)
    front.stopping_since = float("inf")
    asyncio.run(server.shutdown())
    assert open_at_close == [0, 1] and recycled.calls == 0


def test_the_heartbeat_is_withheld_only_for_a_request_past_its_deadline_and_the_worker_timeout():
    from types import SimpleNamespace

    from service.server.worker import DialscoreWorker

    stuck = SimpleNamespace(route="/score", deadline=0.0)
    for timeout, late, beats in ((30, None, True), (30, stuck, False), (0, stuck, True)):
        beat: list[int] = []
        worker = SimpleNamespace(wsgi=SimpleNamespace(overdue=lambda now, grace, late=late: late),
                                 cfg=SimpleNamespace(timeout=timeout), notify=lambda beat=beat: beat.append(1))
        asyncio.run(DialscoreWorker.callback_notify(worker))
        assert bool(beat) is beats, (timeout, late)


def test_bytes_past_a_closing_request_are_dropped_as_they_come_not_held():
    """What arrives past a `Connection: close` request while its answer is due is read and dropped: h11
    would hold every byte of it for as long as the answer takes."""
    async def run() -> tuple[bytes, int]:
        server, state, port = await serving(answer_in_two_parts)
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)  # the app now pauses PAUSE_S
            [protocol] = state.connections
            writer.write(b"x" * (4 << 20))
            raw = head + await asyncio.wait_for(reader.read(), 5)
            writer.close()
            return raw, len(protocol.conn.trailing_data[0])
        finally:
            server.close()

    raw, held = asyncio.run(run())
    assert raw.startswith(b"HTTP/1.1 405 ") and raw.endswith(b"\r\n\r\n{}"), raw
    assert held < 1 << 20, held  # at most one read's worth, taken before the refusal
