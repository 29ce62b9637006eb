"""SIGTERM and Ctrl-C: stop reading, write the lines in hand, then stop."""
from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Stop:
    """SIGTERM (Kubernetes eviction, `kubectl delete`) or Ctrl-C: no further input line is read,
    the lines already read are scored and written, and the run stops with the summary and 128 +
    the signal's number (143, 130).

    Why reads are interrupted: with a handler that only sets a flag, a read blocked on a pipe (a
    producer that paused, `--input /dev/stdin`) goes on waiting after the signal, because Python
    retries a read a handler interrupts (PEP 475): Ctrl-C would seem ignored, and Kubernetes would
    kill the pod at its grace period with the lines in hand unwritten.
    Inside `reading()` the handler raises Interrupted instead, which ends that read; anywhere else
    it sets the flag, checked at the next read and after each batch.
    """

    requested = False
    signal_number = 0
    _reading = False

    class Interrupted(Exception):
        """A stop was asked for while (or before) input was read."""

    @classmethod
    def install(cls) -> None:
        def handler(signum: int, frame: Any) -> None:
            cls.requested = True
            cls.signal_number = signum
            if cls._reading:
                cls._reading = False
                raise cls.Interrupted

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    @classmethod
    @contextmanager
    def reading(cls) -> Iterator[None]:
        """A block of input reads that a stop ends with Interrupted (at once if one came before)."""
        if cls.requested:
            raise cls.Interrupted
        cls._reading = True
        try:
            yield
        finally:
            cls._reading = False
