"""The service never imports torch or training: the image holds only service/ (.dockerignore), so such an
import would pass here, where the dev venv has both, and break only in Docker."""
from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO

# Imports every module under service/, each implementation the registries can pick, the app, and the
# three command lines as far as --help; then reports the modules loaded from outside the boundary.
PROBE = r"""
import contextlib, importlib, io, json, pathlib, pkgutil, runpy, sys
import service
from service.store.registry import component_class
from service.store.registry import scorer_class

modules = []
for info in pkgutil.walk_packages(service.__path__, "service."):
    if info.name.endswith(".__main__"):
        continue  # runs a command: the commands run below, as far as --help
    importlib.import_module(info.name)
    modules.append(info.name)
for lookup in (scorer_class, component_class):
    with contextlib.suppress(KeyError):
        lookup("no-such-key")  # imports every implementation module first
runpy.run_path(str(pathlib.Path(service.__file__).parent / "server" / "gunicorn.conf.py"))  # not a module name
from service.app import create_app
create_app({"load_sync": True})
for command in ("service", "service.bulk", "service.analysis"):
    sys.argv = [command, "--help"]
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
        runpy.run_module(command, run_name="__main__", alter_sys=True)
loaded = [m for m in sys.modules if m.split(".")[0] in ("torch", "training")]
print(json.dumps({"modules": modules, "loaded": loaded}))
"""


def test_no_service_module_nor_command_imports_torch_or_training() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "DIALSCORE_PROVIDERS": "CPUExecutionProvider",
                               "DIALSCORE_MODELS": "length"})
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(report["modules"]) >= 50 and "service.scorers.mh" in report["modules"]
    assert not report["loaded"], sorted(report["loaded"])[:10]


def test_the_batch_and_file_commands_score_without_the_web_framework() -> None:
    """`python -m service.bulk`, `dialscore score` and `python -m service.analysis` read the API's schemas
    and limits, not its app: Flask stays out of the process."""
    probe = ("import sys, service.bulk.records, service.cli.score, service.analysis.__main__; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('flask', 'werkzeug')))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"
