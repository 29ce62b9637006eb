"""`dialscore score`'s progress on stderr: a line every few seconds while a long file is scored."""
from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Called with the lines done after each batch; writes "N lines scored in S s (R lines/s)" once
    `every` seconds have passed since the start or the last line (0: after every batch)."""

    def __init__(self, every: float, prog: str = "dialscore score", stream: TextIO | None = None) -> None:
        self.every, self.prog, self.stream = every, prog, stream
        self.started = self.last = time.monotonic()

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last, seconds = now, now - self.started
        rate = f"{done / seconds:,.0f}" if seconds > 0 else "-"
        print(f"{self.prog}: {done:,} lines scored in {seconds:,.0f} s ({rate} lines/s)",
              file=self.stream or sys.stderr, flush=True)
