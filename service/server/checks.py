"""The server's own DIALSCORE_* variables (gunicorn's: host, port, workers, timeouts, folders), checked once.

`python -m service` checks them, and the service's settings (service/config.py), before gunicorn
starts, and stops with one line naming the variable: a configuration probe found values that
gunicorn took and then failed on far from their cause (DIALSCORE_WORKERS=0: a server that accepts
connections and never answers; DIALSCORE_READ_TIMEOUT=inf: a 500 on every request; a read-only
metrics folder: every request dropped without an answer). gunicorn.conf.py reads the same values
from here, so a direct `gunicorn -c service/server/gunicorn.conf.py` is checked too.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, fields

from service.config import Settings, load_settings, refuse_unknown_providers

# Every DIALSCORE_* name read anywhere (service, bulk, training, the worker's own), for the warning
# about a misspelt one; the Settings fields (service/config.py) are added where it is checked.
OTHER_NAMES = frozenset({
    "DIALSCORE_READY_DIR", "DIALSCORE_POD_WORKERS", "DIALSCORE_ENCODER_PRECISION", "DIALSCORE_SHARD_COUNT",
    "DIALSCORE_DATA_DIR", "DIALSCORE_MINILM_CACHE",
})
MAX_READ_TIMEOUT = 3600.0  # seconds; socket timeouts past ~1e10 overflow time_t
MAX_WORKERS = 64


@dataclass(frozen=True)
class ServerSettings:
    host: str = "127.0.0.1"  # DIALSCORE_HOST
    port: int = 8000  # DIALSCORE_PORT
    workers: int = 2  # DIALSCORE_WORKERS
    threads: int = 2  # DIALSCORE_THREADS: request threads per worker
    worker_timeout: int = 120  # DIALSCORE_WORKER_TIMEOUT: seconds without a heartbeat before a worker is killed (0: never)
    graceful_timeout: int = 25  # DIALSCORE_GRACEFUL_TIMEOUT: seconds in-flight requests get after SIGTERM
    read_timeout: float = 10.0  # DIALSCORE_READ_TIMEOUT: seconds a request may take to arrive whole
    max_requests: int = 0  # DIALSCORE_MAX_REQUESTS: recycle a worker after this many (0: never)
    # DIALSCORE_MAX_WORKER_MEMORY_MIB: recycle a worker whose resident memory passed this after a request (0: never)
    max_worker_memory_mib: int = 0
    worker_tmp_dir: str = ""  # DIALSCORE_WORKER_TMP_DIR: gunicorn's heartbeat files ("": the system's)


# name: (lowest, highest) for the integers; read_timeout is checked on its own
_INT_RANGES = {"port": (1, 65535), "workers": (1, MAX_WORKERS), "threads": (1, 1024), "worker_timeout": (0, 86400),
               "graceful_timeout": (0, 86400), "max_requests": (0, 10**9), "max_worker_memory_mib": (0, 10**7)}


def env_name(field: str) -> str:
    return f"DIALSCORE_{field.upper()}"


def load_server_settings(environ: Mapping[str, str] | None = None) -> ServerSettings:
    """The server's settings from the environment; ValueError naming the variable for a bad one."""
    environ = os.environ if environ is None else environ
    values: dict[str, object] = {}
    for f in fields(ServerSettings):
        key = env_name(f.name)
        if key not in environ:
            continue
        raw = environ[key].strip()
        if f.name in ("host", "worker_tmp_dir"):
            if f.name == "host" and not raw:  # gunicorn binds an empty host on every interface
                raise ValueError(f"{key}='': give an address to listen on (0.0.0.0 for every interface)")
            values[f.name] = raw
        elif f.name == "read_timeout":
            values[f.name] = _seconds(key, raw)
        else:
            values[f.name] = _integer(key, raw, *_INT_RANGES[f.name])
    settings = ServerSettings(**values)
    if settings.worker_tmp_dir:
        check_writable(settings.worker_tmp_dir, "DIALSCORE_WORKER_TMP_DIR")
    return settings


def _integer(key: str, raw: str, lowest: int, highest: int) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{key}={raw!r}: must be a whole number from {lowest} to {highest}") from None
    if not lowest <= value <= highest:
        raise ValueError(f"{key}={raw!r}: must be from {lowest} to {highest}")
    return value


def _seconds(key: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{key}={raw!r}: must be a number of seconds") from None
    if not (math.isfinite(value) and 0 < value <= MAX_READ_TIMEOUT):
        raise ValueError(f"{key}={raw!r}: must be a number of seconds above 0 and at most {MAX_READ_TIMEOUT:g}")
    return value


def check_writable(folder: str, key: str) -> None:
    """ValueError unless `folder` exists (or can be made) and a file can be written in it: the
    workers write there on every request (metrics) or once loaded (readiness)."""
    try:
        os.makedirs(folder, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-check-"):
            pass
    except OSError as exc:
        raise ValueError(f"{key}={folder!r}: not a folder the server can write in ({exc.strerror or exc})") from None


def unknown_names(environ: Mapping[str, str], known: frozenset[str]) -> list[str]:
    """DIALSCORE_* variables that nothing reads: a misspelt limit is otherwise silently the default."""
    return sorted(k for k in environ if k.startswith("DIALSCORE_") and k not in known)


def check_configuration(environ: Mapping[str, str]) -> list[str]:
    """Every DIALSCORE_* value the server and the service read, checked before gunicorn starts;
    ValueError naming the first bad one. Returns the DIALSCORE_* names nothing reads (typos)."""
    load_server_settings(environ)
    load_settings(environ=dict(environ), check_providers=False)  # ONNX Runtime is not imported before the fork
    if environ.get("DIALSCORE_PROVIDERS"):
        check_provider_names_apart(environ["DIALSCORE_PROVIDERS"])
    for key in ("PROMETHEUS_MULTIPROC_DIR", "DIALSCORE_READY_DIR"):
        if environ.get(key):
            check_writable(environ[key], key)
    known = OTHER_NAMES | {env_name(f.name) for f in fields(Settings)} | {
        env_name(f.name) for f in fields(ServerSettings)}
    return unknown_names(environ, frozenset(known))


def check_provider_names_apart(value: str) -> None:
    """ValueError for a name ONNX Runtime does not know, asked of ONNX Runtime in a child process: the
    master must not load it before it forks the workers (their sessions would share its state)."""
    names = [part.strip() for part in value.split(",") if part.strip()]
    try:
        asked = subprocess.run(
            [sys.executable, "-c", "import json, onnxruntime; print(json.dumps(onnxruntime.get_all_providers()))"],
            capture_output=True, text=True, check=True, timeout=60)
        known = json.loads(asked.stdout)
    except subprocess.CalledProcessError as exc:
        last = (exc.stderr or "").strip().splitlines()[-1:] or ["no output"]
        raise ValueError(f"DIALSCORE_PROVIDERS: ONNX Runtime could not be asked for its providers ({last[0]})") from None
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        raise ValueError(f"DIALSCORE_PROVIDERS: ONNX Runtime could not be asked for its providers ({exc})") from None
    refuse_unknown_providers(names, known)
