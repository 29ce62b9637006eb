"""A client's side of one request as uvicorn hands it to an ASGI app (scope, receive, send), for
driving the worker's front in process (tests/server)."""
from __future__ import annotations

import asyncio
import dataclasses


@dataclasses.dataclass
class Client:
    """One connection's side of a request: sends its body in `parts`, `gap_s` apart; leaves after
    `leave_after` parts (None: stays until its answer is whole)."""

    method: str
    path: str
    body: bytes
    parts: int = 1
    gap_s: float = 0.0
    chunked: bool = False
    leave_after: int | None = None
    budget: str | None = None
    start_s: float = 0.0  # after the first client's arrival
    messages: list = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        step = max(1, -(-len(self.body) // self.parts))
        self.pieces = [self.body[i:i + step] for i in range(0, len(self.body), step)] or [b""]
        self.given, self.answered = 0, asyncio.Event()

    def scope(self) -> dict:
        headers = [(b"host", b"127.0.0.1"), (b"content-type", b"application/json")]
        headers.append((b"transfer-encoding", b"chunked") if self.chunked
                       else (b"content-length", str(len(self.body)).encode()))
        headers += [(b"x-request-timeout", self.budget.encode())] if self.budget else []
        return {"type": "http", "http_version": "1.1", "method": self.method, "path": self.path,
                "raw_path": self.path.encode(), "query_string": b"", "root_path": "", "scheme": "http",
                "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 40000), "headers": headers}

    async def receive(self) -> dict:
        if self.leave_after is not None and self.given >= self.leave_after:
            return {"type": "http.disconnect"}
        if self.given < len(self.pieces):
            await asyncio.sleep(self.gap_s)
            self.given += 1
            return {"type": "http.request", "body": self.pieces[self.given - 1],
                    "more_body": self.given < len(self.pieces)}
        await self.answered.wait()  # the body is whole: the connection's next event is its end
        return {"type": "http.disconnect"}

    async def send(self, message: dict) -> None:
        self.messages.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            self.answered.set()

    @property
    def status(self) -> int | None:
        """The answer's status; None before one started."""
        return next((m["status"] for m in self.messages if m["type"] == "http.response.start"), None)


def answer(app, method: str, path: str, body: bytes = b"") -> int | None:
    """One request through the ASGI `app` on a loop of its own; its answer's status."""
    client = Client(method, path, body)
    asyncio.run(app(client.scope(), client.receive, client.send))
    return client.status
