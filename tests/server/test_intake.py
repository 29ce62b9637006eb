"""Where a request ends in what a connection has sent (the worker's loop reads until then)."""
from service.server.intake import HEAD_LIMIT, Scan, scan_request

LIMIT = 1 << 20


def test_a_request_with_a_length_is_whole_once_its_body_is_here():
    head = b"POST /rerank HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nX-Request-Timeout: 0.5\r\n\r\n"
    assert scan_request(head, LIMIT).state is Scan.WAITING
    partial = scan_request(head + b"ab", LIMIT)
    assert partial.state is Scan.WAITING and partial.body_started
    whole = scan_request(head + b"abcdeGET /next", LIMIT)
    assert whole.state is Scan.WHOLE and whole.end == len(head) + 5  # a pipelined request stays behind
    assert whole.head.method == "POST" and whole.head.path == "/rerank"
    assert whole.head.headers["x-request-timeout"] == "0.5"


def test_a_head_is_waited_for_and_a_query_is_not_the_path():
    assert scan_request(b"GET /healthz?x=1 HTTP/1.1\r\nHost:", LIMIT).state is Scan.WAITING
    scanned = scan_request(b"GET /healthz?x=1 HTTP/1.1\r\nHost: x\r\n\r\n", LIMIT)
    assert scanned.state is Scan.WHOLE and scanned.head.path == "/healthz"


def test_a_chunked_body_ends_at_its_last_chunk_and_trailers():
    head = b"POST /score HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert scan_request(head + b"4\r\nabcd\r\n", LIMIT).state is Scan.WAITING
    body = b"4\r\nabcd\r\n0\r\n\r\n"
    assert scan_request(head + body, LIMIT).end == len(head + body)
    trailers = b"4;ext=1\r\nabcd\r\n0\r\nX-T: y\r\n\r\n"
    assert scan_request(head + trailers, LIMIT).end == len(head + trailers)


def test_what_the_scan_does_not_follow_is_handed_over_for_gunicorn_to_answer():
    cases = [
        b"POST /score HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",  # smuggling: gunicorn's 400
        b"POST /score HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"POST /score HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
        b"POST /score HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",  # the app's 413 at once
        b"POST /score HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        b"GET / HTTP/1.1 extra\r\n\r\n",
        b"GET /" + b"a" * (HEAD_LIMIT + 1),  # gunicorn's 414
    ]
    for raw in cases:
        assert scan_request(raw, LIMIT).state is Scan.HAND_OVER, raw[:60]
    assert scan_request(b"POST /score HTTP/1.1\r\nContent-Length: 11\r\n\r\n", 10).state is Scan.HAND_OVER
