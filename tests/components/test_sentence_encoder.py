"""The MiniLM component against sentence-transformers (the reference implementation)."""
from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from service.components.cache import EncodeCache
from service.components.sentence_encoder import SentenceEncoder, choose_precision, pool
from service.config import PRECISION_ENV
from service.artifacts.manifest import read_manifest
from service.artifacts.hardware import int8_dot_products
from service.artifacts.runtime import Runtime, RuntimeSettings

STORE = Path(__file__).resolve().parents[2] / "model_store" / "minilm-l6"
TEXTS = [
    "hey, what do you want to do tonight?",
    "why don't we go see a movie?",
    "nah, let's do something active.",
    "yeah, the film about turing looks great!",
    "i don't know.",
    "ok",
    "",
    "Café au lait, s'il vous plaît !",
    "The new Stanford CoreNLP release parses 1,000 sentences per second on 8 cores.",
    "Could you tell me how to get to the train station from here?",
    "My grandmother's cooking is the best thing about the holidays.",
    "I'm afraid the flight to Boston has been cancelled because of the storm.",
    "lol same",
    "What kind of music do you like? I'm into jazz and a bit of classical.",
    "we need to talk about the rent — it's due on friday and i'm short 200 dollars.",
    # Longer than 256 word pieces: both sides truncate at the model's max_seq_length.
    "so anyway " * 200,
]




def _dialogue_turns(n: int = 200) -> list[str]:
    """Real dialogue turns (DailyDialog validation), the text the encoder serves (a `data` test's)."""
    from training.data.corpora import dailydialog

    return [turn for dialogue in dailydialog("validation") for turn in dialogue][:n]


def _longer_texts(n: int = 40) -> list[str]:
    """n distinct texts of 3 to 62 words made from TEXTS' words: wider batches than TEXTS alone."""
    words = " ".join(TEXTS[:-1]).split()
    return [" ".join(words[(i * 7 + j) % len(words)] for j in range(3 + (i * 23) % 60)) + f" {i}" for i in range(n)]


def _runtime(precision: str | None = None, encoder_threads: int = 0) -> Runtime:
    # DIALSCORE_ENCODER_PRECISION reaches the component through the runtime's settings, as load_settings reads it
    return Runtime(RuntimeSettings(providers=("CPUExecutionProvider",), intra_op_threads=1,
                                   encoder_threads=encoder_threads,
                                   encoder_precision=precision or os.environ.get(PRECISION_ENV, "auto")))


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    from sentence_transformers import SentenceTransformer

    from training.encoders.minilm.export import model_path

    model = SentenceTransformer(str(model_path()), device="cpu")
    return model.encode(TEXTS + _dialogue_turns(), convert_to_numpy=True, normalize_embeddings=False)


