import json
import logging
import shutil
import traceback

from service.artifacts.runtime import Runtime
from service.store.model_store import ModelStore
from tests.conftest import BASELINES, MODEL_STORE, copy_store


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


def _manifest(root, name):
    return root / name / "manifest.json"


def test_a_manifest_field_of_the_wrong_shape_takes_out_only_that_model(tmp_path):
    """`"score_range": [1]` raised IndexError out of the loading thread: every model stayed
    "still loading" for good (a configuration probe)."""
    root = copy_store(tmp_path / "store", ("length", "bleu4"))
    text = json.loads(_manifest(root, "bleu4").read_text())
    text["score_range"] = [1]
    _manifest(root, "bleu4").write_text(json.dumps(text))
    store = ModelStore(root, Runtime())
    assert store.load() is False and store.loaded
    assert "score_range" in store.failures["bleu4"] and store.public_failures["bleu4"] == "manifest invalid: a field's type"
    assert set(store.scorers) == {"length"}


def test_a_manifest_with_a_number_python_cannot_read_takes_out_only_that_model(tmp_path):
    """An integer of more than 4,300 digits in one card raised a bare ValueError that ended the whole
    store's load: every model out."""
    root = copy_store(tmp_path / "store", ("length", "bleu4"))
    text = _manifest(root, "bleu4").read_text()
    _manifest(root, "bleu4").write_text(text.replace('"card": {', '"card": {"big": ' + "1" * 5000 + ", ", 1))
    store = ModelStore(root, Runtime())
    assert store.load() is False and store.loaded
    assert "digits" in store.failures["bleu4"]
    assert set(store.scorers) == {"length"}


def test_a_manifest_may_not_relabel_what_its_scorer_computes(tmp_path):
    """bleu4 relabelled "unreferenced" (requires to match) loaded, was scored without a reference and
    still read one when sent, against "unreferenced models ignore the reference"."""
    root = copy_store(tmp_path / "store", ("length", "bleu4"))
    text = json.loads(_manifest(root, "bleu4").read_text())
    text["kind"], text["requires"] = "unreferenced", ["context", "response"]
    _manifest(root, "bleu4").write_text(json.dumps(text))
    store = ModelStore(root, Runtime())
    assert store.load() is False
    assert "computes a referenced score" in store.failures["bleu4"]
    assert store.public_failures["bleu4"] == "manifest invalid: kind"
    assert set(store.scorers) == {"length"}


def test_an_unreadable_manifest_takes_out_only_that_model(tmp_path, monkeypatch):
    """A PermissionError (mode 000, as the probe set it; faked, since tests may run as root) once
    killed the loading thread."""
    from pathlib import Path

    root = copy_store(tmp_path / "store", ("length", "bleu4"))
    unreadable = _manifest(root, "bleu4")
    read_bytes = Path.read_bytes

    def guarded(self, *args, **kwargs):
        if self == unreadable:
            raise PermissionError(13, "Permission denied", str(self))
        return read_bytes(self, *args, **kwargs)

    monkeypatch.setattr(Path, "read_bytes", guarded)
    store = ModelStore(root, Runtime())
    assert store.load() is False
    assert store.public_failures["bleu4"] == "manifest unreadable" and "length" in store.scorers


def test_a_broken_model_left_out_of_the_configured_list_does_not_hold_readiness(tmp_path):
    """With DIALSCORE_MODELS, only those models' and their components' manifests are read: an
    operator can serve around a broken model."""
    root = copy_store(tmp_path / "store", ("length", "bleu4", "emb-average"))
    _manifest(root, "bleu4").write_text("{ half a manifest")
    (root / "lost+found").mkdir()
    store = ModelStore(root, Runtime(), models=("length", "emb-average"))
    assert store.load() is True, store.failures
    assert set(store.scorers) == {"length", "emb-average"} and "glove-50d" in store.components


def test_a_folder_without_a_manifest_is_skipped_not_a_failed_model(tmp_path, caplog):
    root = copy_store(tmp_path / "store", ("length",))
    (root / "lost+found").mkdir()  # every ext4 volume has one
    store = ModelStore(root, Runtime())
    with caplog.at_level(logging.WARNING):
        assert store.load() is True
    assert "lost+found" in caplog.text and "lost+found" not in store.failures


def test_a_store_with_nothing_to_serve_is_not_ready(tmp_path):
    (tmp_path / "empty").mkdir()
    store = ModelStore(tmp_path / "empty", Runtime())
    assert store.load() is False
    assert store.public_failures == {"model_store": "no model to serve"}


def test_a_bug_while_loading_ends_the_load_with_a_failure_not_a_worker_loading_for_ever(tmp_path, monkeypatch):
    from service.app import create_app

    root = copy_store(tmp_path / "store", ("length",))
    monkeypatch.setattr(ModelStore, "_read_manifests", lambda self: 1 / 0)
    client = create_app({"model_store": root, "load_sync": True}).test_client()
    ready = client.get("/readyz")
    assert ready.status_code == 503
    details = ready.get_json()["error"]["details"]
    assert "loading" not in details or not details["loading"], details
    assert "ZeroDivisionError" in details["failed"]["model_store"]


