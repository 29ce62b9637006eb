"""The Makefile's documented knobs do what the README says (checked with `make -n`, nothing runs)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")


def dry_run(target: str, *args: str, env: dict[str, str] | None = None) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "DIALSCORE_DATA_DIR"} | (env or {})
    # the venv stamp may be missing on a bare checkout: -o treats it as up to date so only the recipe prints
    return subprocess.run(["make", "-n", "-o", ".venv/.dev", target, *args], cwd=REPO, env=environ,
                          capture_output=True, text=True, check=True, timeout=60).stdout


def data_dir(recipe: str) -> str:
    return re.search(r"(\S+)/human_eval/ji2022", recipe).group(1)


def test_data_on_the_command_line_wins_over_the_environment(tmp_path: Path) -> None:
    assert data_dir(dry_run("reproduce-human-eval", f"DATA={tmp_path}/b",
                            env={"DIALSCORE_DATA_DIR": f"{tmp_path}/a"})) == f"{tmp_path}/b"
    assert data_dir(dry_run("reproduce-human-eval", env={"DIALSCORE_DATA_DIR": f"{tmp_path}/a"})) == f"{tmp_path}/a"
    assert data_dir(dry_run("reproduce-human-eval")) == os.path.abspath(REPO / ".." / "shared" / "data")


def test_help_names_every_target_a_newcomer_is_told_about() -> None:
    listed = subprocess.run(["make", "help"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    phony = re.search(r"^\.PHONY:(.*)$", (REPO / "Makefile").read_text(encoding="utf-8"), re.M).group(1).split()
    missing = [t for t in phony if t != "help" and not re.search(rf"\b{re.escape(t)}\b", listed)]
    assert not missing, missing


def test_make_run_binds_where_the_dialscore_variables_say_and_the_command_line_wins() -> None:
    """`make run` passes --host/--port/--workers, which beat the environment, so it read only its own
    defaults; a platform's bare PORT must not move it either."""
    def run_line(*args: str, env: dict[str, str] | None = None) -> str:
        base = {k: v for k, v in os.environ.items() if not k.startswith("DIALSCORE_") and k not in ("PORT", "HOST")}
        out = subprocess.run(["make", "-n", "-o", ".venv/.serve", "run", *args], cwd=REPO, env=base | (env or {}),
                             capture_output=True, text=True, check=True, timeout=60).stdout
        return [line for line in out.splitlines() if " -m service " in line][-1]  # under `make test`, make[1] talks too

    assert run_line().endswith("--host 127.0.0.1 --port 8000 --workers 2")
    assert run_line(env={"DIALSCORE_PORT": "8061", "DIALSCORE_WORKERS": "3", "PORT": "9999"}).endswith(
        "--host 127.0.0.1 --port 8061 --workers 3")
    assert run_line("PORT=7", env={"DIALSCORE_PORT": "8061"}).endswith("--port 7 --workers 2")


def test_make_test_passes_pytest_args_as_ci_does() -> None:
    """.ci/run's second run: `make test PYTEST_ARGS="-m 'data or install'"`."""
    out = dry_run("test", "PYTEST_ARGS=-m 'data or install'")
    [recipe] = [line for line in out.splitlines() if " -m pytest" in line]  # under `make test`, make[1] talks too
    assert recipe.endswith("-m pytest -m 'data or install'")
