"""`minilm-report`: a run over some of the sets prints its table and writes no card and no docs; its tallies
count each distinct set of items once."""
from __future__ import annotations

import pytest

from tests.conftest import copy_store


@pytest.mark.data
def test_a_report_over_some_sets_writes_no_card_and_no_docs(tmp_path, capsys) -> None:
    from training.evaluation import minilm_report as report

    store = copy_store(tmp_path / "store", ("minilm-cosine",))
    before = (store / "minilm-cosine" / "manifest.json").read_bytes()
    assert report.main(["--store", str(store), "--sets", "holistic_eval", "--tried"]) == 0
    assert (store / "minilm-cosine" / "manifest.json").read_bytes() == before
    assert "holistic_eval" in capsys.readouterr().out  # printed, not written into docs/evaluation.md


def test_a_tally_counts_a_set_and_its_copy_once() -> None:
    from training.evaluation.minilm_report import verdicts

    def rows(mine: float, theirs: float) -> dict[str, dict]:
        return {"autojudge-minilm": {"pearson": mine}, "autojudge": {"pearson": theirs}}

    table = {"conture": rows(0.5, 0.1), "xdial_conture_turn": rows(0.5, 0.1), "dstc7": rows(0.1, 0.2)}
    assert verdicts(table)["autojudge-minilm"]["autojudge"] == (1, 2)
