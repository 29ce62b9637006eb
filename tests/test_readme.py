"""The README's examples run as written: `dialscore score` here (the command through `python -m
service.cli`), the client's in tests/clients/test_readme.py, `pip install .` and `dialscore serve` in
tests/test_install.py (which also runs this `dialscore score` with the installed command)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

README = REPO / "README.md"


def readme_block(heading: str, language: str = "bash") -> str:
    """The first ```language block under the README's `## heading`."""
    section = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", README.read_text(encoding="utf-8"),
                        flags=re.S | re.M)
    assert section, f"no section {heading!r} in the README"
    return re.search(rf"```{language}\n(.*?)```", section.group(1), flags=re.S).group(1)


def run_score_example(folder: Path, path: str) -> list[str]:
    """The `dialscore score` example run by bash in `folder` with PATH starting with `path`; the table
    it printed, checked against the one the README shows under the command."""
    example = readme_block("The `dialscore` command")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("DIALSCORE_")} | {
        "PATH": f"{path}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", example], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    shown = [line[2:] for line in example.splitlines() if line.startswith("# ")]
    printed = done.stdout.splitlines()
    assert printed[:len(shown)] == shown, done.stdout
    assert (folder / "scores.jsonl").is_file()
    return printed


def test_the_dialscore_score_example_prints_the_table_it_shows(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "dialscore"  # what pip's console script runs, on this checkout
    shim.write_text(f'#!/bin/sh\nPYTHONPATH="{REPO}" exec "{sys.executable}" -m service.cli "$@"\n')
    shim.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    printed = run_score_example(work, str(bin_dir))
    assert printed[4].startswith("models: autojudge-minilm 2026.") and printed[-1].startswith("dialscore 2026.")


def test_the_pip_section_installs_the_checkout_and_serves_from_another_folder() -> None:
    """The commands tests/test_install.py runs for real."""
    block = readme_block("Installing with pip")
    assert re.search(r"^pip install \. ", block, re.M) and re.search(r"^cd /tmp && dialscore serve ", block, re.M)


def test_the_readme_stays_short() -> None:
    """Newcomers read it whole; the rest belongs in docs/ (its table of pages)."""
    assert len(README.read_text(encoding="utf-8").split()) <= 1500
