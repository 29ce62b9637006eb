"""Which requests a worker takes on and when each starts, on a clock of the test's own."""
import pytest

from service.server.admission import Admission, Ticket


def _ticket(arrived: float, budget: float, path: str = "/rerank", size: int = 5000) -> Ticket:
    return Ticket(path, size, arrived, arrived + budget)


def _measured(admission: Admission, seconds: float, path: str = "/rerank") -> None:
    ticket = _ticket(0.0, 100.0, path)
    assert admission.offer(ticket, 0.0) is None
    started, _ = admission.due(0.0)
    assert started == [ticket]
    admission.finished(ticket, seconds)


def test_a_free_thread_starts_a_request_at_once_and_learns_its_time():
    admission = Admission(threads=1, max_queue=4)
    _measured(admission, 0.4)
    ticket = _ticket(10.0, 1.0)
    assert admission.expected(ticket) == 0.4
    assert admission.offer(ticket, 10.0) is None and admission.due(10.0)[0] == [ticket]


def test_work_that_cannot_finish_within_its_budget_is_refused_at_once_with_retry_after():
    admission = Admission(threads=1, max_queue=4)
    _measured(admission, 0.4)
    running = _ticket(10.0, 1.0)
    admission.offer(running, 10.0)
    admission.due(10.0)
    refusal = admission.offer(_ticket(10.05, 1.0), 10.05)  # waits about 0.35 s, then runs 0.4: too close
    assert refusal is not None and refusal.code == "overloaded" and refusal.headers["Retry-After"] == "1"
    assert refusal.details["running"] == 1 and refusal.details["budget_s"] == 1.0
    assert admission.offer(_ticket(10.05, 5.0), 10.05) is None  # a larger budget is queued


def test_a_budget_spent_while_the_request_arrived_is_deadline_exceeded_even_on_an_idle_worker():
    """A body sent slowly spends the budget (it counts from the first byte): the idle worker answered 503
    `overloaded`, pointing the client at load rather than at its upload."""
    admission = Admission(threads=1, max_queue=4)
    refusal = admission.offer(_ticket(0.0, 2.0), 3.0)
    assert refusal is not None and refusal.code == "deadline_exceeded", refusal
    assert refusal.details["waited_s"] == 3.0 and refusal.details["budget_s"] == 2.0
    assert "began to arrive" in refusal.message and not admission.queue and not admission.running


def test_a_full_queue_refuses_whatever_the_budget():
    admission = Admission(threads=1, max_queue=1)
    _measured(admission, 0.1)
    admission.offer(_ticket(1.0, 60.0), 1.0)
    admission.due(1.0)
    assert admission.offer(_ticket(1.0, 60.0), 1.0) is None
    refusal = admission.offer(_ticket(1.0, 60.0), 1.0)
    assert refusal is not None and refusal.details["max_queue"] == 1


def test_a_queue_of_zero_serves_what_a_free_thread_takes_and_refuses_what_would_wait():
    admission = Admission(threads=2, max_queue=0)
    _measured(admission, 0.1)
    for arrived in (1.0, 1.0):
        assert admission.offer(_ticket(arrived, 60.0), arrived) is None and admission.due(arrived)[0]
    refusal = admission.offer(_ticket(1.0, 60.0), 1.0)
    assert refusal is not None and refusal.details["max_queue"] == 0 and not admission.queue


def test_a_kind_not_measured_yet_is_bound_by_the_queue_when_no_thread_is_free():
    """Work ahead expected to take no time is not a free thread: a new kind still meets max_queue."""
    admission = Admission(threads=1, max_queue=1)
    _measured(admission, 0.0)
    assert admission.offer(_ticket(0.0, 1.0), 0.0) is None and admission.due(0.0)[0]  # runs
    assert admission.offer(_ticket(0.0, 1.0), 0.0) is None  # queued: the queue is full
    refusal = admission.offer(_ticket(0.0, 1.0, path="/score"), 0.0)
    assert refusal is not None and refusal.details["max_queue"] == 1 and len(admission.queue) == 1


