"""service/__init__.py: ONNX Runtime's usage telemetry is off in every process that imports the service."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MODEL_STORE, REPO

# Where ONNX Runtime turns its telemetry off by itself (a CI service, its own unit tests), or is told to:
# left out of the child's environment, which is a user's shell.
SUPPRESSING = ("CI", "TF_BUILD", "GITHUB_ACTIONS", "JENKINS_URL", "GITLAB_CI", "TRAVIS", "CIRCLECI", "BUILDKITE",
               "TEAMCITY_VERSION", "SYSTEM_TEAMFOUNDATIONCOLLECTIONURI", "ORT_RUNNING_UNIT_TESTS",
               "ORT_DISABLE_TELEMETRY")
SESSION = ("import {first}, onnxruntime\n"
           "onnxruntime.InferenceSession({path!r}, providers=['CPUExecutionProvider'])\n"
           "import os; print(os.environ.get('ORT_DISABLE_TELEMETRY'))")


def _session_in_a_fresh_home(home: Path, first: str, **extra: str) -> str:
    env = {**{k: v for k, v in os.environ.items() if k not in SUPPRESSING}, "HOME": str(home), **extra}
    code = SESSION.format(first=first, path=str(MODEL_STORE / "minilm-l6" / "encoder-int8.onnx"))
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("first", ["service", "training"])
def test_onnx_runtime_sends_no_telemetry_from_the_service_or_training(tmp_path: Path, first: str) -> None:
    """ONNX Runtime 1.31 on Linux made a device id and an upload queue under ~/.cache/Microsoft and looked up
    its collector's address for every process that made a session: each worker, each command."""
    assert _session_in_a_fresh_home(tmp_path, first) == "1"
    assert not (tmp_path / ".cache" / "Microsoft").exists()


def test_an_operator_may_turn_it_back_on() -> None:
    """An explicit setting is kept; no session is made here, which would send the telemetry for real."""
    env = {**{k: v for k, v in os.environ.items() if k not in SUPPRESSING}, "ORT_DISABLE_TELEMETRY": "0"}
    done = subprocess.run([sys.executable, "-c", "import os, service; print(os.environ['ORT_DISABLE_TELEMETRY'])"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "0"), done.stderr
