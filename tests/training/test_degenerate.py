"""`degenerate`: a partial run reports without replacing the committed table or any card."""
from __future__ import annotations

import pytest

from service.scorers.base import ScoreBatch
from tests.conftest import copy_store
from training.minilm.degenerate import KINDS, Case, main, shares


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


class _LengthScorer:
    """A stand-in model whose score is the reply's length in characters (ties are easy to make)."""

    def score(self, items, options=None, cache=None):
        return ScoreBatch([float(len(item.response)) for item in items])


def test_shares_count_a_tie_as_a_failure_and_below_as_a_success():
    """The check's definition (its docs table says 'ties count as failures'): a degenerate reply
    scoring exactly the human one's score did not lose, so it must not count as caught."""
    cases = []
    for kind in KINDS:
        cases.append(Case(("hi",), "abcd", "ref", kind, "ab"))    # 2 < 4: below, a success
        cases.append(Case(("hi",), "abcd", "ref", kind, "wxyz"))  # 4 == 4: a tie, a failure
        cases.append(Case(("hi",), "abcd", "ref", kind, "abcdef"))  # 6 > 4: a failure
    result = shares(_LengthScorer(), cases)
    for kind in KINDS:
        assert result[kind] == pytest.approx(1 / 3)
    assert result["all"] == pytest.approx(1 / 3)