def test_a_queued_request_that_can_no_longer_finish_is_dropped_not_started():
    admission = Admission(threads=1, max_queue=4)
    _measured(admission, 0.4)
    first, second = _ticket(1.0, 10.0), _ticket(1.0, 2.0)
    admission.offer(first, 1.0)
    admission.due(1.0)
    assert admission.offer(second, 1.0) is None
    admission.finished(first, 2.9)  # ran far longer than expected: the second has 0.1 s left
    started, dropped = admission.due(2.9)
    assert started == [] and [t for t, _ in dropped] == [second]
    assert dropped[0][1].code == "deadline_exceeded" and dropped[0][1].details["waited_s"] == 1.9


def test_a_kind_not_measured_yet_starts_on_a_free_thread_and_queues_only_with_time_to_spare():
    admission = Admission(threads=1, max_queue=4)
    first = _ticket(0.0, 1.0)
    assert admission.offer(first, 0.0) is None and admission.due(0.0)[0] == [first]  # nothing to go by: try
    refusal = admission.offer(_ticket(0.1, 1.0), 0.1)  # behind work of unknown length, with 1 s to spare
    assert refusal is not None and refusal.code == "overloaded"
    assert admission.offer(_ticket(0.1, 30.0), 0.1) is None  # a generous budget waits


def test_costs_are_learnt_per_endpoint_and_model_and_scale_with_the_body():
    from service.server.admission import named_models

    assert named_models(b'{"model": "unref-minilm", "context": []}') == ["unref-minilm"]
    assert named_models(b'{"items": [], "models": ["adem", "length"]}') == ["adem", "length"]
    assert named_models(b'{"human": [1, 2]}') == []
    admission = Admission(threads=1, max_queue=4)
    heavy = Ticket("/score", 1 << 20, 0.0, 100.0, model='"minilm-cosine"')
    admission.offer(heavy, 0.0)
    admission.due(0.0)
    admission.finished(heavy, 8.0)
    light = Ticket("/score", 300, 9.0, 10.0, model='"length"')
    assert admission.estimate(light) is None  # another model's time says nothing of this one
    smaller = Ticket("/score", 1 << 18, 9.0, 10.0, model='"minilm-cosine"')
    assert admission.estimate(smaller) == 2.0  # a quarter of the body, a quarter of the time


def test_retry_after_is_at_least_one_second_even_with_no_wait():
    """A request refused with a free thread (its expected run alone passes its budget) has no wait ahead:
    Retry-After 0 would invite every client back at once."""
    from service.server.admission import retry_after

    assert retry_after(0.0) == 1 and retry_after(0.2) == 1 and retry_after(1.2) == 2 and retry_after(1e9) == 30
    admission = Admission(threads=2, max_queue=4)
    first = Ticket("/score", 100, 0.0, 5.0)
    admission.offer(first, 0.0)
    admission.due(0.0)
    admission.finished(first, 0.4)  # this kind takes 0.4 s
    refusal = admission.offer(Ticket("/score", 100, 1.0, 1.3), 1.0)
    assert refusal is not None and refusal.details["expected_wait_s"] == 0.0 and refusal.headers["Retry-After"] == "1"


def test_expected_times_are_moving_averages_weighting_the_newest_by_smoothing():
    """After 1 s then 2 s, a kind is expected to take 0.8 x 1 + 0.2 x 2 = 1.2 s; a request running past its
    expected time still counts a tenth of it as work ahead."""
    from service.server.admission import SMOOTHING

    admission = Admission(threads=1, max_queue=4)
    for took in (1.0, 2.0):
        ticket = Ticket("/score", 100, 0.0, 50.0)
        admission.offer(ticket, 0.0)
        admission.due(0.0)
        admission.finished(ticket, took)
    expected = (1 - SMOOTHING) * 1.0 + SMOOTHING * 2.0
    assert admission.expected(Ticket("/score", 100, 0.0, 50.0)) == pytest.approx(expected)
    running = Ticket("/score", 100, 1.0, 50.0)
    admission.offer(running, 1.0)
    admission.due(1.0)
    assert admission.start_wait(11.0) == pytest.approx(0.1 * expected)  # 10 s in, far past 1.2 s


