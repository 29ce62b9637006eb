"""How the load test classifies outcomes, spaces arrivals and reads /metrics (no server)."""
from __future__ import annotations

import aiohttp
import pytest

from benchmarks.loadtest.client import arrivals, classify_answer, classify_error, counter_deltas, parse_metrics


@pytest.mark.parametrize(("status", "retry_after", "outcome"), [
    (200, None, "ok"), (503, "1", "refused_with_retry_after"), (429, "2", "refused_with_retry_after"),
    (503, None, "refused_without_retry_after"), (500, None, "other"), (422, "1", "other")])
def test_answers(status, retry_after, outcome):
    assert classify_answer(status, retry_after) == outcome


def test_errors_tell_connect_from_after_accept():
    key = aiohttp.client_reqrep.ConnectionKey("127.0.0.1", 1, False, None, None, None, None)
    assert classify_error(aiohttp.ClientConnectorError(key, ConnectionRefusedError(111, "refused"))) == "connect_refused"
    assert classify_error(aiohttp.ServerDisconnectedError()) == "closed_unanswered"
    assert classify_error(aiohttp.ClientOSError(104, "Connection reset by peer")) == "reset_after_accept"
    assert classify_error(ConnectionResetError()) == "reset_after_accept"
    assert classify_error(TimeoutError()) == "client_timeout"
    assert classify_error(aiohttp.ClientPayloadError("cut")) == "other"


@pytest.mark.parametrize("poisson", [True, False])
def test_arrivals_keep_the_rate_and_repeat_with_the_seed(poisson):
    times = arrivals(50, 20, poisson, seed=1)
    assert times == arrivals(50, 20, poisson, seed=1) and times == sorted(times)
    assert 900 <= len(times) <= 1100 and 0 < times[0] and times[-1] < 20


def test_counter_deltas_by_label():
    before = parse_metrics('dialscore_refused_total{reason="overloaded"} 2\ndialscore_finished_late_total 1\n')
    after = parse_metrics('dialscore_refused_total{reason="overloaded"} 5\n'
                          'dialscore_refused_total{reason="deadline_exceeded"} 1\ndialscore_finished_late_total 1\n')
    assert counter_deltas(before, after, "dialscore_refused") == {"reason=deadline_exceeded": 1.0,
                                                                  "reason=overloaded": 3.0}
    assert counter_deltas(before, after, "dialscore_finished_late") == {"all": 0.0}
    assert counter_deltas({}, {}, "dialscore_finished_late") == {}
