"""`degenerate`: the check set holds only unseen development contexts; a partial run reports without replacing
the committed table or any card."""
from __future__ import annotations

import numpy as np
import pytest

from service.scorers.base import ScoreBatch
from tests.conftest import copy_store
from training.data.holdout import DevHoldout
from training.evaluation import degenerate
from training.evaluation.degenerate import CHECK_KINDS, Case, main, shares


@pytest.mark.data
def test_a_partial_run_prints_its_table_and_leaves_docs_and_cards(tmp_path, capsys, monkeypatch):
    store = copy_store(tmp_path / "store", ("length", "minilm-cosine"))
    monkeypatch.chdir(tmp_path)  # the default --out, docs/evaluation.md, would be here
    before = (store / "minilm-cosine" / "manifest.json").read_text()
    assert main(["--store", str(store), "--models", "length", "minilm-cosine", "--contexts", "5"]) == 0
    printed = capsys.readouterr().out
    assert "| length |" in printed and "| minilm-cosine |" in printed
    assert "| near-copy-x2 | near-copy-x3 | topic-word | shuffled-copy | all |" in printed
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
    for kind in CHECK_KINDS:
        cases.append(Case(("hi",), "abcd", "ref", kind, "ab"))    # 2 < 4: below, a success
        cases.append(Case(("hi",), "abcd", "ref", kind, "wxyz"))  # 4 == 4: a tie, a failure
        cases.append(Case(("hi",), "abcd", "ref", kind, "abcdef"))  # 6 > 4: a failure
    result = shares(_LengthScorer(), cases)
    for kind in CHECK_KINDS:
        assert result[kind] == pytest.approx(1 / 3)
    assert result["all"] == pytest.approx(1 / 3)


@pytest.mark.data
def test_check_set_uses_only_development_contexts() -> None:
    from training.data.judgements import normalise, split_of

    trained = degenerate.trained_text()
    cases = degenerate.check_set(max_contexts=60, trained=trained)
    assert len(cases) == 60 * len(degenerate.CHECK_KINDS)
    assert all(split_of("q:" + normalise(c.context[-1])) == "dev" for c in cases)
    assert not any(degenerate.seen_in_training(trained, list(c.context), [c.human, c.reference]) for c in cases)
    # ... which leaves out cases the split key alone lets through: of the first 60 such contexts, one
    # (the 59th) repeats a trained (query, reply) under another spelling.
    assert cases[-1].context != degenerate.check_set(max_contexts=60, trained=DevHoldout())[-1].context
    assert all(c.human != c.reference for c in cases)
    assert np.mean([c.degenerate == "" for c in cases]) == pytest.approx(1 / len(degenerate.CHECK_KINDS))
    for case in cases:  # the repetition kinds say the last context turn again
        if case.kind == "near-copy-x3":
            assert case.degenerate == " ".join([case.context[-1]] * 3)
        if case.kind == "topic-word":
            assert case.degenerate.split()[0] in case.context[-1].lower()


def test_a_check_case_is_seen_when_training_held_its_answer_not_its_opening() -> None:
    trained = DevHoldout.of([(["hello there", "Did you go to the concert last night?"], "Yes, it was loud.", True)])
    seen = lambda context, replies: degenerate.seen_in_training(trained, context, replies)  # noqa: E731
    assert seen(["did you go to the concert last night ?"], ["yes , it was loud ."])  # the same pair, respelled
    assert seen(["Did you go to the concert last night?"], ["No, I was ill."])  # a specific trained query
    assert not seen(["hello there"], ["hi!"])  # an opening read in training says nothing of this reply
    short = DevHoldout.of([(["Yes."], "Good, then let's go to the museum.", True)])
    assert not degenerate.seen_in_training(short, ["yes"], ["Fine."])  # "Yes." opens countless exchanges
