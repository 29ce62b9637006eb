"""The worker's pre-app error answers; over real gunicorn in tests/integration/test_gunicorn.py."""
import json
import socket

from service.server import worker as http_worker


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


def test_reads_share_one_deadline_while_armed_and_writes_do_not():
    import socket
    import time

    import pytest

    from service.errors import RequestTimeout
    from service.server.worker import ReadDeadlineSocket

    ours, theirs = socket.socketpair()
    wrapped = ReadDeadlineSocket(ours)
    try:
        theirs.sendall(b"ab")
        wrapped.arm(0.3)
        assert wrapped.recv(1) == b"a" and wrapped.recv(1) == b"b"  # data in hand is read at once
        started = time.monotonic()
        with pytest.raises(RequestTimeout) as raised:
            wrapped.recv(1)  # a stalled client: the rest of the 0.3 s, not a fresh 0.3 s per read
        assert time.monotonic() - started < 0.5 and raised.value.status == 408
        with pytest.raises(RequestTimeout):
            wrapped.recv(1)  # past the deadline: at once
        wrapped.sendall(b"x")  # writing is not held to it
        assert theirs.recv(1) == b"x" and ours.gettimeout() is None
        wrapped.disarm()
        theirs.sendall(b"c")
        assert wrapped.recv(1) == b"c" and wrapped.fileno() == ours.fileno()
    finally:
        ours.close()
        theirs.close()


def test_the_read_timeout_setting_is_checked(monkeypatch):
    import pytest

    from service.server.worker import read_timeout

    monkeypatch.delenv("DIALSCORE_READ_TIMEOUT", raising=False)
    assert read_timeout() == 10.0
    for bad in ("0", "-1", "nan", "soon"):
        monkeypatch.setenv("DIALSCORE_READ_TIMEOUT", bad)
        with pytest.raises(ValueError):
            read_timeout()
