"""`pip install clients/python` in a fresh virtual environment outside the checkout, then a ranking from it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from dialscore_client import Client

from tests.clients.conftest import CLIENT_SRC

SCRIPT = """
import json, sys
import dialscore_client
from dialscore_client import Client
ranking = Client(sys.argv[1]).rerank(model="autojudge-minilm", context=["hi! how was your weekend?"],
                                     candidates=["i don't know.", "great, i went hiking with my sister!", "no"])
print(json.dumps({"version": dialscore_client.__version__, "file": dialscore_client.__file__,
                  "ranking": [[c.index, c.score] for c in ranking.ranking]}))
"""


def test_a_fresh_venv_installs_the_client_and_reranks(server, tmp_path):
    # a copy, so that the in-tree build leaves nothing in the checkout
    source = shutil.copytree(CLIENT_SRC.parent, tmp_path / "dialscore-client",
                             ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    install = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                              str(source)], capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert install.returncode == 0, install.stdout + install.stderr
    done = subprocess.run([str(venv / "bin" / "python"), "-c", SCRIPT, server.url], capture_output=True, text=True,
                          timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["version"] == "2026.11.1" and report["file"].startswith(str(venv))
    expected = Client(server.url).rerank("autojudge-minilm", ["hi! how was your weekend?"],
                                         ["i don't know.", "great, i went hiking with my sister!", "no"])
    assert report["ranking"] == [[c.index, c.score] for c in expected.ranking]
