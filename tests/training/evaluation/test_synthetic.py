"""The synthetic check: its cases from a tiny corpus (seeded, every kind, nothing training holds, dev queries
only where asked), and its shares from the served `length` model, whose answer is known."""
from __future__ import annotations

import pytest

from service.store.model_store import ModelStore
from tests.conftest import copy_store
from training.data.degenerate import CHECK_GENERIC
from training.data.holdout import DevHoldout
from training.data.judgements import query_key, split_of
from training.evaluation.held_in import seen_in_training
from training.evaluation.synthetic import agreement, measure
from training.evaluation.synthetic_cases import KINDS, Case, build

TOPICS = ("green tea", "night trains", "free jazz", "autumn rain", "blitz chess", "sourdough bread")


def corpus(talks: int = 12, turns: int = 8, source: str = "a") -> list[list[str]]:
    """Dialogues of distinct turns, each long enough to be a query and a reply; two talks or more a topic,
    whose turns share their topic's words and no other talk's."""
    return [[f"{source} line {t} of talk {n} on {TOPICS[n % len(TOPICS)]} today" for t in range(turns)]
            for n in range(talks)]


def test_the_cases_are_seeded_and_hold_every_kind_drawn_as_its_name_says():
    dialogues = {"a": corpus(), "b": corpus(source="b")}
    cases = build(dialogues, DevHoldout())
    assert cases == build(dialogues, DevHoldout()) and cases != build(dialogues, DevHoldout(), seed=1)
    assert {(c.source, c.kind) for c in cases} == {(s, k) for s in dialogues for k in KINDS}
    assert len({c.context for c in cases}) == 24  # one context a dialogue
    for c in cases:
        turns = next(d for d in dialogues[c.source] if c.true in d)
        i = turns.index(c.true)
        assert list(c.context) == turns[max(0, i - 5):i] and c.negative != c.true
        where = next(d for d in dialogues[c.source] if c.negative in d) if c.kind != "generic" else None
        assert {"random": where is not turns, "hard": where is not turns, "copy": c.negative in c.context,
                "out-of-place": where is turns and where.index(c.negative) >= i + 2,
                "generic": c.negative in CHECK_GENERIC}[c.kind], c
    hard = [c for c in cases if c.kind == "hard"]
    assert all(c.negative.split()[7:9] == c.context[-1].split()[7:9] for c in hard)  # a talk on the same topic


def test_no_case_holds_a_query_and_true_turn_that_training_holds():
    dialogues = {"a": corpus(talks=8)}
    first = build(dialogues, DevHoldout())
    held = DevHoldout.of([([c.context[-1]], c.true, False) for c in first if c.kind == "copy"][:4])
    kept = build(dialogues, held)
    assert kept and not any(seen_in_training(held, list(c.context), [c.true]) for c in kept)
    assert len({c.context for c in kept}) == len({c.context for c in first}) - 4


def test_a_partitioned_source_keeps_dev_queries_only_and_caps_its_contexts():
    dialogues = {"dailydialog": corpus(talks=40, source="dd")}
    anywhere = build(dialogues, DevHoldout(), partitioned=())
    dev = build(dialogues, DevHoldout())
    assert {split_of(query_key(list(c.context))) for c in anywhere} == {"dev", "train"}
    assert dev and {split_of(query_key(list(c.context))) for c in dev} == {"dev"}
    assert len({c.context for c in build(dialogues, DevHoldout(), contexts={"dailydialog": 3})}) == 3


def case(kind: str, true: str, negative: str, source: str = "a") -> Case:
    return Case(source, ("what did you do today?",), true, kind, negative)


def test_served_length_orders_the_longer_reply_first_and_a_tie_is_wrong(tmp_path):
    """`length` scores a reply by its words: right where the true turn is longer, wrong where it is shorter or
    as long (a tie)."""
    store = ModelStore(copy_store(tmp_path / "store", ("length",)), models=("length",))
    assert store.load(), store.failures
    scorer = store.scorers["length"]
    cases = [case("random", "i went out for a long walk", "no"),  # right
             case("random", "i slept", "i went out for a long walk"),  # wrong
             case("copy", "i went out walking", "what did you do"),  # four words each: a tie, wrong
             case("copy", "i went out walking", "i went", "b"),  # right
             case("generic", "i went out walking", "ok.", "b")]  # right
    result = measure(cases, lambda items: scorer.score(items).scores, batch=2)
    assert result.kinds == {"random": 0.5, "copy": 0.5, "generic": 1.0}
    assert result.mean == pytest.approx(2 / 3)  # each kind weighted alike, not each pair (3 of 5)
    assert result.sources == {"a": pytest.approx(1 / 4), "b": 1.0}  # a: random .5, copy 0; b: copy 1, generic 1


def test_the_figure_is_the_mean_over_the_kinds():
    cases = [case("random", "x", "y")] + [case("hard", "x", "y")] * 3
    assert agreement(cases, [True, True, False, False]).mean == pytest.approx((1 + 1 / 3) / 2)
