"""`python -m training`: an unknown command or a missing path is exit 2 with one line, not a traceback."""
from __future__ import annotations

from training.__main__ import main


def test_unknown_command_and_missing_paths_are_set_up_errors(tmp_path, capsys) -> None:
    assert main(["nosuch"]) == 2
    assert "unknown command 'nosuch'" in capsys.readouterr().err
    assert main(["selftalk", "--model", str(tmp_path / "missing"), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert str(tmp_path / "missing") in capsys.readouterr().err