@pytest.fixture(scope="module")
def built_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Builds the fp32 graph (90 MB) and the w8a8 one (24 MB, calibrated on Chit-Chat turns), neither
    committed, with the training export command (~1 min); the tests that read it compare on DailyDialog."""
    from training.encoders.minilm.export import main

    folder = tmp_path_factory.mktemp("store") / "minilm-l6"
    assert main(["--out", str(folder), "--fp32", "--w8a8"]) == 0
    return folder


# The CPU files: int8 is committed (served as int8-float, its weights in float: the CPU's default, or
# as int8 on ONNX Runtime's int8 kernel), w8a8 built (make encoder-w8a8); fp32 by make encoder-fp32.
@pytest.fixture(scope="module", params=["int8-float", "int8", pytest.param("w8a8", marks=pytest.mark.data)])
def committed(request: pytest.FixtureRequest) -> SentenceEncoder:
    folder = STORE if request.param.startswith("int8") else request.getfixturevalue("built_store")
    encoder = SentenceEncoder(read_manifest(folder), _runtime(request.param))
    assert encoder.precision == request.param
    return encoder


@pytest.fixture(scope="module")
def default() -> SentenceEncoder:
    """The encoder as a worker on this machine serves it (auto precision)."""
    return SentenceEncoder(read_manifest(STORE), _runtime("auto"))


def test_building_fp32_and_w8a8_reproduces_the_committed_manifest(built_store: Path) -> None:
    # The committed manifest vouches for the fp32 and w8a8 files by hash, and `make encoder-fp32` must
    # leave it (a tracked file) as it is: both hold only if the export is byte for byte reproducible.
    assert (built_store / "manifest.json").read_text() == (STORE / "manifest.json").read_text()


@pytest.mark.data
def test_committed_files_match_sentence_transformers(committed: SentenceEncoder, reference: np.ndarray) -> None:
    texts = TEXTS + _dialogue_turns()
    vectors = committed.encode(texts)
    cosines = (vectors * reference).sum(axis=1)
    assert vectors.shape == (len(texts), 384)
    # Every text, edge cases included (empty, one word, > 256 pieces): lowest seen 0.990 (int8), 0.993 (w8a8),
    # 0.995 (int8-float).
    assert cosines.min() >= 0.99


@pytest.mark.data
def test_fp32_matches_sentence_transformers(built_store: Path, reference: np.ndarray,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PRECISION_ENV, "fp32")
    encoder = SentenceEncoder(read_manifest(built_store), _runtime())
    assert encoder.precision == "fp32"
    assert np.abs(encoder.encode(TEXTS + _dialogue_turns()) - reference).max() <= 1e-4


def test_a_graph_without_token_embeddings_is_refused_at_load(tmp_path: Path) -> None:
    """The service pools the tokens itself (its vectors would otherwise depend on the batch): a graph that
    gives only `embedding` is not served."""
    import onnx

    from service.artifacts.manifest import ManifestError

    shutil.copytree(STORE, tmp_path / "minilm-l6", ignore=shutil.ignore_patterns("encoder-fp32.onnx", "encoder-w8a8.onnx"))
    graph = onnx.load(str(STORE / "encoder-int8.onnx"))
    kept = [output for output in graph.graph.output if output.name != "token_embeddings"]
    del graph.graph.output[:]
    graph.graph.output.extend(kept)
    onnx.save(graph, str(tmp_path / "minilm-l6" / "encoder-int8.onnx"))
    with pytest.raises(ManifestError, match="no token_embeddings output"):
        SentenceEncoder(read_manifest(tmp_path / "minilm-l6"), _runtime("int8"))

def test_fp32_falls_back_to_the_cpu_precision_when_not_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                caplog: pytest.LogCaptureFixture) -> None:
    # A clone: the manifest lists the fp32 graph as optional, the file is not there.
    shutil.copytree(STORE, tmp_path / "minilm-l6", ignore=shutil.ignore_patterns("encoder-fp32.onnx", "encoder-w8a8.onnx"))
    monkeypatch.setenv(PRECISION_ENV, "fp32")
    manifest = read_manifest(tmp_path / "minilm-l6")
    assert "encoder-fp32.onnx" in manifest.optional and "encoder-fp32.onnx" not in manifest.files
    encoder = SentenceEncoder(manifest, _runtime())
    assert (encoder.precision, encoder.filename) == ("int8-float", "encoder-int8.onnx")
    assert "make encoder-fp32" in caplog.text


def test_auto_precision_is_fp32_on_cuda_w8a8_on_a_cpu_with_int8_dot_products_and_int8_otherwise() -> None:
    every = {"w8a8": True, "int8": True, "fp32": True}
    clone = {"w8a8": False, "int8": True, "fp32": False}
    assert choose_precision("auto", cuda=True, built=every, int8_dot="avx2") == ("fp32", "auto: CUDA")
    assert choose_precision("", cuda=True, built=clone, int8_dot="avx2") == (
        "int8", "auto: CUDA, but fp32 is not built (make encoder-fp32)")
    assert choose_precision("auto", cuda=False, built=every, int8_dot="avx512_vnni") == (
        "w8a8", "auto: the CPU reports avx512_vnni")
    assert choose_precision("auto", cuda=False, built=every, int8_dot=None) == (
        "int8", "auto: the CPU reports no integer dot products")
    assert choose_precision("auto", cuda=False, built=clone, int8_dot="avx2") == (
        "int8", "auto: the CPU reports avx2, but w8a8 is not built (make encoder-w8a8)")
    assert choose_precision("INT8", cuda=True, built=every, int8_dot="avx2") == ("int8", "DIALSCORE_ENCODER_PRECISION=int8")
    assert choose_precision("fp32", cuda=False, built=every, int8_dot="avx2")[0] == "fp32"
    assert choose_precision("fp32", cuda=False, built=clone, int8_dot="avx2")[0] == "int8"
    assert choose_precision("w8a8", cuda=True, built=every, int8_dot=None)[0] == "w8a8"


def test_a_component_without_w8a8_serves_its_cpu_precision_and_falls_back_to_what_is_built() -> None:
    """mpnet-base: fp32 on the CPU (its config's cpu_precision), its int8 graph optional."""
    mpnet = {"fp32": True, "int8": False}
    assert choose_precision("auto", cuda=False, built=mpnet, int8_dot="avx2", cpu="fp32") == ("fp32", "auto: fp32 on the CPU")
    assert choose_precision("int8", cuda=False, built=mpnet, int8_dot="avx2", cpu="fp32",
                            command="make encoder-mpnet") == (
        "fp32", "DIALSCORE_ENCODER_PRECISION=int8, but int8 is not built (make encoder-mpnet)")
    assert choose_precision("w8a8", cuda=False, built=mpnet, int8_dot="avx2", cpu="fp32")[0] == "fp32"


@pytest.mark.data
def test_the_cpu_serves_w8a8_where_built_even_where_fp32_is_built(built_store: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PRECISION_ENV, raising=False)
    encoder = SentenceEncoder(read_manifest(built_store), _runtime())
    cpu = int8_dot_products()
    assert (encoder.precision, encoder.chosen_by) == (("w8a8", f"auto: the CPU reports {cpu}") if cpu else
                                                      ("int8", "auto: the CPU reports no integer dot products"))
    assert encoder.served_files() == {"precision": encoder.precision, "file": f"encoder-{encoder.precision}.onnx",
                                      "chosen_by": encoder.chosen_by, "provider": "CPUExecutionProvider",
                                      "provider_chosen_by": "DIALSCORE_PROVIDERS=CPUExecutionProvider",
                                      "bit_exact_across_batches": True}


def test_a_clone_serves_the_committed_int8_file_in_float_whatever_the_cpu_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    import service.components.sentence_encoder as module

    shutil.copytree(STORE, tmp_path / "minilm-l6", ignore=shutil.ignore_patterns("encoder-fp32.onnx", "encoder-w8a8.onnx"))
    monkeypatch.delenv(PRECISION_ENV, raising=False)
    for reported in ("avx2", None):
        monkeypatch.setattr(module, "int8_dot_products", lambda: reported)
        encoder = SentenceEncoder(read_manifest(tmp_path / "minilm-l6"), _runtime())
        assert (encoder.precision, encoder.filename) == ("int8-float", "encoder-int8.onnx")
        assert encoder.chosen_by == ("auto: the CPU reports avx2, but w8a8 is not built (make encoder-w8a8)" if reported
                                     else "auto: the CPU reports no integer dot products")
    assert "WARNING" not in caplog.text  # the clone's own file is no fault


def test_int8_float_runs_the_int8_files_weights_in_float(committed: SentenceEncoder) -> None:
    """The same file as int8, another kernel: vectors within .995 of int8's (mean .9996 on 2,000 dialogue
    turns), yet not its bits, so the session option took effect."""
    if committed.precision != "int8-float":
        pytest.skip("compares int8-float with int8")
    kernel = SentenceEncoder(committed.manifest, _runtime("int8"))
    assert committed.filename == kernel.filename == "encoder-int8.onnx"
    texts = TEXTS + _longer_texts()
    folded, int8 = committed.encode(texts), kernel.encode(texts)
    assert not np.array_equal(folded, int8)
    assert (folded * int8).sum(axis=1).min() >= 0.995


def test_unknown_precision_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PRECISION_ENV, "fp8")
    with pytest.raises(ValueError, match="fp8"):
        SentenceEncoder(read_manifest(STORE), _runtime())


