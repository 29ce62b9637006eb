"""The service runs as the images and k8s/ run it: read-only root filesystem, one writable /tmp.

No container engine is available, so the image's layout is rebuilt in a private mount
namespace (`unshare -m`): every filesystem is remounted read-only, a small tmpfs stands for the
pod's /tmp emptyDir, and `python -m service` must start, become ready, score, serve /metrics
and stop on SIGTERM without writing anywhere else.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.live_server import free_port

SCRIPT = r"""
set -eu
for m in / "$(stat -c %m "$APP")" "$(stat -c %m "$PY_HOME")"; do
    mount -o remount,ro,bind "$m" 2>/dev/null || { mount --bind "$m" "$m" && mount -o remount,ro,bind "$m"; }
done
mount -t tmpfs -o size=64m tmpfs "$TMP"
if touch "$APP/written" 2>/dev/null; then echo "app folder is writable" >&2; exit 3; fi
cd "$APP"
export HOME="$TMP" TMPDIR="$TMP" PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$APP" DIALSCORE_MODEL_STORE="$APP/model_store"
"$PY" -m service --host 127.0.0.1 --port "$PORT" --workers 2 >"$TMP/log" 2>&1 &
pid=$!
if "$PY" - <<'EOF'
import json, os, time, urllib.request
base = f"http://127.0.0.1:{os.environ['PORT']}"
for _ in range(300):
    try:
        with urllib.request.urlopen(base + "/readyz", timeout=2) as r:
            if r.status == 200:
                break
    except OSError:
        time.sleep(0.2)
else:
    raise SystemExit("not ready")
body = json.dumps({"model": "length", "items": [{"context": ["hi"], "response": "hello there friend"}]}).encode()
req = urllib.request.Request(base + "/score", body, {"Content-Type": "application/json"})
print(json.loads(urllib.request.urlopen(req, timeout=10).read())["scores"])
print("metrics", b"dialscore_requests_total" in urllib.request.urlopen(base + "/metrics", timeout=10).read())
EOF
then :; else status=$?; cat "$TMP/log" >&2; kill -TERM "$pid" 2>/dev/null || true; exit "$status"; fi
kill -TERM "$pid"
wait "$pid"
echo "exit $?"
if grep -qiE "read-only file system|permission denied|Traceback" "$TMP/log"; then cat "$TMP/log" >&2; exit 4; fi
"""


def _can_unshare() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs tmpfs /mnt"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_unshare(), reason="needs root and mount namespaces (unshare -m)")
def test_service_runs_on_a_read_only_root(tmp_path):
    from tests.conftest import copy_store

    app = tmp_path / "app"
    shutil.copytree(REPO / "service", app / "service", ignore=shutil.ignore_patterns("__pycache__"))
    copy_store(app / "model_store", ("length",))
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "APP": str(app), "TMP": str(tmp_path / "tmp"), "PY": sys.executable,
           "PY_HOME": str(Path(os.path.realpath(sys.executable)).parent), "PORT": str(free_port()),
           "DIALSCORE_INTRA_OP_THREADS": "1", "DIALSCORE_MODELS": "length"}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    result = subprocess.run(["unshare", "-m", "bash", "-c", SCRIPT], env=env, capture_output=True, text=True,
                            timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[3.0]" in result.stdout and "metrics True" in result.stdout and "exit 0" in result.stdout
