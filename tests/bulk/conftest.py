"""Shared by the tests of service/bulk/: sample items, a store of the committed bleu4 and length
folders, and helpers to write inputs, read outputs and run `python -m service.bulk`."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from service.config import REPO_ROOT
from service.artifacts.runtime import Runtime, RuntimeSettings
from service.store.model_store import ModelStore


GOOD = [
    {"id": "a", "context": ["hi, how are you?"], "response": "fine, thanks. and you?", "reference": "good, you?"},
    {"context": ["what time is it?", "about noon."], "response": "then let's have lunch.",
     "reference": "great, i'm hungry.", "human": 4.5},
    {"id": 7, "context": ["do you like jazz?"], "response": "yes, very much indeed", "reference": "i love it."},
]


# Package scope: one store for every test of tests/bulk/, as when they were one module.
@pytest.fixture(scope="package")
def store_root(tmp_path_factory) -> Path:
    """The committed bleu4 and length folders alone, so that no unrelated component is loaded."""
    root = tmp_path_factory.mktemp("store")
    for name in ("bleu4", "length"):
        shutil.copytree(REPO_ROOT / "model_store" / name, root / name)
    return root


@pytest.fixture(scope="package")
def store(store_root) -> ModelStore:
    runtime = Runtime(RuntimeSettings(providers=("CPUExecutionProvider",), intra_op_threads=1, workers=1))
    store = ModelStore(store_root, runtime, ("bleu4", "length"))
    store.load()
    assert {"bleu4", "length"} <= set(store.scorers), store.failures
    return store


def write_lines(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def encoded(items: list[dict]) -> list[bytes]:
    return [json.dumps(item).encode() for item in items]


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    if not math.isfinite(float(text)):
        raise ValueError(f"{text} overflows a double")
    return float(text)


def strict_json(text: str | bytes):
    """json.loads as a strict reader (jq, Go, JavaScript) sees it: NaN and infinity are not JSON."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite)


def read_output(path: Path) -> list[dict]:
    return [strict_json(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "service.bulk", *args]


def _env(store_root: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_ROOT), "DIALSCORE_INTRA_OP_THREADS": "1",
            "DIALSCORE_MODEL_STORE": str(store_root)}


def json_lines(stderr: bytes) -> list[dict]:
    """Every stderr line as the log pipeline reads it: one JSON object, else the test fails."""
    return [json.loads(line) for line in stderr.decode().splitlines()]


def _wait_for_output_lines(proc, output: Path, count: int, deadline: float) -> None:
    """Until `output` holds `count` lines (batches written and fsync'd), failing if the tool exits first."""
    while time.monotonic() < deadline and (not output.exists() or output.read_bytes().count(b"\n") < count):
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.05)


def _wait_blocked_on_pipe(pid: int, deadline: float) -> None:
    """Until the process sleeps in a pipe read (/proc wchan); a fixed second where wchan is hidden."""
    wchan = Path(f"/proc/{pid}/wchan")
    while time.monotonic() < deadline:
        try:
            where = wchan.read_text()
        except OSError:
            where = "0"
        if where in ("", "0"):
            time.sleep(1.0)
            return
        if "pipe" in where:
            return
        time.sleep(0.02)


def start_holder(store_root: Path, fifo: Path, output: Path, lines: list[bytes], first: int, batch: int):
    """A run that was given `first` lines, has written its full batches and now waits on its FIFO for
    more: it holds the output."""
    proc = subprocess.Popen(_cli("--model", "length", "--input", str(fifo), "--output", str(output),
                                 "--batch-size", str(batch)), env=_env(store_root), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    writer = open(fifo, "wb")  # noqa: SIM115 - the caller closes it, which ends the holder's input
    writer.write(b"".join(line + b"\n" for line in lines[:first]))
    writer.flush()
    deadline = time.monotonic() + 60
    written = first - first % batch
    _wait_for_output_lines(proc, output, written, deadline)
    _wait_blocked_on_pipe(proc.pid, deadline)
    return proc, writer
