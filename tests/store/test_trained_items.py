"""service/store/trained_items.py: a model's training keys, read and matched by last turn and reply, loosely."""
from __future__ import annotations

import json

import numpy as np
import pytest

from service.artifacts.manifest import ManifestError, sha256_file
from service import text
from service.store import trained_items
from tests.conftest import copy_store
from training.data import judgements, keys


def test_the_key_is_the_last_turn_and_reply_under_any_spelling() -> None:
    """Training's tokenised spelling and a release's own are one key; another reply to the same turn,
    or the same reply to another turn, is not."""
    keys = trained_items.TrainedItems("m", trained_items.hashes([trained_items.item_key(
        ["hello there !", "i did n't do a good job of it ."], "oh no , what happened ?")]), {})
    assert keys.holds(["I didn't do a good job of it."], "Oh no, what happened?")
    assert keys.holds(["other earlier turn", "I didn’t do a good job of it."], "oh no what happened")
    assert not keys.holds(["I didn't do a good job of it."], "that is fine .")
    assert not keys.holds(["hello there !"], "oh no , what happened ?")
    assert not keys.holds([], "oh no , what happened ?")


def test_a_model_with_no_keys_holds_no_line() -> None:
    """A keys file may be empty (a model whose sources share no item with the judged sets)."""
    empty = trained_items.TrainedItems("m", np.array([], dtype=np.uint64), {})
    assert not empty.holds(["hi"], "hello") and not empty.holds([], "")


def test_the_service_and_trainings_loose_keys_are_one_function_and_the_split_key_is_not_it() -> None:
    assert keys.match_key is text.match_key
    context = ["Hello there!", "Don't you think it’s   late?"]
    assert judgements.query_key(context) == "q:don ' t you think it ’ s late ?"  # the partition's key, unchanged


def test_keys_of_another_form_are_refused(tmp_path) -> None:
    """Keys hashed from another key form would match nothing, or the wrong lines: the manifest must name this unit."""
    folder = copy_store(tmp_path / "store", ("length",)) / "length"
    write_keys(folder, trained_items.hashes(["q:what is it ?"]), {"file": trained_items.FILE})
    with pytest.raises(ManifestError, match="another form"):
        trained_items.load(folder)
    write_keys(folder, trained_items.hashes(["q:what is it ?"]), {"file": trained_items.FILE, "unit": trained_items.UNIT})
    assert trained_items.load(folder) is not None


def write_keys(folder, values: np.ndarray, about: dict) -> None:
    np.save(folder / trained_items.FILE, values)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["files"][trained_items.FILE] = {"sha256": sha256_file(folder / trained_items.FILE)}
    manifest["trained_items"] = about
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def test_a_keys_file_that_is_not_sorted_distinct_hashes_is_refused(tmp_path) -> None:
    store = copy_store(tmp_path / "store", ("length",))
    folder = store / "length"
    assert trained_items.load(folder) is None  # a baseline ships no keys
    for values in (np.array([3, 2], np.uint64), np.array([2, 2], np.uint64), np.array([1.0, 2.0])):
        write_keys(folder, values, {"file": trained_items.FILE, "unit": trained_items.UNIT})
        with pytest.raises(ManifestError, match="sorted 1-d uint64"):
            trained_items.load(folder)


@pytest.mark.parametrize(("turn", "plain"), [
    ("A: excuse me", "excuse me"), ("User 1: hi there", "hi there"), ("  Bot: fine", "fine"),
    ("Speaker A:  ok", "ok"), ("Person B : yes", "yes"), ("user: hi", "hi"), ("b: sure", "sure"),
    ("The answer is: no", "The answer is: no"), ("I would say: yes.", "I would say: yes."),
    ("12:30 works for me", "12:30 works for me"), ("well: maybe", "well: maybe"), ("B:no space", "B:no space"),
    ("my grade in Math: an A", "my grade in Math: an A"), ("see Chapter 2: the end", "see Chapter 2: the end")])
def test_a_speaker_tag_is_a_name_or_a_role_before_a_colon_not_any_phrase(turn: str, plain: str) -> None:
    """A line's turns match a training item with or without a tag, so a tag read too widely would mark
    another reply ("I would say: yes." for "yes.") as a training item."""
    assert trained_items.untagged(turn) == plain