def test_vectors_do_not_depend_on_the_batch(committed: SentenceEncoder) -> None:
    """To the bit: alone, among the others, in reverse order, among longer texts (which once
    widened the padding and moved the sums by 3e-8), and in one batch per text."""
    together = committed.encode(TEXTS)
    alone = np.stack([committed.encode([text])[0] for text in TEXTS])
    np.testing.assert_array_equal(together, alone)
    np.testing.assert_array_equal(committed.encode(TEXTS[::-1])[::-1], together)
    longer = _longer_texts()
    np.testing.assert_array_equal(committed.encode(longer + TEXTS)[len(longer):], together)
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-4)
    one_thread = SentenceEncoder(committed.manifest, _runtime(committed.precision, encoder_threads=1))
    np.testing.assert_array_equal(one_thread.encode(longer + TEXTS)[len(longer):], together)


def test_a_lone_request_runs_on_every_encoder_thread(committed: SentenceEncoder) -> None:
    """DIALSCORE_ENCODER_THREADS: a request of three texts (one length bucket) is split into one run
    per thread, run at once, and gives the bits one run gives."""
    encoder = SentenceEncoder(committed.manifest, _runtime(committed.precision, encoder_threads=2))
    threads: list[str] = []
    run = encoder.session.run

    def spy(feeds, outputs=None):
        threads.append(threading.current_thread().name)
        return run(feeds, outputs)

    encoder.session.run = spy
    texts = TEXTS[:3]
    np.testing.assert_array_equal(encoder.encode(texts), committed.encode(texts))
    assert len(threads) == 2 and all(name.startswith("encoder") for name in threads)


