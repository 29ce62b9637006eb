"""Log lines with rate and ETA for long loops, to the console and a log file (no tqdm bars in logs)."""
from __future__ import annotations

import logging
import sys
import time
from pathlib import Path


def setup_logging(log_file: Path | None) -> logging.Logger:
    """Root logger to stderr and, when given, to `log_file` (appending)."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s",
                        handlers=handlers, force=True)
    return logging.getLogger("training")


def cpu_description() -> str:
    """'2-core x86_64 CPU (AMD EPYC, AVX-512 VNNI)': the CPU model and whether it has the int8 dot-product
    instructions, because the int8 MiniLM graph rounds differently with and without them, which moves
    the third decimal of development-set figures from one such machine to another."""
    import os
    import platform

    model, flags = "", set()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and not model:
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    vnni = "AVX-512 VNNI" if "avx512_vnni" in flags else "AVX-VNNI" if "avx_vnni" in flags else "no VNNI"
    detail = ", ".join(x for x in (model, vnni if flags else "") if x)
    return f"{os.cpu_count()}-core {platform.machine()} CPU" + (f" ({detail})" if detail else "")


class Progress:
    """Call `step(n, **metrics)`; every `every` steps it logs done/total, rate and ETA."""

    def __init__(self, total: int, label: str, log: logging.Logger, every: int = 50) -> None:
        self.total, self.label, self.log, self.every = total, label, log, every
        self.start = time.monotonic()

    def step(self, done: int, **metrics: float) -> None:
        if done % self.every and done != self.total:
            return
        elapsed = time.monotonic() - self.start
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (self.total - done) / rate if rate > 0 else float("inf")
        shown = " ".join(f"{k}={v:.4g}" for k, v in metrics.items())
        self.log.info("%s %d/%d %.2f/s elapsed %.0fs eta %.0fs %s", self.label, done, self.total,
                      rate, elapsed, eta, shown)
