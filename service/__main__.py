"""`python -m service [--host H] [--port P] [--workers N] [--model-store PATH]`: serve the model store with gunicorn."""
from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from service.config import load_server_settings
from service.startup_checks import check_configuration, check_port, hold_folders, misspelt_names
from service.observability.logs import configure_logging

CONFIG = Path(__file__).parent / "server" / "gunicorn.conf.py"
log = logging.getLogger("service")


def main(argv: list[str] | None = None, prog: str = "python -m service") -> int:
    """`prog`: the command line its usage names (`dialscore serve` passes its own)."""
    configure_logging()  # these messages are JSON lines like everything else the server logs
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    parser.add_argument("--host", help="default: $DIALSCORE_HOST, else 127.0.0.1")
    parser.add_argument("--port", help="default: $DIALSCORE_PORT, else 8000")
    parser.add_argument("--workers", help="default: $DIALSCORE_WORKERS, else 2")
    parser.add_argument("--model-store", type=os.path.abspath, metavar="PATH",
                        help="default: $DIALSCORE_MODEL_STORE, else the model_store/ beside service/ "
                             "(the checkout's, or the copy pip installed)")
    args = parser.parse_args(argv)
    # One source of truth: gunicorn.conf.py and the app's settings both read these.
    for name in ("host", "port", "workers", "model_store"):
        if getattr(args, name) is not None:
            os.environ[f"DIALSCORE_{name.upper()}"] = getattr(args, name)
    # Named before the checks, since the error one of them stops on may be the typo's doing.
    for name in misspelt_names(os.environ):
        log.warning("%s is set but nothing reads it (misspelt?); it has no effect", name)
    try:
        check_configuration(os.environ)
        check_port(load_server_settings(os.environ), os.environ)
        hold_folders(os.environ)
    except (ValueError, KeyError) as exc:
        log.error("%s: %s", prog, named_as_given(str(exc), args), extra={"exit_status": 2})
        return 2
    from gunicorn.app.wsgiapp import run

    sys.argv = ["gunicorn", "-c", str(CONFIG), "--no-control-socket", "service.server.front:create_front()"]
    run()
    return 0


def named_as_given(message: str, args: argparse.Namespace) -> str:
    """`message` naming the option, where the bad value came from one (`--port 80: ...`), not its variable."""
    for name in ("host", "port", "workers", "model_store"):
        variable = f"DIALSCORE_{name.upper()}="
        if getattr(args, name) is not None and message.startswith(variable):
            return f"--{name.replace('_', '-')} {message[len(variable):]}"
    return message


if __name__ == "__main__":
    raise SystemExit(main())
