"""Hostile framing against real gunicorn (`python -m service`): generated request lines, headers,
Content-Length and Transfer-Encoding values, chunk sizes and trailers, sent whole or in pieces,
pipelined and at once; and one named test per finding. Every answer is a 2xx, a 4xx or a 503 in the
contract's error form, or a clean close; no worker exits (the pids are unchanged); /healthz and a
/score answer after each. FRAMING_TEST_EXAMPLES sets the examples (60; a long run: 20000)."""
from __future__ import annotations

import http.client
import itertools
import json
import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import copy_store
from tests.live_server import metric, running_server, worker_pids

READ_TIMEOUT = 2.0
EXAMPLES = int(os.environ.get("FRAMING_TEST_EXAMPLES", "60"))
BODY = b'{"model": "length", "items": [{"context": ["hi"], "response": "hello"}]}'


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    store = copy_store(tmp_path_factory.mktemp("framing") / "model_store", ("length",))
    env = {"DIALSCORE_MODELS": "length", "DIALSCORE_READ_TIMEOUT": str(READ_TIMEOUT),
           "DIALSCORE_MAX_BODY_BYTES": "65536", "DIALSCORE_MAX_PENDING_BYTES": "100000"}
    with running_server(store, env) as srv:
        srv.pids, srv.store = worker_pids(srv.process.pid), store
        assert len(srv.pids) == 2
        yield srv


