"""What `python -m service` checks before gunicorn starts: every DIALSCORE_* value, the folders the
workers write, the provider names, and variables nothing reads (typos); one line names a bad one."""
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import fields

from service.config import Settings, check_writable, env_name, load_server_settings, refuse_unknown_providers

# The DIALSCORE_* names read outside Settings (the worker's own, bulk's, training's), for the warning
# about a misspelt one; the Settings fields are added where it is checked.
OTHER_NAMES = frozenset({
    "DIALSCORE_READY_DIR", "DIALSCORE_POD_WORKERS", "DIALSCORE_SHARD_COUNT", "DIALSCORE_DATA_DIR",
    "DIALSCORE_MINILM_CACHE",
})


def unknown_names(environ: Mapping[str, str], known: frozenset[str]) -> list[str]:
    """DIALSCORE_* variables that nothing reads: a misspelt limit is otherwise silently the default."""
    return sorted(k for k in environ if k.startswith("DIALSCORE_") and k not in known)


def check_configuration(environ: Mapping[str, str]) -> list[str]:
    """Every DIALSCORE_* value the server and the service read, checked before gunicorn starts;
    ValueError naming the first bad one. Returns the DIALSCORE_* names nothing reads (typos)."""
    load_server_settings(environ)
    if environ.get("DIALSCORE_PROVIDERS"):
        check_provider_names_apart(environ["DIALSCORE_PROVIDERS"])
    for key in ("PROMETHEUS_MULTIPROC_DIR", "DIALSCORE_READY_DIR"):
        if environ.get(key):
            check_writable(environ[key], key)
    return unknown_names(environ, OTHER_NAMES | {env_name(f.name) for f in fields(Settings)})


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
