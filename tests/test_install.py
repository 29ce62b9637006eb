"""`pip install <checkout>` in a fresh venv outside the checkout, as the README's "Installing with pip"
says: no torch, `dialscore serve` serves every committed model from another folder, the README's
`dialscore score` example runs with the installed command (so does `correlate`), and the
client installed beside it re-ranks.

Minutes (pip builds the wheel and installs onnxruntime, scipy, ...; its cache makes later runs faster),
so marked `install`, which the default run deselects: `pytest -m install`, or `.ci/run` once.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MODEL_STORE, REPO
from tests.live_server import running_server
from tests.test_readme import run_score_example

pytestmark = pytest.mark.install



def clone_copy(source: Path, target: Path) -> Path:
    """What a clone of `source` would hold, as the working tree has it: tracked files and untracked ones
    git does not ignore (so no .venv, no built encoders, no caches); pip's in-tree builds then leave
    nothing in the checkout."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=source,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (source / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / name, target / name)
    return target


RERANK = """
import json, sys
from dialscore_client import Client
ranking = Client(sys.argv[1]).rerank(model="autojudge-minilm", context=["hi! how was your weekend?"],
                                     candidates=["i don't know.", "great, i went hiking with my sister!", "no"])
print(json.dumps([[c.index, c.score] for c in ranking.ranking]))
"""


def pip_install(venv: Path, source: Path, env: dict[str, str]) -> None:
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           str(source)], capture_output=True, text=True, timeout=900, env=env, cwd=source.parent)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def committed_models() -> list[str]:
    """The committed models a clone serves: not those on a component built where it serves (a manifest's
    `build`: mpnet-base, whose graphs `make encoder-mpnet` makes and git ignores)."""
    manifests = {p.name: json.loads((p / "manifest.json").read_text()) for p in MODEL_STORE.iterdir() if p.is_dir()}
    built_there = {name for name, manifest in manifests.items() if manifest.get("build")}
    return sorted(name for name, manifest in manifests.items()
                  if manifest["kind"] != "component" and not built_there & set(manifest.get("uses", [])))


def test_a_fresh_venv_installs_serves_every_committed_model_and_the_client_reranks(tmp_path: Path, full_app) -> None:
    source = clone_copy(REPO, tmp_path / "dialscore")
    venv, elsewhere = tmp_path / "venv", tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("DIALSCORE_")}
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    pip_install(venv, source, env)
    python = str(venv / "bin" / "python")
    found = subprocess.run([python, "-c", "import importlib.util as u, service; "
                                          "print(service.__file__, u.find_spec('torch') is None)"],
                           capture_output=True, text=True, cwd=elsewhere, env=env, check=True).stdout.split()
    assert found[0].startswith(str(venv)) and found[1] == "True"  # the installed copy, and no torch

    with running_server(elsewhere / "store-unused", workers=1, cwd=elsewhere,
                        command=(str(venv / "bin" / "dialscore"), "serve")) as server:
        assert server.ready[1]["models"] == committed_models()
        assert f"model store {venv}" in server.log()  # the copy pip installed, not the checkout's
        run_score_example(elsewhere, str(venv / "bin"))
        (elsewhere / "ratings.csv").write_text("system,human,metric\na,1,0.1\na,2,0.3\nb,3,0.2\nb,4,0.6\n")
        command = ["correlate", "ratings.csv", "--no-plots"]  # matplotlib is not a service requirement
        done = subprocess.run([str(venv / "bin" / "dialscore"), *command], capture_output=True, text=True,
                              timeout=300, cwd=elsewhere, env=env)
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
        assert (elsewhere / "correlate-report" / "correlate.json").is_file()

        pip_install(venv, source / "clients" / "python", env)
        done = subprocess.run([python, "-c", RERANK, server.url], capture_output=True, text=True, timeout=120,
                              cwd=elsewhere, env=env)
        assert done.returncode == 0, done.stderr
    expected = full_app.test_client().post("/rerank", json={
        "model": "autojudge-minilm", "context": ["hi! how was your weekend?"],
        "candidates": ["i don't know.", "great, i went hiking with my sister!", "no"]}).get_json()
    assert json.loads(done.stdout) == [[c["index"], c["score"]] for c in expected["ranking"]]
