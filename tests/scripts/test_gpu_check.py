"""scripts/gpu-check.sh: on a machine where ONNX Runtime has no CUDA provider it stops, never reports a pass."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnxruntime
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu-check.sh"


@pytest.mark.skipif("CUDAExecutionProvider" in onnxruntime.get_available_providers(),
                    reason="this machine's ONNX Runtime has the CUDA provider: the check runs for real there")
def test_without_a_cuda_provider_the_check_stops_with_exit_2_and_says_why(tmp_path: Path) -> None:
    """It exited 0 after test_cuda.py's skips, with CPU benchmarks filed under `cuda-fp32`."""
    done = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "out")], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHON": sys.executable, "BENCH_WORKERS": "1", "CPU_BENCH": "1"})
    assert done.returncode == 2, done
    assert "no CUDA provider" in done.stderr
    assert not list((tmp_path / "out").glob("bench-*")) and not (tmp_path / "out" / "test_cuda.txt").exists()


def test_a_python_without_the_service_stops_the_check_before_anything_runs(tmp_path: Path) -> None:
    done = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "out")], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHON": str(tmp_path / "no-python")})
    assert done.returncode == 2 and "does not import" in done.stderr, done
    assert not (tmp_path / "out" / "providers.txt").exists()