def test_a_model_that_fails_from_a_bug_is_logged_with_its_traceback_and_a_bad_manifest_without(tmp_path, caplog,
                                                                                          monkeypatch):
    """Clients are told "load error (TypeError); see the service log": the log must then hold where it was
    raised, or a failure seen once (a race in a library) cannot be traced."""
    from service.store.registry import scorer_class

    root = copy_store(tmp_path / "store", ("length", "bleu4"))
    text = json.loads(_manifest(root, "bleu4").read_text())
    text["score_range"] = [1]
    _manifest(root, "bleu4").write_text(json.dumps(text))

    def warm_up(self):
        raise TypeError("raised in warm_up")

    monkeypatch.setattr(scorer_class("length"), "warm_up", warm_up)
    with caplog.at_level(logging.ERROR):
        assert ModelStore(root, Runtime()).load() is False
    failed = {r.getMessage().split()[1]: r for r in caplog.records if "is not served" in r.getMessage()}
    assert failed["length"].exc_info and "in warm_up" in "".join(traceback.format_exception(*failed["length"].exc_info))
    assert failed["bleu4"].exc_info is None


def test_a_uses_entry_that_is_not_a_name_takes_out_only_that_model(tmp_path):
    """`"uses": [["x"]]` raised TypeError in the store's own bookkeeping: every model was out."""
    root = copy_store(tmp_path / "store", ("length", "bleu4"))
    text = json.loads(_manifest(root, "bleu4").read_text())
    text["uses"] = [["x"]]
    _manifest(root, "bleu4").write_text(json.dumps(text))
    store = ModelStore(root, Runtime())
    assert store.load() is False
    assert "bleu4" in store.failures and set(store.scorers) == {"length"}


def test_a_model_folder_whose_manifest_is_missing_or_dangling_is_a_failed_model(tmp_path):
    """Only an empty folder or lost+found is passed over: a folder with a model's files and no readable
    manifest is a model that failed, so the pod is not ready without it."""
    root = copy_store(tmp_path / "store", ("length", "bleu4", "rouge-l"))
    _manifest(root, "bleu4").unlink()
    _manifest(root, "rouge-l").unlink()
    _manifest(root, "rouge-l").symlink_to(tmp_path / "nowhere.json")
    store = ModelStore(root, Runtime())
    assert store.load() is False
    assert store.public_failures["bleu4"] == "manifest missing"
    assert store.public_failures["rouge-l"] == "manifest missing"


def test_a_component_named_as_a_model_is_reported(baseline_store):
    store = ModelStore(baseline_store, Runtime(), models=("length", "glove-50d"))
    assert store.load() is False
    assert store.public_failures["glove-50d"] == "a component, not a model"


def test_clients_are_told_503_for_a_store_that_failed_and_404_for_a_component(tmp_path):
    from service.app import create_app

    item = {"context": ["a"], "response": "b", "reference": "c"}
    (tmp_path / "empty").mkdir()
    client = create_app({"model_store": tmp_path / "empty", "load_sync": True}).test_client()
    answer = client.post("/score", json={"model": "adem", "items": [item]})
    assert answer.status_code == 503 and answer.get_json()["error"]["code"] == "not_ready"

    root = copy_store(tmp_path / "store", ("length", "emb-average"))
    (root / "glove-50d" / "vectors.npy").unlink()  # the component fails, and with it emb-average
    client = create_app({"model_store": root, "load_sync": True}).test_client()
    assert client.post("/score", json={"model": "emb-average", "items": [item]}).status_code == 503
    assert client.post("/score", json={"model": "glove-50d", "items": [item]}).status_code == 404


def test_a_card_nested_too_deeply_takes_out_its_model_not_models_listing(tmp_path):
    """Deep enough to load, too deep to serialise: GET /models was a 500 for everyone."""
    from service.app import create_app

    root = copy_store(tmp_path / "store", ("length", "bleu4"))
    text = json.loads(_manifest(root, "bleu4").read_text())
    deep: list = []
    for _ in range(900):
        deep = [deep]
    text["card"]["x"] = deep
    _manifest(root, "bleu4").write_text(json.dumps(text))
    client = create_app({"model_store": root, "load_sync": True}).test_client()
    listed = client.get("/models")
    assert listed.status_code == 200 and [m["name"] for m in listed.get_json()["models"]] == ["length"]
    assert listed.get_json()["failed"]["bleu4"] == "manifest invalid: nesting"


def test_a_folder_holding_only_subfolders_is_a_model_and_model_store_is_a_reserved_name(tmp_path):
    root = copy_store(tmp_path / "store", ("length",))
    (root / "adem2" / "onnx").mkdir(parents=True)
    (root / "adem2" / "onnx" / "head.onnx").write_bytes(b"x")
    (root / "model_store").mkdir()
    _manifest(root, "model_store").write_text("{ broken")
    store = ModelStore(root, Runtime())
    assert store.load() is False
    assert store.public_failures["adem2"] == "manifest missing"
    assert "model_store" not in store.failures and store.public_failures["model_store/"] == "folder name reserved"
    assert "length" in store.scorers


