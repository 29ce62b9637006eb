"""SIGTERM and Ctrl-C: stop reading, write the lines in hand, then stop."""
from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class Stop:
    """SIGTERM or Ctrl-C: no further input line is read, the lines already read are scored and written, and
    the run stops with the summary and 128 + the signal's number (143, 130).

    Inside `reading()` the handler raises Interrupted, which ends a read blocked on a pipe (Python retries
    a read that a handler only interrupts, PEP 475); anywhere else it sets the flag, checked at the next
    read and after each batch."""

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
