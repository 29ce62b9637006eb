"""The worker's pre-app error answers; over real gunicorn in tests/integration/test_gunicorn.py."""
import json
import socket

from service import http_worker


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


def test_the_answer_is_http_with_a_json_body():
    left, right = socket.socketpair()
    with left, right:
        http_worker.write_contract_error(left, 431, "Request Header Fields Too Large", "too many")
        left.close()
        raw = right.makefile("rb").read()
    head, body = raw.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0] == "HTTP/1.1 431 Request Header Fields Too Large"
    assert "Content-Type: application/json" in lines and "Connection: close" in lines
    assert f"Content-Length: {len(body)}" in lines
    assert json.loads(body)["error"]["code"] == "too_large"