def test_a_kind_not_measured_lately_is_measured_again_and_the_new_time_replaces_the_old():
    """One 2 s request kept refusing that kind's 1 s budgets on an idle worker for good: a refusal
    measures nothing. After REMEASURE_S a free thread takes one, and its time replaces the average."""
    from service.server.admission import REMEASURE_S

    admission = Admission(threads=1, max_queue=4)
    costly = Ticket("/correlate", 100, 1.0, 60.0)
    admission.offer(costly, 1.0)
    admission.due(1.0)
    admission.finished(costly, 3.0)  # 2 s
    assert admission.offer(Ticket("/correlate", 100, 4.0, 5.0), 4.0) is not None  # expected 2 s, budget 1 s
    later = 3.0 + REMEASURE_S + 0.1
    cheap = Ticket("/correlate", 100, later, later + 1.0)
    assert admission.offer(cheap, later) is None
    admission.due(later)
    admission.finished(cheap, later + 0.05)
    assert admission.expected(cheap) == pytest.approx(0.05)
    assert admission.offer(Ticket("/correlate", 100, later + 1, later + 2), later + 1) is None
    busy = Admission(threads=1, max_queue=4)  # measured lately: the average is kept
    for start, took in ((1.0, 2.0), (4.0, 0.05)):
        ticket = Ticket("/correlate", 100, start, start + 60)
        busy.offer(ticket, start)
        busy.due(start)
        busy.finished(ticket, start + took)
    assert busy.expected(ticket) == pytest.approx(0.8 * 2.0 + 0.2 * 0.05)


def test_a_correlates_resamples_part_its_cost_classes():
    """At one body size a bootstrap of 10,000 resamples takes a thousand times one of 10."""
    from service.server.admission import resamples_class

    assert resamples_class(b'{"human": [1], "resamples": 10}') == "~4"
    assert resamples_class(b'{"resamples":10000, "human": [1]}') == "~14"
    assert resamples_class(b'{"human": [1], "note": "\\"resamples\\": 5"}') == ""  # text, not a key
    assert resamples_class(b'{"human": [1]}') == ""


def test_a_body_far_larger_than_any_measured_starts_on_a_free_thread_and_is_measured():
    """A tiny request's time is mostly fixed costs: scaled up by size it made a 64-candidate re-ranking after
    one of two (or 100 long items after one) too slow for its budget, refused on an idle worker for as long
    as small ones kept the kind measured. A free thread takes such a body; behind busy threads the scaled
    estimate still judges it."""
    admission = Admission(threads=1, max_queue=4)
    tiny = Ticket("/score", 120, 0.0, 10.0, model="length")
    assert admission.offer(tiny, 0.0) is None and admission.due(0.0)[0] == [tiny]
    admission.finished(tiny, 0.005)
    large = Ticket("/score", 1_000_000, 1.0, 11.0, model="length")  # scaled: 0.005 s x 2**13 = 41 s
    assert admission.offer(large, 1.0) is None and admission.due(1.0)[0] == [large]
    queued = Ticket("/score", 1_000_000, 1.1, 11.1, model="length")  # the thread is busy: judged by the estimate
    assert admission.offer(queued, 1.1) is not None
    admission.finished(large, 1.8)
    assert admission.expected(queued) == pytest.approx(0.8)
    assert admission.offer(Ticket("/score", 1_000_000, 2.0, 12.0, model="length"), 2.0) is None
    twice = Ticket("/score", 300, 3.0, 3.001, model="length")  # a body within a size class of 120 bytes': estimated
    assert admission.measured(twice, 3.0) and admission.offer(twice, 3.0) is not None


def _one_thread_busy(measured_s: float) -> Admission:
    """One thread, taken by a long request; the kind `/rerank` measured at `measured_s` seconds."""
    admission = Admission(threads=1, max_queue=4)
    _measured(admission, measured_s)
    blocker = _ticket(1.0, 100.0)
    assert admission.offer(blocker, 1.0) is None and admission.due(1.0)[0] == [blocker]
    return admission