def test_pooling_here_matches_the_graphs_own_embedding(committed: SentenceEncoder) -> None:
    """The service pools the graph's token_embeddings itself (ONNX Runtime's ReduceSum rounds by the
    batch's shape); the result is the graph's `embedding` up to float32 rounding."""
    encodings = committed.tokenizer.encode_batch(TEXTS)
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(TEXTS), width), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, e in enumerate(encodings):
        ids[row, : len(e.ids)], mask[row, : len(e.ids)] = e.ids, 1
    graph, tokens = committed.session.run({"input_ids": ids, "attention_mask": mask}, ["embedding", "token_embeddings"])
    ours = np.stack([pool(tokens[row], len(e.ids)) for row, e in enumerate(encodings)])
    np.testing.assert_allclose(ours, graph, atol=1e-6)
    np.testing.assert_array_equal(ours, committed.encode(TEXTS))


def test_each_distinct_text_is_encoded_once_per_cache(default: SentenceEncoder) -> None:
    cache = EncodeCache()
    calls: list[int] = []
    original = default._encode

    def counting(texts: list[str], *rest: object) -> np.ndarray:
        calls.append(len(texts))
        return original(texts, *rest)

    default._encode = counting  # spy on the real encoder; the encoder itself still runs
    try:
        first = default.encode(["a b", "c d", "a b"], cache)
        second = default.encode(["c d", "e f"], cache)
    finally:
        del default._encode
    assert calls == [2, 1]
    np.testing.assert_array_equal(first[0], first[2])
    np.testing.assert_array_equal(first[1], second[0])


def test_batch_size_setting_bounds_every_onnx_run(default: SentenceEncoder) -> None:
    """DIALSCORE_BATCH_SIZE reaches the served encoder (it was read and never used): memory grows with it."""
    from service.app import create_app

    app = create_app({"batch_size": 3, "models": ["minilm-cosine"], "load_sync": True,
                      "providers": ["CPUExecutionProvider"], "intra_op_threads": 1})
    served = app.extensions["dialscore.store"].components["minilm-l6"]
    texts = TEXTS + _longer_texts()
    rows: list[int] = []
    run = served.session.run
    served.session.run = lambda feeds, outputs=None: (rows.append(len(feeds["input_ids"])), run(feeds, outputs))[1]
    vectors = served.encode(texts)
    assert max(rows) == 3 and sum(rows) == len(set(texts))
    np.testing.assert_array_equal(vectors, default.encode(texts))  # the batch does not change an embedding


def test_text_past_the_manifests_max_length_is_not_read(tmp_path: Path) -> None:
    """The encoder truncates at the manifest's max_length (256 word pieces, [CLS] and [SEP] included) itself,
    not only where tokenizer.json happens to carry a truncation: with one exported without it, `work`
    still counts at most 256 and words after them change no vector (the same ids go in)."""
    import json

    folder = tmp_path / "minilm-l6"
    shutil.copytree(STORE, folder, ignore=shutil.ignore_patterns("encoder-fp32.onnx"))
    tokenizer = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    tokenizer["truncation"] = None
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer), encoding="utf-8")
    encoder = SentenceEncoder(read_manifest(folder), _runtime())
    assert encoder.max_length == 256
    long = "so anyway " * 200  # 400 word pieces before truncation
    assert encoder.work(["ok"]) == 3  # [CLS] ok [SEP]
    assert encoder.work([long]) == 256
    np.testing.assert_array_equal(encoder.encode([long + "but then the storm came and the whole town flooded"]),
                                  encoder.encode([long]))


def test_a_request_tokenises_each_text_once_for_the_limit_and_the_encoder(default: SentenceEncoder) -> None:
    """The encoder-work limit counts word pieces through the request's cache; encoding then reads them."""
    class Counting:
        def __init__(self, inner: object) -> None:
            self.inner, self.texts = inner, []

        def encode_batch(self, texts: list[str]) -> list:
            self.texts += list(texts)
            return self.inner.encode_batch(texts)

    cache, original = EncodeCache(), default.tokenizer
    default.tokenizer = counting = Counting(original)
    try:
        pieces = default.work(["a b", "c d", "a b"], cache)
        vectors = default.encode(["a b", "c d", "e f"], cache)
    finally:
        default.tokenizer = original
    assert counting.texts == ["a b", "c d", "e f"]
    assert pieces == default.work(["a b", "c d", "a b"])
    np.testing.assert_array_equal(vectors, default.encode(["a b", "c d", "e f"]))
