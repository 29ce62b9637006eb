"""DailyDialog reference recovery (evaluation only): normalisation, real matches, ambiguity."""
from __future__ import annotations

import pytest

from training.data.judgements import JudgedItem, load_set
from training.data.references import (DailyDialogIndex, dailydialog_index, is_reference_reply, match_key,
                                      recover_reference, with_recovered_references)


def judged(context: list[str], response: str = "ok .", set_name: str = "holistic_eval",
           references: list[str] | None = None) -> JudgedItem:
    return JudgedItem(set_name, "x", context, response, references or [], 3.0, None, None)


def test_match_key_agrees_across_the_sources_spellings():
    # DailyDialog's spaced curly apostrophe, holistic_eval's plain one, xDial's NLTK split
    assert match_key("I don ’ t know .") == match_key("i don't know.") == match_key("i do n't know .")
    # xDial drops some symbols DailyDialog keeps
    assert match_key("you can get DEL or dial - up .") == match_key("you can get del or dial up .")
    assert match_key("about $ 12 , 000 .") == match_key("about 12 , 000 .")
    assert match_key("  Hello,\n  World ! ") == "helloworld"


def test_index_returns_the_next_turn_only_when_unambiguous():
    index = DailyDialogIndex([["Hi !", "How are you ?", "Fine , thanks ."],
                              ["Hello .", "How are you ?", "Not bad ."],
                              ["Hi !", "How are you ?", "Fine , thanks !"],  # same reply, other punctuation
                              ["Bye ."]])
    assert index.next_turn(["hi!", "how are you?"]) == "Fine , thanks ."
    assert index.next_turn(["How are you?"]) is None  # two different continuations
    assert index.next_turn(["Hello.", "How are you ?"]) == "Not bad ."
    assert index.next_turn(["Bye."]) is None  # last turn: nothing follows
    assert index.next_turn(["nowhere to be found"]) is None
    assert index.next_turn([]) is None


@pytest.fixture(scope="module")
def index() -> DailyDialogIndex:
    return dailydialog_index()


@pytest.mark.data
def test_real_records_of_each_dailydialog_set_are_matched(index):
    # holistic_eval row 0: the first turn of DailyDialog test dialogue 0 (single-turn context)
    item = next(i for i in load_set("holistic_eval") if i.item_id == "h0")
    assert item.context == ["Hey man , you wanna buy some weed ?"]
    assert recover_reference(item, index) == "Some what ?"
    # xdial dailydialog-zhao: lower-cased, NLTK-tokenised three-turn context
    zhao = judged(["well , how does it look ?", "it 's a perfect fit .", "let me pay for it now ."],
                  set_name="xdial_dailydialog_zhao")
    assert match_key(recover_reference(zhao, index)) == match_key("Cash , credit card , or debit card ?")
    # xdial dailydialog-gupta: the recovered turn is Gupta et al.'s original reference ("prevgt")
    gupta = next(i for i in load_set("dailydialog_gupta_multiref") if i.item_id == "73_4:human")
    assert match_key(recover_reference(judged(gupta.context, set_name="xdial_dailydialog_gupta"), index)) \
        == match_key("then tell me something about your background .")


@pytest.mark.data
def test_ambiguous_other_sets_and_referenced_items_get_none(index):
    assert recover_reference(judged(["How may I help you ?"]), index) is None  # many DailyDialog replies
    # ConTurE is not built on DailyDialog: never matched, even where a turn happens to occur there
    assert recover_reference(judged(["Hey man , you wanna buy some weed ?"], set_name="conture"), index) is None
    assert recover_reference(judged(["Hey man , you wanna buy some weed ?"], references=["x"]), index) is None


@pytest.mark.data
def test_with_recovered_references_fills_copies_and_flags_the_human_reply(index):
    items = [judged(["Hey man , you wanna buy some weed ?"], response="some what?"),
             judged(["How may I help you ?"])]
    filled, gained = with_recovered_references(items, index)
    assert gained == 1 and filled[0].references == ["Some what ?"] and filled[1].references == []
    assert items[0].references == []  # the loaded items are not changed
    assert is_reference_reply(filled[0]) and not is_reference_reply(filled[1])
