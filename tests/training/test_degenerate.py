"""`degenerate`: a partial run reports without replacing the committed table or any card."""
from __future__ import annotations

import pytest

from tests.conftest import copy_store
from training.minilm.degenerate import main


def test_a_partial_run_prints_its_table_and_leaves_docs_and_cards(tmp_path, capsys, monkeypatch):
    store = copy_store(tmp_path / "store", ("length", "minilm-cosine"))
    monkeypatch.chdir(tmp_path)  # the default --out, docs/evaluation.md, would be here
    before = (store / "minilm-cosine" / "manifest.json").read_text()
    assert main(["--store", str(store), "--models", "length", "minilm-cosine", "--contexts", "5"]) == 0
    printed = capsys.readouterr().out
    assert "| length |" in printed and "| minilm-cosine |" in printed
    assert not (tmp_path / "docs").exists()
    assert (store / "minilm-cosine" / "manifest.json").read_text() == before
    with pytest.raises(SystemExit) as stopped:
        main(["--store", str(store), "--models", "no-such", "--contexts", "5"])
    assert stopped.value.code == 2