def unbuilt_mpnet_store(root):
    """length, and a model on mpnet-base as a clean clone has it: manifest and tokenizer, no graph built."""
    from tests.scorers.unref.test_combination import combination_folder

    root = copy_store(root, ("length",))
    (root / "mpnet-base").mkdir()
    for name in ("manifest.json", "tokenizer.json"):
        shutil.copyfile(MODEL_STORE / "mpnet-base" / name, root / "mpnet-base" / name)
    combination_folder(root, [{"name": "cos", "source": "cos_mean", "encoder": "mpnet-base", "turns": 1,
                               "mean": 0.2, "sd": 0.2, "weight": 0.5}], uses=("mpnet-base",))
    return root


def test_a_model_on_a_component_not_built_here_is_left_out_and_the_store_is_ready(tmp_path):
    from service.app import create_app

    root = unbuilt_mpnet_store(tmp_path / "store")
    store = ModelStore(root, Runtime())
    assert store.load() is True and not store.failures
    assert "stacked" not in store.scorers and "length" in store.scorers
    assert "make encoder-mpnet" in store.not_built["stacked"]
    client = create_app({"model_store": root, "load_sync": True}).test_client()
    assert client.get("/readyz").status_code == 200
    assert "stacked" in client.get("/models").get_json()["not_built"]
    answer = client.post("/score", json={"model": "stacked", "items": [{"context": ["a"], "response": "b"}]})
    assert answer.status_code == 404 and "make encoder-mpnet" in answer.get_json()["error"]["message"]


def test_a_model_not_built_here_that_the_operator_asked_for_is_a_failure(tmp_path):
    root = unbuilt_mpnet_store(tmp_path / "store")
    store = ModelStore(root, Runtime(), ("stacked", "length"))
    assert store.load() is False
    assert "component not built: mpnet-base" in store.public_failures["stacked"]


def test_a_build_entry_must_name_optional_files(tmp_path):
    root = unbuilt_mpnet_store(tmp_path / "store")
    manifest = json.loads((root / "mpnet-base" / "manifest.json").read_text())
    manifest["build"]["files"] = ["tokenizer.json"]  # committed, not built: a build cannot vouch for it
    (root / "mpnet-base" / "manifest.json").write_text(json.dumps(manifest))
    store = ModelStore(root, Runtime())
    assert store.load() is False
    assert "build" in store.public_failures["mpnet-base"] and "stacked" in store.failures


def test_where_cuda_is_required_an_onnx_model_on_the_cpu_fails_and_the_others_serve(tmp_path):
    import onnxruntime as ort
    import pytest

    from service.artifacts.runtime import RuntimeSettings

    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime build has CUDA: the sessions run there")
    root = copy_store(tmp_path / "store", ("length", "minilm-cosine"))
    store = ModelStore(root, Runtime(RuntimeSettings(providers=("CUDAExecutionProvider", "CPUExecutionProvider"),
                                                     require_cuda=True)))
    assert store.load() is False
    assert set(store.scorers) == {"length"}
    assert "CudaUnavailable" in store.failures["minilm-l6"] and "DIALSCORE_REQUIRE_CUDA" in store.failures["minilm-l6"]
    assert "minilm-l6" in store.failures["minilm-cosine"]


def test_a_component_failing_from_a_bug_is_logged_with_its_traceback_its_dependents_without(tmp_path, caplog,
                                                                                              monkeypatch):
    from service.store.registry import component_class

    root = copy_store(tmp_path / "store", ("length", "minilm-cosine"))

    def broken(self, *args, **kwargs):
        raise TypeError("raised in __init__")

    monkeypatch.setattr(component_class("sentence-encoder"), "__init__", broken)
    with caplog.at_level(logging.ERROR):
        assert ModelStore(root, Runtime()).load() is False
    failed = {r.getMessage().split()[1]: r for r in caplog.records if "is not served" in r.getMessage()}
    assert failed["minilm-l6"].exc_info  # the bug's traceback
    assert failed["minilm-cosine"].exc_info is None  # "needs component(s)": a ManifestError


def test_models_lists_what_a_models_training_keys_come_from_including_its_pairs(tmp_path):
    """GET /models' `trained_items`: the key count and the manifest's unit, split, sets and pairs (the unrated
    (turn, reply) streams whose judged items are flagged too), never the file's name."""
    from service.app import create_app
    from service.store import trained_items
    from tests.conftest import with_trained_items

    root = copy_store(tmp_path / "store", ("length",))
    with_trained_items(root, "length", [(["hi"], "hello"), (["how are you?"], "fine.")])
    text = json.loads(_manifest(root, "length").read_text())
    pairs = {"sets": {"a-set": 3}, "sources": ["dailydialog"]}
    text["trained_items"]["pairs"] = pairs
    _manifest(root, "length").write_text(json.dumps(text))
    client = create_app({"model_store": root, "load_sync": True}).test_client()
    [listed] = client.get("/models").get_json()["models"]
    assert listed["trained_items"] == {"keys": 2, "unit": trained_items.UNIT, "split": "train",
                                       "sets": {"a-set": 2}, "pairs": pairs}
