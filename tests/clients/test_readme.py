"""The client's README example runs as written, against a real server in place of `make run`'s."""
from __future__ import annotations

import re
import subprocess
import sys

from tests.clients.conftest import CLIENT_SRC
from tests.test_readme import readme_block

README = CLIENT_SRC.parent / "README.md"


def readme_example(url: str) -> str:
    """The client README's one Python block, calling `url` in place of `make run`'s server."""
    [example] = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert "http://127.0.0.1:8000" in example
    return example.replace("http://127.0.0.1:8000", url)


def assert_readme_output(stdout: str) -> None:
    lines = stdout.splitlines()
    assert len(lines) == 4 and "candidate 1: great, i went hiking with my sister!" in lines[0]
    assert lines[2].endswith("[1] {'items.1.reference': 'Required, and not blank, by adem (a referenced model).'}")
    assert lines[3] == "404 unknown_model ['adem', 'autojudge-minilm', 'length']"


def test_the_readme_example_runs(server):
    done = subprocess.run([sys.executable, "-c", readme_example(server.url)],
                          capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(CLIENT_SRC)})
    assert done.returncode == 0, done.stderr
    assert_readme_output(done.stdout)


def test_the_main_readmes_client_example_runs(server):
    example = readme_block("Calling it", "python")
    assert "http://127.0.0.1:8000" in example
    done = subprocess.run([sys.executable, "-c", example.replace("http://127.0.0.1:8000", server.url)],
                          capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(CLIENT_SRC)})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[1, 0]\n"
