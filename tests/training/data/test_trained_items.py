"""`python -m training trained-items`: the keys each learned model ships are its training items' split keys."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from service.store import trained_items
from tests.conftest import MODEL_STORE
from training.data import judgements
from training.data.trained_items import TRAINED_ON, main, training_items


def test_every_model_fitted_to_judged_items_ships_keys_and_no_other_does() -> None:
    for folder in sorted(p for p in MODEL_STORE.iterdir() if (p / "manifest.json").is_file()):
        manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        assert (trained_items.MANIFEST_KEY in manifest) == (folder.name in TRAINED_ON), folder.name
        loaded = trained_items.load(folder)
        assert (loaded is not None) == (folder.name in TRAINED_ON)
    assert sum((MODEL_STORE / m / trained_items.FILE).stat().st_size for m in TRAINED_ON) < 200_000


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
    assert len(gupta) == 310 and all(keys.holds(i.context) for i in gupta)
    dev = judgements.load_set("dailydialog_gupta_multiref", "dev")
    assert len(dev) == 140 and not any(keys.holds(i.context) for i in dev)
