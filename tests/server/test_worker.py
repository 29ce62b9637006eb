"""The worker's h11 protocol (service/server/worker.py) on a real socket, serving a small ASGI app whose
timing the test sets: what a client sees when it closes its side at a given moment."""
from __future__ import annotations

import asyncio

import uvicorn
from uvicorn.server import ServerState

from service.server.worker import ContractH11Protocol

PAUSE_S = 0.3  # between the answer's head and its body: the client's FIN arrives in it


async def answer_in_two_parts(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 405, "headers": [(b"content-length", b"2")]})
    await asyncio.sleep(PAUSE_S)
    await send({"type": "http.response.body", "body": b"{}"})


async def exchange_closing_after_the_head(request: bytes) -> bytes:
    """Send `request`, read the answer's head, close our side, and read what else comes."""
    config = uvicorn.Config(answer_in_two_parts, http=ContractH11Protocol, ws="none", lifespan="off",
                            log_level="warning")
    config.load()
    state = ServerState()
    server = await asyncio.get_running_loop().create_server(
        lambda: ContractH11Protocol(config=config, server_state=state, app_state={}), "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
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
