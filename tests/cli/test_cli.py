"""`dialscore`: each command is the module its `python -m` command line runs, with the same options."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from service.cli import COMMANDS, main
from tests.conftest import BASELINES, REPO, copy_store
from tests.live_server import running_server


def test_without_a_command_it_lists_them_and_exits_2(capsys) -> None:
    assert main([]) == 2
    listed = capsys.readouterr().err
    assert all(f"  {name} " in listed for name in COMMANDS)
    assert main(["--help"]) == 0 and "dialscore COMMAND" in capsys.readouterr().out
    assert main(["scroe"]) == 2 and "no command 'scroe'" in capsys.readouterr().err


@pytest.mark.parametrize("command, module", [("serve", "service"), ("bulk", "service.bulk"),
                                             ("correlate", "service.analysis"), ("human-eval", "service.analysis"),
                                             ("score", None)])
def test_each_command_is_its_modules_command_line_and_its_usage_names_what_was_typed(command, module) -> None:
    """`dialscore serve --help` once began "usage: python -m service"."""
    done = subprocess.run([sys.executable, "-m", "service.cli", command, "--help"], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: dialscore {command} ")
    if module is not None:
        first = [command] if module == "service.analysis" else []
        direct = subprocess.run([sys.executable, "-m", module, *first, "--help"], cwd=REPO, capture_output=True,
                                text=True, timeout=120)
        assert direct.stdout.startswith(f"usage: python -m {' '.join([module, *first])} ")
        assert done.stdout.split("\n\n", 1)[1] == direct.stdout.split("\n\n", 1)[1]  # the same options


def test_serve_serves_the_store_that_model_store_names_from_the_working_folder(tmp_path: Path) -> None:
    """--model-store beats DIALSCORE_MODEL_STORE and is read from where the command was started."""
    store = copy_store(tmp_path / "mine", BASELINES)
    env = {"PYTHONPATH": str(REPO), "DIALSCORE_MODEL_STORE": str(tmp_path / "not-this-one")}
    with running_server(store, env, workers=1, cwd=tmp_path,
                        command=(sys.executable, "-m", "service.cli", "serve", "--model-store", "mine")) as server:
        assert server.ready == (200, {"status": "ready", "models": sorted(BASELINES), "workers_ready": 1,
                                      "workers": 1})
