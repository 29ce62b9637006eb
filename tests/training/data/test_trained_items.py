"""`python -m training trained-items`: the keys each learned model ships are the judged items it read."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from service.store import trained_items
from tests.conftest import MODEL_STORE
from training.data import judgements
from training.data.trained_items import TRAINED_ON, main, pair_items, training_items


def test_every_model_fitted_to_judged_items_ships_keys_and_no_other_does() -> None:
    for folder in sorted(p for p in MODEL_STORE.iterdir() if (p / "manifest.json").is_file()):
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        assert (trained_items.MANIFEST_KEY in manifest) == (folder.name in TRAINED_ON), folder.name
        loaded = trained_items.load(folder)
        assert (loaded is not None) == (folder.name in TRAINED_ON)
    # One 8-byte hash per distinct (last turn, reply) read: about 72 KB for a model fitted to every set.
    assert sum((MODEL_STORE / m / trained_items.FILE).stat().st_size for m in TRAINED_ON) < 600_000


@pytest.mark.data
def test_the_committed_keys_are_the_split_the_served_models_were_trained_on(tmp_path) -> None:
    """Regenerated from the data they match the committed files; Gupta's set gives adem-minilm the 310
    train-partition items its card names (the 140 dev items and the 50 that repeat dev text are not keys)."""
    for model in TRAINED_ON:
        shutil.copytree(MODEL_STORE / model, tmp_path / model)
    assert main(["--store", str(tmp_path)]) == 0
    for model in TRAINED_ON:
        committed = np.load(MODEL_STORE / model / trained_items.FILE)
        assert np.array_equal(np.load(tmp_path / model / trained_items.FILE), committed), model
        assert (json.loads((tmp_path / model / "manifest.json").read_text()) ==
                json.loads((MODEL_STORE / model / "manifest.json").read_text())), model
    keys = trained_items.load(MODEL_STORE / "adem-minilm")
    gupta = training_items("adem-minilm")["dailydialog_gupta_multiref"]
    assert len(gupta) == 310 and all(keys.holds(i.context, i.response) for i in gupta)
    dev = judgements.load_set("dailydialog_gupta_multiref", "dev")
    assert len(dev) == 140 and not any(keys.holds(i.context, i.response) for i in dev)


@pytest.mark.data
def test_ruber_flags_the_judged_items_that_are_pairs_of_its_training_dialogues() -> None:
    """RUBER reads (turn, next turn) pairs, not ratings: the judged items among them are its training items,
    all in the train partition on the DailyDialog-based sets (next_turn keeps the dev queries out)."""
    found = pair_items("ruber-minilm")
    assert {"dailydialog_gupta_multiref", "xdial_dailydialog_zhao", "predictive_engagement", "holistic_eval"} <= set(found)
    keys = trained_items.load(MODEL_STORE / "ruber-minilm")
    for name in ("dailydialog_gupta_multiref", "xdial_dailydialog_zhao", "holistic_eval"):
        assert all(judgements.split_of(judgements.split_key(i)) == "train" for i in found[name]), name
        assert all(keys.holds(i.context, i.response) for i in found[name]), name


@pytest.mark.data
def test_a_generic_last_turn_flags_only_the_reply_trained_on() -> None:
    """unref-minilm-commercial read DSTC7 and ConTurE: no Gupta item is its, though ConTurE training
    contexts end in Gupta turns such as "what is it ?"; each ConTurE train item is."""
    keys = trained_items.load(MODEL_STORE / "unref-minilm-commercial")
    conture = judgements.load_set("conture", "train")
    assert all(keys.holds(i.context, i.response) for i in conture)
    turns = {judgements.normalise(i.context[-1]) for i in conture}
    gupta = judgements.load_set("dailydialog_gupta_multiref", "all")
    assert any(judgements.normalise(i.context[-1]) in turns for i in gupta)
    assert not any(keys.holds(i.context, i.response) for i in gupta)