def test_next_wake_is_a_measured_kinds_latest_start_and_any_other_kinds_deadline():
    """The loop sleeps until `due` would drop something: a measured kind's deadline less its expected time, a
    kind not measured its deadline; at that deadline it is dropped, so the loop is not woken again for it."""
    admission = _one_thread_busy(0.5)
    measured = Ticket("/rerank", 5000, 1.0, 9.0)
    assert admission.offer(measured, 1.0) is None
    assert admission.next_wake(1.0) == pytest.approx(8.5)
    unmeasured = Ticket("/score", 5000, 1.0, 8.8)  # expected 1 s (UNMEASURED_S), yet woken for at its deadline
    assert admission.offer(unmeasured, 1.0) is None
    assert admission.next_wake(1.0) == pytest.approx(8.5)
    assert admission.due(8.0) == ([], [])
    started, dropped = admission.due(8.8)  # exactly the unmeasured one's deadline
    assert started == [] and [t for t, _ in dropped] == [measured, unmeasured]
    assert admission.next_wake(8.8) is None


def test_next_wake_is_never_before_now_where_deadline_less_expected_rounds_below_it():
    """7.9 + 0.7 == 8.6 in floats, yet 8.6 - 0.7 < 7.9: a request that can still finish exactly at its
    deadline is kept, and its wake-up time is now, not a step in the past."""
    admission = _one_thread_busy(0.7)
    edge = Ticket("/rerank", 5000, 1.0, 8.6)
    assert admission.offer(edge, 1.0) is None
    assert 7.9 + admission.expected(edge) == edge.deadline and edge.deadline - admission.expected(edge) < 7.9
    assert admission.due(7.9) == ([], [])  # it can still finish by its deadline
    assert admission.next_wake(7.9) == 7.9


def test_a_kind_is_measured_for_remeasure_s_and_for_bodies_up_to_one_size_class_past_its_largest():
    from service.server.admission import REMEASURE_S

    admission = Admission(threads=1, max_queue=4)
    ticket = Ticket("/score", 64, 0.0, 100.0)  # size class 7
    assert admission.offer(ticket, 0.0) is None and admission.due(0.0)[0] == [ticket]
    admission.finished(ticket, 0.5)
    assert admission.measured(Ticket("/score", 255, 1.0, 100.0), 1.0)  # class 8
    assert not admission.measured(Ticket("/score", 511, 1.0, 100.0), 1.0)  # class 9: 64 bytes' time says little
    assert admission.measured(Ticket("/score", 64, 1.0, 100.0), 0.5 + REMEASURE_S)
    assert not admission.measured(Ticket("/score", 64, 1.0, 100.0), 0.5 + REMEASURE_S + 0.01)


def test_a_free_thread_is_no_queue_place_for_a_second_new_kind_offered_before_due():
    """Two requests of a kind not measured, offered before `due` starts the first: the first has the free
    thread, the second meets the queue's bound (here none)."""
    admission = Admission(threads=1, max_queue=0)
    assert admission.offer(_ticket(0.0, 60.0), 0.0) is None
    refusal = admission.offer(_ticket(0.0, 60.0), 0.0)
    assert refusal is not None and refusal.details["max_queue"] == 0 and len(admission.queue) == 1


def test_a_long_run_that_started_soon_after_the_last_measurement_is_averaged_in():
    """Only a request that started REMEASURE_S after its kind's last measurement replaces the average: one that
    started within it and ran long is one more measurement."""
    from service.server.admission import SMOOTHING

    admission = Admission(threads=1, max_queue=4)
    _measured(admission, 0.5)
    long = _ticket(5.0, 100.0)
    assert admission.offer(long, 5.0) is None and admission.due(5.0)[0] == [long]
    admission.finished(long, 16.0)  # 11 s, ending more than REMEASURE_S after the last measurement
    assert admission.expected(long) == pytest.approx((1 - SMOOTHING) * 0.5 + SMOOTHING * 11.0)
