"""`minilm-report`: a run over some of the sets prints its table and writes no card and no docs."""
from __future__ import annotations

import pytest

from tests.conftest import copy_store

pytestmark = pytest.mark.data  # every test here reads the real data


def test_a_report_over_some_sets_writes_no_card_and_no_docs(tmp_path, capsys) -> None:
    from training.evaluation import minilm_report as report

    store = copy_store(tmp_path / "store", ("minilm-cosine",))
    before = (store / "minilm-cosine" / "manifest.json").read_bytes()
    assert report.main(["--store", str(store), "--sets", "holistic_eval", "--tried"]) == 0
    assert (store / "minilm-cosine" / "manifest.json").read_bytes() == before
    assert "holistic_eval" in capsys.readouterr().out  # printed, not written into docs/evaluation.md