def exchange(port: int, raw: bytes, timeout: float = READ_TIMEOUT + 5) -> bytes:
    """Send `raw`, close our side, and read until the server closes (or `timeout`)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        try:
            conn.sendall(raw)
            conn.shutdown(socket.SHUT_WR)
        except OSError:  # the server answered and closed while we were still sending
            pass
        return read_all(conn)


def read_all(conn: socket.socket) -> bytes:
    answer = b""
    try:
        while chunk := conn.recv(65536):
            answer += chunk
    except ConnectionResetError:
        pass
    return answer


def assert_contract_answers(raw: bytes, bodiless: bool = False) -> list[int]:
    """Each answer in `raw` (pipelined ones too, after any `100 Continue`): 2xx, 4xx or 503, framed by
    Content-Length, errors as {"error": {code, message, details}} (on /v2, the Open Inference Protocol's
    {"error": message}); `bodiless`: the first answer is to HEAD, and carries no body where the app gave it."""
    statuses = []
    while raw:
        head, sep, rest = raw.partition(b"\r\n\r\n")
        assert sep, raw[:200]
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ")[1])
        if status == 100:
            raw = rest
            continue
        headers = dict(line.lower().split(": ", 1) for line in lines[1:])
        assert "transfer-encoding" not in headers, lines
        length = int(headers.get("content-length", "0"))
        bodiless = bodiless and (not rest or rest.startswith(b"HTTP/"))  # a 400 for an unparsed HEAD has its body
        body, raw = (b"", rest) if bodiless else (rest[:length], rest[length:])
        assert 200 <= status < 300 or 400 <= status < 500 or status == 503, lines
        if status >= 400 and not bodiless:
            error = json.loads(body)["error"]
            assert (isinstance(error, str) and error) or (set(error) == {"code", "message", "details"}
                                                          and error["code"] and error["message"]), error
        statuses.append(status)
        bodiless = False
    return statuses


def assert_still_serving(server, scoring: bool = False) -> None:
    """/healthz answers and no worker was replaced; with `scoring`, a /score is answered 200 too (no ticket,
    thread or held byte leaked in its lane), after up to two refusals left from the load just sent."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", "/healthz")
    assert conn.getresponse().status == 200
    conn.close()
    assert worker_pids(server.process.pid) == server.pids
    for _ in range(3 if scoring else 0):
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        conn.request("POST", "/score", body=BODY, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        answer = (response.status, response.read())
        conn.close()
        if answer[0] == 200:
            return
        time.sleep(0.5)
    assert not scoring, answer


TOKEN = st.text(st.sampled_from("abcxyz-_!#$%&'*+.^`|~0123456789"), min_size=1, max_size=12)
OCTETS = st.binary(max_size=40)
LINE_BYTES = st.sampled_from([b"\r\n", b"\n", b"\r", b"", b" ", b"\x00", b"\xb2", b"\xff", b"\t", b":", b"%", b"/"])


@st.composite
def requests(draw) -> bytes:
    method = draw(st.sampled_from([b"POST", b"GET", b"HEAD", b"PUT", b"OPTIONS", b"P\xd6ST", b""]))
    target = draw(st.sampled_from([b"/score", b"/%73core", b"http://h/score", b"//score", b"/healthz", b"*",
                                   b"/score?x=1", b"/sc\x00ore", b"/" + b"a" * 5000]))
    version = draw(st.sampled_from([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/9.9", b"HTTP/1.1 ", b"http/1.1", b""]))
    headers = [b"Host: x"] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.one_of(TOKEN.map(str.encode), OCTETS))
        headers.append(name + draw(st.sampled_from([b": ", b":", b" : ", b""])) + draw(OCTETS))
    body = BODY if draw(st.booleans()) else draw(OCTETS)
    framing = draw(st.sampled_from(["length", "chunked", "both", "none", "bad-length"]))
    if framing in ("length", "both"):
        headers.append(b"Content-Length: " + str(len(body) + draw(st.integers(-3, 3))).encode())
    if framing == "bad-length":
        headers.append(b"Content-Length: " + draw(st.sampled_from([b"\xb2", b"\xb9", b"-1", b"1e3", b"0x10", b" 5",
                                                                   b"99999999999999999999", b"5, 6"])))
    if framing in ("chunked", "both"):
        headers.append(b"Transfer-Encoding: " + draw(st.sampled_from([b"chunked", b"gzip, chunked", b"chunked, gzip",
                                                                      b"identity", b"\xb2", b"chunked "])))
        size = draw(st.sampled_from([b"%x" % len(body), b"-1", b"\xb2", b"fffffffffffffffffff", b"0", b"%x;e=1" % len(body)]))
        trailers = b"".join(draw(st.lists(st.sampled_from([b"X-T: 1\r\n", b"Bad trailer\r\n", b"X: " + b"y" * 300 + b"\r\n"]),
                                          max_size=3)))
        body = size + b"\r\n" + body + b"\r\n0\r\n" + trailers + b"\r\n"
    end = draw(LINE_BYTES)
    head = method + b" " + target + b" " + version + end + b"".join(h + end for h in headers) + end
    return head + body


HEADERS = st.sampled_from([
    b"X-Request-Timeout: 0", b"X-Request-Timeout: nan", b"X-Request-Timeout: 1e400", b"X-Request-Timeout: 0.001",
    b"X-Request-Timeout: \xb2", b"X-Request-ID: " + b"a" * 300, b"X-Request-ID: \xff\xfe", b"Expect: 100-continue",
    b"Expect: bogus", b"Connection: close", b"Connection: keep-alive", b"Connection: upgrade", b"Upgrade: websocket",
    b"Upgrade: h2c", b"Content-Type: text/plain", b"Authorization: Bearer x", b"Host: ", b"Transfer-Encoding: chunked",
    b"Content-Length: 5", b"Content-Length: 5, 5", b"X-Forwarded-For: \x00"])
TARGETS = [b"/rerank", b"/score", b"/v2/models/length/infer", b"/v2/models/%ff/infer", b"/v2/models/length",
           b"/correlate", b"/human-eval", b"/metrics", b"/readyz", b"/openapi.json", b"/models", b"/%2e%2e/score",
           b"/score/", b"/sc%6fre?model=x"]
BODIES = [b"", b"{}", b"null", BODY, b'{"model": ["length", "length"], "items": []}', b'{"model": "' + b"m" * 5000 + b'"}',
          b'{"models": [' + b"1," * 2000 + b'1]}', b'{"model": "length", "candidates": ["a"], "context": ["hi"]}',
          b'{"model": "length", "items": [{"context": ["hi"], "response": "\xff"}]}', b"[" * 5000 + b"]" * 5000]


@st.composite
def well_formed(draw) -> bytes:
    """HTTP/1.1 or 1.0 the parser takes, with the headers, paths and bodies the service reads."""
    method = draw(st.sampled_from([b"POST", b"GET", b"OPTIONS", b"DELETE"]))
    headers = [b"Host: x"] + draw(st.lists(HEADERS, max_size=4))
    body = draw(st.sampled_from(BODIES))
    if any(h.lower().startswith(b"transfer-encoding") for h in headers):
        body = b"%x\r\n" % len(body) + body + b"\r\n0\r\n\r\n" if body else b"0\r\n\r\n"
    elif not any(h.lower().startswith(b"content-length") for h in headers):
        headers.append(b"Content-Length: %d" % len(body))
    version = draw(st.sampled_from([b" HTTP/1.1\r\n", b" HTTP/1.0\r\n"]))
    return method + b" " + draw(st.sampled_from(TARGETS)) + version + b"\r\n".join(headers) + b"\r\n\r\n" + body


# Several requests on one connection, and where it is cut into writes; HEAD is left out of pipelines
# (its answers carry a Content-Length and no body, so they cannot be told apart in one stream).
CONNECTIONS = st.tuples(st.lists(st.one_of(requests(), well_formed()).filter(lambda r: not r.startswith(b"HEAD ")),
                                 min_size=1, max_size=3),
                        st.lists(st.integers(0, 10_000), max_size=6), st.booleans())


def send_in_pieces(port: int, messages: list[bytes], cuts: list[int], half_close: bool) -> bytes:
    """Send the messages cut at `cuts` (a pause between pieces); then half-close, or ask for /healthz with
    `Connection: close`; read until the server closes."""
    raw = b"".join(messages) + (b"" if half_close else b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=READ_TIMEOUT + 10) as conn:
        try:
            start = 0
            for cut in sorted({c % (len(raw) + 1) for c in cuts}) + [len(raw)]:
                conn.sendall(raw[start:cut])
                start = cut
                time.sleep(0.002)
            if half_close:
                conn.shutdown(socket.SHUT_WR)
        except OSError:  # the server answered and closed while we were still sending
            pass
        return read_all(conn)


SLOW = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                        HealthCheck.too_slow])
@given(raw=requests())
def test_hostile_framing_never_costs_a_worker_and_is_answered_in_the_contracts_form(server, raw):
    assert_contract_answers(exchange(server.port, raw), bodiless=raw.startswith(b"HEAD "))
    assert_still_serving(server)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=SLOW)
