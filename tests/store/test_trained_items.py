"""service/store/trained_items.py: a model's training keys, read and matched as the split key forms them."""
from __future__ import annotations

import json

import numpy as np
import pytest

from service.artifacts.manifest import ManifestError, sha256_file
from service.store import trained_items
from tests.conftest import copy_store
from training.data import judgements


def test_the_key_is_trainings_split_key_and_matches_any_spelling_of_its_words() -> None:
    """One rule: judgements.query_key calls item_key, so a change of either moves both."""
    context = ["Hello there!", "Don't you think it’s   late?"]
    assert judgements.query_key(context) == trained_items.item_key(context) == "q:don ' t you think it ’ s late ?"
    keys = trained_items.TrainedItems("m", trained_items.hashes([trained_items.item_key(context)]), {})
    assert keys.holds(["other", "DON'T you think  it’s late?"])
    assert not keys.holds(["Don't you think it’s late?", "and then?"])
    assert not keys.holds([])


def test_a_keys_file_that_is_not_sorted_distinct_hashes_is_refused(tmp_path) -> None:
    store = copy_store(tmp_path / "store", ("length",))
    folder = store / "length"
    assert trained_items.load(folder) is None  # a baseline ships no keys
    for values in (np.array([3, 2], np.uint64), np.array([1.0, 2.0])):
        np.save(folder / trained_items.FILE, values)
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        manifest["files"][trained_items.FILE] = {"sha256": sha256_file(folder / trained_items.FILE)}
        manifest["trained_items"] = {"file": trained_items.FILE}
        (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        with pytest.raises(ManifestError, match="sorted 1-d uint64"):
            trained_items.load(folder)
