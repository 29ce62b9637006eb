"""The socket a request thread reads: the loop's replay first, then one read deadline."""
import socket
import time

import pytest

from service.errors import RequestTimeout
from service.server.sockets import CONTINUE, RequestSocket


def test_reads_share_one_deadline_while_armed_and_writes_do_not():
    ours, theirs = socket.socketpair()
    wrapped = RequestSocket(ours)
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


def test_what_the_loop_read_is_replayed_before_the_socket_and_a_second_continue_is_swallowed():
    ours, theirs = socket.socketpair()
    wrapped = RequestSocket(ours)
    try:
        theirs.sendall(b"3456")
        wrapped.replay(b"012", continue_sent=True)
        assert wrapped.recv(2) == b"01"
        buffer = bytearray(8)
        assert wrapped.recv_into(buffer, 8) == 1 and buffer[:1] == b"2"
        assert wrapped.recv(8) == b"3456"  # then the socket
        wrapped.send(CONTINUE)  # gunicorn's own 100 Continue: the loop already sent one
        wrapped.send(b"x")
        assert theirs.recv(8) == b"x"
    finally:
        ours.close()
        theirs.close()
