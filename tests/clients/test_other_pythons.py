"""The client's README example under the other Pythons it supports (clients/python/pyproject.toml: 3.10
or newer), where this machine has them, against the suite's real server; skipped where one is missing.

No install and no network: the other interpreter gets the client's source and, linked into a folder, the
packages it imports as this interpreter has them (requests and its dependencies, each with pure-Python
code). `make client-pythons` installs the client into a venv of each and runs all of tests/clients there.
"""
from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clients.conftest import CLIENT_SRC
from tests.clients.test_readme import assert_readme_output, readme_example

OTHER_PYTHONS = ("3.10", "3.12", "3.13")  # 3.11 is the suite's own
DEPENDENCIES = ("requests", "urllib3", "idna", "certifi", "charset_normalizer")


def interpreter(version: str) -> str | None:
    """A python of `version` on PATH or among pyenv's versions (a pyenv shim may name one it cannot run)."""
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates = [shutil.which(f"python{version}"),
                  *sorted(map(str, root.glob(f"versions/{version}.*/bin/python")), reverse=True)]
    for candidate in filter(None, candidates):
        try:
            done = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                  capture_output=True, text=True, timeout=30)
        except OSError:
            continue
        if done.returncode == 0 and done.stdout.strip() == version:
            return candidate
    return None


def dependency_folder(target: Path) -> Path:
    """A folder holding a link to each package the client imports, as this interpreter imports it."""
    target.mkdir()
    for name in DEPENDENCIES:
        package = Path(importlib.import_module(name).__file__).parent
        (target / name).symlink_to(package, target_is_directory=True)
    return target


@pytest.mark.parametrize("version", OTHER_PYTHONS)
def test_the_readme_example_runs_under_another_python(server, tmp_path, version):
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        pytest.skip(f"Python {version} runs the suite itself")
    python = interpreter(version)
    if python is None:
        pytest.skip(f"no Python {version} here (PATH, pyenv)")
    path = os.pathsep.join([str(CLIENT_SRC), str(dependency_folder(tmp_path / "deps"))])
    # -s: no user site-packages; the environment holds nothing else, so nothing of this venv is imported
    done = subprocess.run([python, "-s", "-c", readme_example(server.url)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env={"PYTHONPATH": path, "PATH": os.environ.get("PATH", "")})
    assert done.returncode == 0, done.stderr
    assert_readme_output(done.stdout)
