"""`python -m service [--host H] [--port P] [--workers N]`: serve the model store with gunicorn."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

CONFIG = Path(__file__).with_name("gunicorn.conf.py")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m service", description=__doc__)
    parser.add_argument("--host", default=os.environ.get("DIALSCORE_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("DIALSCORE_PORT", "8000")))
    parser.add_argument("--workers", type=int, default=int(os.environ.get("DIALSCORE_WORKERS", "2")))
    args = parser.parse_args(argv)
    # One source of truth: gunicorn.conf.py and the app's settings both read these.
    os.environ["DIALSCORE_HOST"] = args.host
    os.environ["DIALSCORE_PORT"] = str(args.port)
    os.environ["DIALSCORE_WORKERS"] = str(args.workers)
    from gunicorn.app.wsgiapp import run

    sys.argv = ["gunicorn", "-c", str(CONFIG), "--no-control-socket", "service.app:create_app()"]
    run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
