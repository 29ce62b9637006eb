"""The answers the worker writes itself; over real gunicorn in tests/integration/test_gunicorn.py."""
import json
import socket

from service.server import answers as http_worker
from service.errors import Overloaded, request_id


def test_every_status_gunicorn_answers_gets_a_contract_error():
    for status in (400, 403, 414, 417, 431, 500, 501):
        error = http_worker.error_body(status, "gunicorn's words")["error"]
        assert set(error) == {"code", "message", "details"}
        assert error["details"] == {"reason": "gunicorn's words"}
        assert error["message"].endswith(".")
    assert http_worker.error_body(414, "")["error"]["code"] == "too_large"
    assert http_worker.error_body(431, "")["error"]["code"] == "too_large"
    assert http_worker.error_body(400, "")["error"]["details"] == {}
    assert http_worker.error_body(500, "")["error"]["code"] == "internal"


def _written(status: int, reason: str, mesg: str) -> bytes:
    """What write_contract_error sends, as the client reads it."""
    left, right = socket.socketpair()
    with left, right:
        http_worker.write_contract_error(left, status, reason, mesg)
        left.close()
        return right.makefile("rb").read()


def test_the_answer_is_http_with_a_json_body():
    raw = _written(431, "Request Header Fields Too Large", "too many")
    head, body = raw.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0] == "HTTP/1.1 431 Request Header Fields Too Large"
    assert "Content-Type: application/json" in lines and "Connection: close" in lines
    assert f"Content-Length: {len(body)}" in lines
    assert json.loads(body)["error"]["code"] == "too_large"


def test_the_status_line_carries_the_status_own_phrase():
    """gunicorn hands an unknown Transfer-Encoding's 501 the phrase of a 400."""
    raw = _written(501, "Bad Request", "Unsupported transfer coding: 'foo'")
    assert raw.startswith(b"HTTP/1.1 501 Not Implemented\r\n")
    assert json.loads(raw.split(b"\r\n\r\n", 1)[1])["error"]["code"] == "not_implemented"
    assert _written(414, "URI Too Long", "too long").startswith(b"HTTP/1.1 414 URI Too Long\r\n")  # gunicorn's own


def test_a_refusal_is_a_whole_answer_that_closes_and_keeps_the_request_id():
    error = Overloaded("Busy.", {"queued": 3}, retry_after=2)
    raw = http_worker.answer_bytes(error, "abc-1")
    head, body = raw.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0] == "HTTP/1.1 503 Service Unavailable"
    assert {"Connection: close", "Retry-After: 2", "X-Request-ID: abc-1", f"Content-Length: {len(body)}"} <= set(lines)
    assert json.loads(body) == {"error": {"code": "overloaded", "message": "Busy.", "details": {"queued": 3}}}
    assert request_id("abc-1") == "abc-1"
    assert request_id("bad id\r\nX: y") != "bad id\r\nX: y"