@given(connection=CONNECTIONS)
def test_pipelined_and_cut_requests_are_answered_in_order_in_the_contracts_form(server, connection):
    assert_contract_answers(send_in_pieces(server.port, *connection))
    assert_still_serving(server, scoring=True)


@settings(max_examples=max(EXAMPLES // 20, 3), deadline=None, suppress_health_check=SLOW)
@given(connections=st.lists(CONNECTIONS, min_size=4, max_size=24))
def test_hostile_connections_at_once_leave_every_lane_serving(server, connections):
    with ThreadPoolExecutor(len(connections)) as pool:
        for answers in pool.map(lambda c: send_in_pieces(server.port, *c), connections):
            assert_contract_answers(answers)
    assert_still_serving(server, scoring=True)


def status_and_body(raw: bytes) -> tuple[int, bytes]:
    assert assert_contract_answers(raw), raw
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


def escaped(target: bytes) -> bytes:
    """The target with its first letter percent-escaped: the same path to the app."""
    at = next(i for i, c in enumerate(target) if chr(c).isalpha() and b"%" not in target[max(0, i - 2):i])
    return target[:at] + b"%%%02X" % target[at] + target[at + 1:]


@settings(max_examples=max(EXAMPLES // 2, 10), deadline=None, suppress_health_check=SLOW)
@given(method=st.sampled_from([b"POST", b"GET", b"OPTIONS"]), body=st.sampled_from(BODIES),
       target=st.sampled_from([t for t in TARGETS if t != b"/metrics"]), parts=st.integers(1, 4),
       variant=st.sampled_from(["chunked", "in parts", "awaiting 100-continue", "absolute-form", "escaped"]))
def test_a_request_gets_the_same_answer_however_it_is_framed_or_spelled(server, method, target, body, parts, variant):
    """Framing and spelling are the server's business: the app's answer depends on the path and the
    body's bytes alone, whether the body comes chunked, in `parts` writes or after `100 Continue`, the
    target absolute or escaped."""
    def head(target: bytes) -> bytes:
        return method + b" " + target + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    step = max(1, -(-len(body) // parts))
    pieces = [body[i:i + step] for i in range(0, len(body), step)]
    plain = head(target) + b"Content-Length: %d\r\n\r\n" % len(body) + body
    if variant == "chunked":
        other = exchange(server.port, head(target) + b"Transfer-Encoding: chunked\r\n\r\n"
                         + b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n")
    elif variant == "awaiting 100-continue":
        with socket.create_connection(("127.0.0.1", server.port), timeout=READ_TIMEOUT + 5) as conn:
            conn.sendall(head(target) + b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
            other = read_answer(conn)  # `100 Continue`, or the answer itself where the app reads no body
            if other.startswith(b"HTTP/1.1 100 "):
                conn.sendall(body)
                other = read_answer(conn)
    elif variant == "in parts":
        other = send_in_pieces(server.port, [plain], [len(plain) - len(body) + sum(map(len, pieces[:i]))
                                                     for i in range(len(pieces))], half_close=True)
    else:
        spelled = b"http://h" + target if variant == "absolute-form" else escaped(target)
        other = exchange(server.port, head(spelled) + b"Content-Length: %d\r\n\r\n" % len(body) + body)
    answers = status_and_body(other), status_and_body(exchange(server.port, plain))
    # a 503 is admission's, by the worker's load and timing (tight limits in a long run make them likely)
    assert answers[0] == answers[1] or 503 in (answers[0][0], answers[1][0]), answers


def test_the_server_answers_as_the_app_alone_does(server):
    """uvicorn's scope and a2wsgi's environ are the server's business: for each target (query strings,
    non-ASCII and escaped paths, unrouted ones) and body, the live server's status and body are those
    of the same app called in this process (Flask's test client)."""
    from urllib.parse import unquote

    from service.app import create_app

    alone = create_app({"model_store": server.store, "models": ["length"], "max_body_bytes": 65536,
                        "load_sync": True}).test_client()
    targets = [t for t in TARGETS if t not in (b"/metrics", b"/readyz")] + [
        b"/models?x=%C3%A9&x=2", b"/%C3%A9t%C3%A9", b"/score?model=length", b"/healthz?", b"/v2/models/length/ready"]
    for method, target, body in itertools.product((b"GET", b"POST", b"OPTIONS"), targets, (b"", b"{}", BODY)):
        raw = exchange(server.port, method + b" " + target + b" HTTP/1.1\r\nHost: x\r\nContent-Type: "
                       b"application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        path, _, query = target.decode().partition("?")
        expected = alone.open(unquote(path), method=method.decode(), query_string=query, data=body,
                              content_type="application/json")
        assert status_and_body(raw) == (expected.status_code, expected.data), (method, target, body)


def test_a_content_length_of_superscript_two_is_400_and_the_worker_lives(server):
    """`Content-Length: ²` (0xB2) passed `str.isdigit()` and `int()` raised on the worker's loop: each
    such packet cost a worker and a model reload."""
    for value in (b"\xb2", b"\xb9", "²".encode()):
        raw = exchange(server.port, b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Length: " + value + b"\r\n\r\n{}")
        assert assert_contract_answers(raw) == [400]
    assert_still_serving(server)


def test_chunked_trailers_are_bounded(server):
    """2 MiB of trailers after a chunked body: refused 431 (h11 bounds the section at max_head_bytes), not held."""
    trailers = b"".join(b"X-T%d: %s\r\n" % (i, b"y" * 1000) for i in range(2048))
    raw = exchange(server.port, b"POST /score HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                   + b"%x\r\n" % len(BODY) + BODY + b"\r\n0\r\n" + trailers + b"\r\n")
    assert not raw or assert_contract_answers(raw)[-1] == 431  # the 200 may have gone out before the trailers
    assert_still_serving(server)


@pytest.mark.parametrize("pieces", [1, 2])
def test_a_head_over_max_head_bytes_is_431_however_it_arrives(server, pieces):
    """40 fields of 1,000 bytes, each within the field limits: 200 sent in one piece, but 400 "not valid
    HTTP" in two, from h11's bound on a head still arriving (then the listed limits' sum plus 16 KiB)."""
    fields = [b"X-H%d: %s\r\n" % (i, b"v" * 993) for i in range(40)]
    raw = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + b"".join(fields) + b"\r\n"
    assert len(raw) > 32768  # the default DIALSCORE_MAX_HEAD_BYTES
    with socket.create_connection(("127.0.0.1", server.port), timeout=READ_TIMEOUT + 5) as conn:
        for piece in (raw[:30000], raw[30000:]) if pieces == 2 else (raw,):
            conn.sendall(piece)
            time.sleep(0.2)
        answer = read_all(conn)
    assert assert_contract_answers(answer) == [431] and b'"max_head_bytes": 32768' in answer, answer[:300]
    small = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"".join(fields[:20]) + b"\r\n"  # about 20 KB, under it
    assert assert_contract_answers(exchange(server.port, small)) == [200]
    assert_still_serving(server)


@pytest.mark.parametrize("target", ["/{}", "/healthz?{}"])
def test_a_request_line_of_exactly_max_request_line_bytes_is_taken_and_one_more_is_414(server, target):
    """The line was counted with its CRLF and without a query's `?`: a path of exactly 4094 bytes' line was
    refused, the cap was 4092 for a path and 4093 with a query."""
    for length, status in ((4094, {200, 404}), (4095, {414})):
        pad = length - len(f"GET {target.format('')} HTTP/1.1")
        line = f"GET {target.format('a' * pad)} HTTP/1.1".encode()
        assert len(line) == length
        statuses = assert_contract_answers(exchange(server.port, line + b"\r\nHost: x\r\n\r\n"))
        assert len(statuses) == 1 and statuses[0] in status, (length, statuses)


def test_a_body_sent_a_byte_at_a_time_does_not_hold_the_probes(server):
    """Each read rescanned the whole buffer on the loop that also answers the probes."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as slow:
        slow.sendall(b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Length: 60000\r\n\r\n")
        worst = 0.0
        for _ in range(300):
            slow.sendall(b"x")
        for _ in range(5):
            started = time.monotonic()
            assert_still_serving(server)
            worst = max(worst, time.monotonic() - started)
    assert worst < 0.5, worst


@pytest.mark.parametrize("target", [b"/%73core", b"http://h/score", b"http://h/%73core"])
def test_every_spelling_of_a_scoring_path_passes_admission(server, target):
    """`POST /%73core` and absolute-form targets reached the scoring code outside admission."""
    raw = exchange(server.port, b"POST " + target + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"X-Request-Timeout: soon\r\nContent-Length: %d\r\n\r\n" % len(BODY) + BODY)
    # admission reads X-Request-Timeout: a bad value is its 400, so the request went through it
    assert assert_contract_answers(raw) == [400] and b"X-Request-Timeout" in raw, raw


@pytest.mark.parametrize("target", [b"http://h/score", b"HTTPS://h:8000/%73core?x=1", b"http://h/sc%3Fore"])
def test_an_absolute_form_target_is_served_as_the_path_it_names(server, target):
    """RFC 9112 3.2.2: a server must accept it. uvicorn hands the app the whole target as its path, which
    the app answered 404 (`No endpoint /http://h/score`)."""
    raw = exchange(server.port, b"POST " + target + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(BODY) + BODY)
    expected = [404] if b"%3F" in target else [200]  # an encoded `?` is part of the path: `/sc?ore`
    assert assert_contract_answers(raw) == expected, raw


def test_a_chunked_body_is_scored_as_the_body_it_carries(server):
    """werkzeug read a chunked body as empty (a2wsgi sets no wsgi.input_terminated): 400 `bad_json`."""
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (BODY[:10], BODY[10:])) + b"0\r\n\r\n"
    raw = exchange(server.port, b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Transfer-Encoding: chunked\r\n\r\n" + chunks)
    assert assert_contract_answers(raw) == [200] and b'"scores"' in raw, raw


def test_a_body_framed_both_ways_is_read_chunked_and_ends_the_connection(server):
    """RFC 9112 6.1: Transfer-Encoding wins, and the server must close after answering (a proxy in front
    may have framed the body by its Content-Length: what follows could be another request smuggled)."""
    chunks = b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY)
    with socket.create_connection(("127.0.0.1", server.port), timeout=READ_TIMEOUT + 5) as conn:
        conn.sendall(b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        raw = read_all(conn)
    assert assert_contract_answers(raw) == [200] and b"connection: close" in raw.lower(), raw


def test_a_refusal_by_the_front_is_counted_under_the_apps_route(server):
    """A /v2 scoring request refused before the app reads it (a bad X-Request-Timeout) is counted where
    the app counts that route's answers, not under "other"."""
    target = b"/v2/models/%6cength/infer"
    raw = exchange(server.port, b"POST " + target + b" HTTP/1.1\r\nHost: x\r\nX-Request-Timeout: soon\r\n"
                   b"Content-Length: 2\r\n\r\n{}")
    assert raw.startswith(b"HTTP/1.1 400"), raw  # in the Open Inference Protocol's error form
    assert metric(server.port, 'dialscore_requests_total{endpoint="/v2/models/<name>/infer",method="POST",status="400"}')


def test_an_upgrade_to_websocket_is_refused_in_the_contracts_form(server):
    """With a WebSocket library installed (wsproto comes with the browser test's selenium), uvicorn
    handed `Upgrade: websocket` to it: an empty 400, outside the contract, admission and the access log."""
    raw = exchange(server.port, b"POST /score HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: websocket\r\n"
                   b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                   b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(BODY) + BODY)
    assert assert_contract_answers(raw) == [400] and b'"bad_request"' in raw and b"WebSocket" in raw, raw
    assert "WebSocket library" not in server.log()  # uvicorn's advice to install one, for any client's request


def test_answers_to_malformed_http_are_counted_as_errors(server):
    """The 400 written for what h11 cannot parse, and the 408 for a head that stalls, are counted in
    dialscore_errors_total and dialscore_requests_total and logged, as every other answer is."""
    errors = ('dialscore_errors_total{code="bad_request"}', 'dialscore_errors_total{code="request_timeout"}',
              'dialscore_requests_total{endpoint="unmatched",method="other",status="400"}',
              'dialscore_requests_total{endpoint="unmatched",method="other",status="408"}')
    before = [metric(server.port, name) for name in errors]
    logged = server.log().count('"message": "- - 400"')
    assert assert_contract_answers(exchange(server.port, b"NOT HTTP\r\n\r\n")) == [400]
    with socket.create_connection(("127.0.0.1", server.port), timeout=READ_TIMEOUT + 5) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # the head never ends
        assert assert_contract_answers(read_all(conn)) == [408]
    assert [metric(server.port, name) - was for name, was in zip(errors, before)] == [1, 1, 1, 1]
    assert server.log().count('"message": "- - 400"') == logged + 1, server.log()[-2000:]  # an access-log line, as for any answer

def test_an_http_2_preface_gets_one_answer_and_the_connection_ends(server):
    """The preface's request line was refused without `Connection: close`, so the rest of the preface was
    read as a second request and answered a second 400."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=READ_TIMEOUT + 5) as conn:
        conn.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")  # the client waits for the server's SETTINGS
        raw = read_all(conn)
    assert assert_contract_answers(raw) == [400] and b"connection: close" in raw.lower(), raw


def test_an_answer_to_unparsable_http_has_the_heads_of_every_answer(server):
    """Written outside uvicorn's answering path, it had no reason phrase and no Date."""
    head = exchange(server.port, b"NOT HTTP\r\n\r\n").partition(b"\r\n\r\n")[0].lower()
    assert head.startswith(b"http/1.1 400 bad request\r\n") and b"\r\ndate: " in head, head



def test_an_upgrade_to_h2c_is_served_as_http_1_1(server):
    raw = exchange(server.port, b"POST /score HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: h2c\r\n"
                   b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(BODY) + BODY)
    assert assert_contract_answers(raw) == [200], raw


def read_answer(conn: socket.socket) -> bytes:
    """One answer's head and body (Content-Length framed), without waiting for the connection to end."""
    raw = b""
    while b"\r\n\r\n" not in raw and (chunk := conn.recv(65536)):
        raw += chunk
    head = raw.partition(b"\r\n\r\n")[0].lower()
    length = int(head.partition(b"content-length: ")[2].partition(b"\r\n")[0] or 0)
    while len(raw) < len(head) + 4 + length and (chunk := conn.recv(65536)):
        raw += chunk
    return raw


def test_a_body_too_large_awaiting_100_continue_is_refused_without_inviting_it(server):
    """`Expect: 100-continue` with a Content-Length over the limit: the drain's first read made uvicorn
    send `100 Continue`, inviting the body it then dropped; now the 413 comes first, and closes."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=READ_TIMEOUT + 5) as conn:
        conn.sendall(b"POST /score HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 10000000\r\n\r\n")
        raw = read_answer(conn)
        assert raw.startswith(b"HTTP/1.1 413") and b"connection: close" in raw.lower(), raw
        assert conn.recv(65536) == b""


def test_an_empty_body_awaiting_100_continue_is_answered_without_inviting_it(server):
    """`Expect: 100-continue` with `Content-Length: 0`: the front's first read of the (empty) body made
    uvicorn send `100 Continue` before the answer, and a client reading one answer per read saw the
    100 and the answer arrive together, some of the time, and misread them."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=READ_TIMEOUT + 5) as conn:
        conn.sendall(b"POST /score HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 0\r\n\r\n")
        raw = read_answer(conn)
    assert raw.startswith(b"HTTP/1.1 400") and b"empty" in raw, raw


def test_an_answer_before_the_body_of_a_client_awaiting_100_continue_ends_the_connection(server):
    """A refusal before the body (a bad X-Request-Timeout) kept the connection: the client, answered
    without `100 Continue`, sends no body, and its next request was read as that body (a 400)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=READ_TIMEOUT + 5) as conn:
        conn.sendall(b"POST /score HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nX-Request-Timeout: soon\r\n"
                     b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(BODY))
        raw = read_answer(conn)
        assert raw.startswith(b"HTTP/1.1 400") and b"X-Request-Timeout" in raw, raw
        assert b"connection: close" in raw.lower() and conn.recv(65536) == b"", raw


def test_bytes_past_a_request_that_closes_the_connection_leave_its_answer_whole(server):
    """A second request pipelined behind `Connection: close`, arriving while the first is computed: h11
    refuses bytes past a closing request, and the 400 for them replaced or cut into the first answer."""
    items = json.dumps({"model": "length", "items": [{"context": ["hi"], "response": "hello"}] * 500}).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=READ_TIMEOUT + 5) as conn:
        conn.sendall(b"POST /score HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(items) + items)
        time.sleep(0.005)
        try:
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        except OSError:  # the first answer was sent and the connection closed already
            pass
        raw = read_all(conn)
    assert assert_contract_answers(raw) == [200] and len(json.loads(raw.partition(b"\r\n\r\n")[2])["scores"]) == 500


def test_a_client_that_half_closes_after_its_request_gets_the_answer(server):
    """uvicorn let asyncio close the connection at the client's FIN, dropping the answer under way."""
    raw = exchange(server.port, b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\n\r\n" % len(BODY) + BODY)
    assert assert_contract_answers(raw) == [200]


def test_bodies_still_arriving_are_bounded_per_worker_as_a_sum(server):
    """Four uploads of 60 KB each (under the 64 KiB body limit): two on one worker pass its 100,000
    bytes, and one of them gets 503 `overloaded`, not a place in memory."""
    uploads = [socket.create_connection(("127.0.0.1", server.port), timeout=READ_TIMEOUT + 5) for _ in range(4)]
    try:
        for conn in uploads:
            conn.sendall(b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Length: 65000\r\n\r\n" + b" " * 60000)
        answers = [read_all(conn) for conn in uploads]
    finally:
        for conn in uploads:
            conn.close()
    statuses = [assert_contract_answers(raw) for raw in answers if raw]
    assert [503] in statuses and all(s in ([503], [408]) for s in statuses), statuses
    assert any(b'"overloaded"' in raw for raw in answers)
    assert_still_serving(server)


def test_the_cost_table_keys_only_served_models():
    """Admission's cost table gained an entry for every distinct `model` string a client sent."""
    from service.server.admission import named_models
    from service.server.front import SHARED_COST_KEY, Front

    class Store:
        scorers = {"length": None, "bleu4": None}

    front = Front.__new__(Front)
    front.store = Store()
    assert front.cost_key(named_models(b'{"model": "length"}')) == "length"
    assert front.cost_key(named_models(b'{"models": ["length", "bleu4"]}')) == "length,bleu4"
    keys = {front.cost_key(named_models(json.dumps({"model": f"no-such-model-{i}"}).encode())) for i in range(1000)}
    assert keys == {SHARED_COST_KEY}
    assert front.cost_key(["length", "nope"]) == front.cost_key(named_models(b'{"models": [not json]}')) == SHARED_COST_KEY
