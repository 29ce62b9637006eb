"""SIGTERM and Ctrl-C: finish the batch in hand, then stop."""
from __future__ import annotations

import signal
from typing import Any


class Stop:
    """SIGTERM (Kubernetes eviction, `kubectl delete`) or Ctrl-C finishes the batch in hand, then
    stops with the summary and 128 + the signal's number (143, 130)."""

    requested = False
    signal_number = 0

    @classmethod
    def install(cls) -> None:
        def handler(signum: int, frame: Any) -> None:
            cls.requested = True
            cls.signal_number = signum

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)
