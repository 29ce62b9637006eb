"""Train each -minilm head for a moment on a handful of real items, export it, serve it."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from service.artifacts.runtime import Runtime, RuntimeSettings  # noqa: E402
from service.scorers.base import Item  # noqa: E402
from service.store.model_store import ModelStore  # noqa: E402
from training.core.turn_training import Config, predict  # noqa: E402
from training.encoders.minilm.embed import EmbeddingCache, load_encoder  # noqa: E402
from training.train_minilm import export_model, train  # noqa: E402

pytestmark = pytest.mark.data  # every test here reads the real data

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> EmbeddingCache:
    torch.set_num_threads(1)
    return EmbeddingCache(tmp_path_factory.mktemp("cache"), load_encoder())


@pytest.mark.parametrize("model,encoding,pooling", [("autojudge-minilm", "joined2", "last"),
                                                    ("adem-minilm", "turns", "attn"),
                                                    ("ruber-minilm", "turns", "gru")])
def test_train_export_and_serve(model: str, encoding: str, pooling: str, cache: EmbeddingCache,
                                tmp_path: Path) -> None:
    config = Config(model=model, encoding=encoding, pooling=pooling, epochs=2, batch=16, max_judged=6,
                    negatives_contexts=4, ruber_pairs=12, next_turn_epochs=1, next_turn_max_pairs=32)
    head = train(config, cache, log=lambda *_: None)
    store_root = tmp_path / "store"
    # the committed encoder alone, as the head's training vectors came from (a built w8a8 would be served)
    shutil.copytree(REPO / "model_store" / "minilm-l6", store_root / "minilm-l6",
                    ignore=shutil.ignore_patterns("encoder-fp32.onnx", "encoder-w8a8.onnx"))
    manifest = export_model(head, config, cache, store_root / model, {"tiny": 0.0}, 1.0)
    assert manifest.config["context_encoding"] == encoding
    assert (store_root / model / "README.md").read_text().startswith(f"# {model}")
    # The reference-free model's card says what a user choosing it gives up (issue 7's unmet bar).
    assert ("**limitations**: reference-free" in (store_root / model / "README.md").read_text()) == (
        model == "autojudge-minilm")
    if model == "ruber-minilm":
        for low, high in manifest.config["normalise"].values():
            assert low < high

    store = ModelStore(store_root, Runtime(RuntimeSettings(providers=("CPUExecutionProvider",),
                                                            intra_op_threads=1)), (model,))
    store.load()
    assert not store.failures, store.failures
    items = [Item(["do you like jazz?", "only the old records."], "me too, especially coltrane.", "i love it."),
             Item(["where is the station?"], "two blocks north.", "just around the corner.")]
    served = store.scorers[model].score(items, {"blend": "arithmetic"} if model == "ruber-minilm" else None)
    referenced = model != "autojudge-minilm"
    trained = predict(head, cache, encoding, [i.context for i in items], [i.response for i in items],
                      [i.reference for i in items] if referenced else None)
    if model == "ruber-minilm":
        ranges = manifest.config["normalise"]
        parts = [np.clip((trained[k] - ranges[k][0]) / (ranges[k][1] - ranges[k][0]), 0, 1) for k in ("s_ref", "s_unref")]
        expected = (parts[0] + parts[1]) / 2
    else:
        expected = trained["score"]
    np.testing.assert_allclose(served.scores, expected, atol=1e-4)


def test_dev_rows_of_referenced_heads_include_the_recovered_reference_sets() -> None:
    """train-minilm measures referenced heads where `evaluate` does: recovered DailyDialog references too."""
    from training.data.negatives import judged_rows

    own = judged_rows("dev", referenced=True, limit=5)
    recovered = judged_rows("dev", referenced=True, limit=5, recover_references=True)
    assert "predictive_engagement" not in own and "dstc7" in own
    assert {"predictive_engagement", "xdial_dailydialog_zhao", "dstc7"} <= set(recovered)
    contexts, responses, references, scores = recovered["predictive_engagement"]
    assert len(contexts) == len(responses) == len(references) == len(scores) == 5 and all(references)
    # training reads the train partition without recovery: references never reach the fitting data
    assert "predictive_engagement" not in judged_rows("train", referenced=True, limit=5)
