"""Within-context pairwise agreement against pairs counted by hand."""
from __future__ import annotations

import numpy as np
import pytest

from training.evaluation.pairwise import context_groups, pairwise_agreement


def test_groups_key_on_conversation_and_context():
    keys = [("a", ("hi",)), ("a", ("hi",)), ("b", ("hi",)), ("a", ("hi", "yo"))]
    assert context_groups(keys).tolist() == [0, 0, 1, 2]


def test_pairs_within_a_context_with_a_human_gap_ordered_as_people_do():
    groups = np.array([0, 0, 0, 1, 1, 2])
    human = np.array([5.0, 3.0, 3.2, 4.0, 1.0, 5.0])
    # context 0: (5, 3) and (5, 3.2) count, (3, 3.2) is under the 0.5 gap; context 1: one pair; context 2: none
    model = np.array([0.9, 0.1, 0.95, 0.2, 0.2, 0.0])
    share, pairs = pairwise_agreement(groups, human, model)
    # (5 vs 3): right; (5 vs 3.2): wrong; (4 vs 1): a model tie, wrong
    assert pairs == 3 and share == pytest.approx(1 / 3)
    share, pairs = pairwise_agreement(groups, human, model, min_gap=0.1)
    assert pairs == 4 and share == pytest.approx(2 / 4)  # (3 vs 3.2) now counts, and the model orders it right


def test_no_pair_is_none_not_zero():
    assert pairwise_agreement(np.array([0, 1]), np.array([1.0, 5.0]), np.array([0.0, 1.0])) == (None, 0)


def test_the_reranking_table_counts_sets_above_each_bar():
    from training.evaluation.evaluate import Result
    from training.evaluation.reranking import CONTEXT_PART, reranking_table

    def result(model, set_name, r, share):
        return Result(model, set_name, 30, pearson=r, pairwise=share, pairs=40)

    figures = {"a": {"free": (0.5, 0.7), "autojudge-minilm": (0.4, 0.6), CONTEXT_PART: (0.6, 0.65)},
               "b": {"free": (0.3, 0.8), "autojudge-minilm": (0.2, 0.7), CONTEXT_PART: (0.1, 0.9)}}
    results = {s: {m: result(m, s, r, p) for m, (r, p) in row.items()} for s, row in figures.items()}
    distinct = {"a": {"minilm-cosine": result("minilm-cosine", "a", 0.45, None), "free": result("free", "a", 0.5, None)}}
    lines = reranking_table(results, ["a", "b"], ["free", "autojudge-minilm"], {"free": "unreferenced",
                                                                                 "autojudge-minilm": "unreferenced"},
                            distinct)
    row = next(line for line in lines if line.startswith("| free |"))
    assert row == "| free | 0.400 | 2/2 | 1/2 | 2/2 | 1/2 | 0.750 | 0.500 (+0.050) |"


def test_the_means_and_tallies_count_a_set_and_its_alias_once():
    """xdial_dailydialog_gupta is dailydialog_gupta_multiref's items again: its column stays, the means and the
    sets-above counts read it once."""
    from training.evaluation.evaluate import Result
    from training.evaluation.reranking import CONTEXT_PART, pairwise_table, reranking_table

    figures = {"dstc7": {"free": (0.2, 0.6), "autojudge-minilm": (0.3, 0.5), CONTEXT_PART: (0.1, 0.5)},
               "dailydialog_gupta_multiref": {"free": (0.6, 0.9), "autojudge-minilm": (0.5, 0.8),
                                              CONTEXT_PART: (0.1, 0.5)}}
    figures["xdial_dailydialog_gupta"] = figures["dailydialog_gupta_multiref"]
    results = {s: {m: Result(m, s, 30, pearson=r, pairwise=p, pairs=40) for m, (r, p) in row.items()}
               for s, row in figures.items()}
    sets, models = list(figures), ["free", "autojudge-minilm"]
    lines = pairwise_table(results, sets, models)
    assert "| mean (2 distinct sets) |" in lines[3] and "xdial_dailydialog_gupta (dailydialog_gupta_multiref" in lines[1]
    assert next(line for line in lines if line.startswith("| free |")).endswith("| 0.600 | 0.900 | 0.900 | 0.750 |")
    kinds = dict.fromkeys(models, "unreferenced")
    row = next(line for line in reranking_table(results, sets, models, kinds, {}) if line.startswith("| free |"))
    assert row == "| free | 0.400 | 1/2 | 2/2 | 2/2 | 2/2 | 0.750 | – |"


def test_a_set_header_gives_the_most_and_the_fewest_pairs_where_models_differ():
    """dstc7's header said 10896 pairs while the referenced models were measured on 10561 (the items
    with a reference): a reader checking a count against a model's figure found it wrong."""
    from training.evaluation.evaluate import Result
    from training.evaluation.reranking import pairwise_table

    results = {"dstc7": {"free": Result("free", "dstc7", 30, pairwise=0.6, pairs=40),
                         "ref": Result("ref", "dstc7", 30, pairwise=0.5, pairs=31)},
               "conture": {"free": Result("free", "conture", 30, pairwise=0.6, pairs=25)}}
    header = pairwise_table(results, ["dstc7", "conture"], ["free", "ref"])[3]
    assert header.startswith("| model | dstc7 (40 / 31) | conture (25) |"), header
