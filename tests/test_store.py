import logging

from service.runtime import Runtime
from service.store import ModelStore
from tests.conftest import BASELINES, copy_store


def test_every_baseline_loads(baseline_store):
    store = ModelStore(baseline_store, Runtime())
    assert store.load() is True
    assert set(store.scorers) == set(BASELINES)
    assert not store.failures


def test_altered_component_takes_out_only_its_models(tmp_path, caplog):
    root = copy_store(tmp_path / "store", BASELINES)
    vectors = root / "glove-50d" / "vectors.npy"
    data = bytearray(vectors.read_bytes())
    data[len(data) // 2] ^= 0xFF
    vectors.write_bytes(bytes(data))
    store = ModelStore(root, Runtime())
    with caplog.at_level(logging.ERROR):
        assert store.load() is False
    assert "glove-50d" in store.failures and "vectors.npy" in store.failures["glove-50d"]
    for name in ("emb-average", "emb-extrema", "emb-greedy"):
        assert name not in store.scorers
        assert "glove-50d" in store.failures[name]
    assert {"bleu4", "rouge-l", "length"} <= set(store.scorers)
    assert "vectors.npy" in caplog.text


def test_missing_file_and_unknown_implementation(tmp_path):
    root = copy_store(tmp_path / "store", ("length", "bleu4"))
    (root / "length" / "manifest.json").write_text((root / "length" / "manifest.json").read_text()
                                                   .replace('"scorer": "length"', '"scorer": "no-such"'))
    (root / "bleu4" / "extra.json").write_text("{}")  # unlisted files are ignored, listed ones checked
    store = ModelStore(root, Runtime())
    assert store.load() is False
    assert "no-such" in store.failures["length"]
    assert "bleu4" in store.scorers


def test_configured_model_absent_is_a_failure(baseline_store):
    store = ModelStore(baseline_store, Runtime(), models=("length", "ghost"))
    assert store.load() is False
    assert set(store.scorers) == {"length"}
    assert "ghost" in store.failures
