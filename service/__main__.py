"""`python -m service [--host H] [--port P] [--workers N]`: serve the model store with gunicorn."""
from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import fields
from pathlib import Path

CONFIG = Path(__file__).with_name("gunicorn.conf.py")
log = logging.getLogger("service")


def check_configuration(environ: dict[str, str] | os._Environ) -> list[str]:
    """Every DIALSCORE_* value the server and the service read, checked before gunicorn starts;
    ValueError naming the first bad one. Returns the DIALSCORE_* names nothing reads (typos)."""
    from service.config import Settings, load_settings
    from service.server_config import (OTHER_NAMES, ServerSettings, check_writable, env_name, load_server_settings,
                                       unknown_names)

    load_server_settings(environ)
    load_settings(environ=dict(environ), check_providers=False)  # ONNX Runtime is not imported before the fork
    if environ.get("DIALSCORE_PROVIDERS"):
        check_provider_names_apart(environ["DIALSCORE_PROVIDERS"])
    for key in ("PROMETHEUS_MULTIPROC_DIR", "DIALSCORE_READY_DIR"):
        if environ.get(key):
            check_writable(environ[key], key)
    known = OTHER_NAMES | {env_name(f.name) for f in fields(Settings) if f.name != "extra"} | {
        env_name(f.name) for f in fields(ServerSettings)}
    return unknown_names(environ, frozenset(known))


def check_provider_names_apart(value: str) -> None:
    """ValueError for a name ONNX Runtime does not know, asked of ONNX Runtime in a child process: the
    master must not load it before it forks the workers (their sessions would share its state)."""
    import json
    import subprocess

    names = [part.strip() for part in value.split(",") if part.strip()]
    known = json.loads(subprocess.run(
        [sys.executable, "-c", "import json, onnxruntime; print(json.dumps(onnxruntime.get_all_providers()))"],
        capture_output=True, text=True, check=True, timeout=60).stdout)
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"DIALSCORE_PROVIDERS: {', '.join(unknown)} is not an ONNX Runtime execution provider "
                         "(for example CUDAExecutionProvider, CPUExecutionProvider)")


def main(argv: list[str] | None = None) -> int:
    from service.logging_setup import configure_logging

    configure_logging()  # these messages are JSON lines like everything else the server logs
    parser = argparse.ArgumentParser(prog="python -m service", description=__doc__)
    parser.add_argument("--host", help="default: $DIALSCORE_HOST, else 127.0.0.1")
    parser.add_argument("--port", help="default: $DIALSCORE_PORT, else 8000")
    parser.add_argument("--workers", help="default: $DIALSCORE_WORKERS, else 2")
    args = parser.parse_args(argv)
    # One source of truth: gunicorn.conf.py and the app's settings both read these.
    for name in ("host", "port", "workers"):
        if getattr(args, name) is not None:
            os.environ[f"DIALSCORE_{name.upper()}"] = getattr(args, name)
    try:
        unknown = check_configuration(os.environ)
    except (ValueError, KeyError) as exc:
        log.error("python -m service: %s", exc, extra={"exit_status": 2})
        return 2
    for name in unknown:
        log.warning("%s is set but nothing reads it (misspelt?); it has no effect", name)
    from gunicorn.app.wsgiapp import run

    sys.argv = ["gunicorn", "-c", str(CONFIG), "--no-control-socket", "service.app:create_app()"]
    run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
