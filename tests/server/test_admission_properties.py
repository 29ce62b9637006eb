"""Admission's promises over any sequence of arrivals, starts, finishes, withdrawals and clock steps
(hypothesis drives a virtual clock): no thread overbooked, no more held than threads and queue,
nothing started at or past its deadline or started twice, every request answered once (started, refused, dropped or
withdrawn), and no thread idle while a request waits."""
from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from service.errors import DeadlineExceeded, Overloaded
from service.server.admission import MAX_RETRY_AFTER_S, Admission, Ticket

PATHS = st.sampled_from(["/score", "/rerank", "/correlate"])
MODELS = st.sampled_from(["length", "unref-minilm", "?"])


class AdmissionMachine(RuleBasedStateMachine):
    @initialize(threads=st.integers(1, 4), max_queue=st.integers(0, 6))
    def start(self, threads: int, max_queue: int) -> None:
        self.admission, self.now = Admission(threads, max_queue), 0.0
        self.offered: list[Ticket] = []
        self.outcome: dict[int, str] = {}  # id(ticket) -> started, refused or dropped

    def settle(self) -> None:
        """What the worker does after every event: start what may start, drop what cannot finish."""
        starting, dropped = self.admission.due(self.now)
        for ticket in starting:
            assert self.now < ticket.deadline, "started at or past its deadline"
            self.answer(ticket, "started")
        for ticket, refusal in dropped:
            assert isinstance(refusal, DeadlineExceeded) and refusal.status == 503
            assert 1 <= int(refusal.headers["Retry-After"]) <= MAX_RETRY_AFTER_S
            self.answer(ticket, "dropped")
        assert len(self.admission.running) == self.admission.threads or not self.admission.queue, "a thread idle"

    def answer(self, ticket: Ticket, outcome: str) -> None:
        assert id(ticket) not in self.outcome, f"answered twice: {self.outcome[id(ticket)]}, then {outcome}"
        self.outcome[id(ticket)] = outcome

    @rule(path=PATHS, model=MODELS, size=st.integers(0, 1 << 20), budget=st.floats(0.01, 30))
    def arrive(self, path: str, model: str, size: int, budget: float) -> None:
        ticket = Ticket(path, size, self.now, self.now + budget, model=model)
        self.offered.append(ticket)
        free = len(self.admission.running) < self.admission.threads and not self.admission.queue
        refusal = self.admission.offer(ticket, self.now)
        if refusal is not None:
            assert not (free and "max_queue" in refusal.details), "refused for a full queue with a thread free"
            assert isinstance(refusal, Overloaded) and refusal.status == 503
            assert 1 <= int(refusal.headers["Retry-After"]) <= MAX_RETRY_AFTER_S
            assert ticket not in self.admission.queue
            self.answer(ticket, "refused")
        self.settle()

    @rule(seconds=st.floats(0, 5))
    def tick(self, seconds: float) -> None:
        self.now += seconds
        self.settle()

    @precondition(lambda self: bool(self.admission.running))
    @rule(which=st.integers(0, 3), seconds=st.floats(0, 5))
    def finish(self, which: int, seconds: float) -> None:
        ticket = self.admission.running[which % len(self.admission.running)]
        self.now += seconds
        self.admission.finished(ticket, self.now)
        assert ticket not in self.admission.running
        self.settle()

    @precondition(lambda self: bool(self.admission.queue))
    @rule(which=st.integers(0, 5))
    def withdraw(self, which: int) -> None:
        """The front takes a queued request off when its task is cancelled (the worker exiting)."""
        ticket = self.admission.queue[which % len(self.admission.queue)]
        self.admission.queue.remove(ticket)
        self.answer(ticket, "withdrawn")
        self.settle()

    @invariant()
    def bounded(self) -> None:
        if not hasattr(self, "admission"):
            return
        admission = self.admission
        assert len(admission.running) <= admission.threads
        assert len(admission.queue) + len(admission.running) <= admission.threads + admission.max_queue
        assert not set(map(id, admission.queue)) & set(map(id, admission.running))
        waiting = [t for t in self.offered if id(t) not in self.outcome]
        assert {id(t) for t in waiting} == {id(t) for t in admission.queue}, "a request neither queued nor answered"
        wake = admission.next_wake(self.now)
        assert (wake is None) == (not admission.queue)
        assert wake is None or wake <= min(t.deadline for t in admission.queue)
        # settled at `now`, nothing is due before `now`: a wake in the past would run the loop for nothing, again
        assert wake is None or wake >= self.now, "a wake-up time already past"

    def teardown(self) -> None:
        """Time runs past every deadline: whatever is still queued is dropped, none is left unanswered."""
        if not hasattr(self, "admission"):
            return
        self.now += 1000
        self.settle()
        assert not self.admission.queue
        assert len(self.outcome) == len(self.offered)


AdmissionMachine.TestCase.settings = settings(max_examples=500, stateful_step_count=40, deadline=None)
test_admission_keeps_its_promises_over_any_sequence_of_events = AdmissionMachine.TestCase
