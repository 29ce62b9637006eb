"""The benchmark's report of where it ran: providers per model, and the GPU when one is used."""
from benchmarks.bench import _gpu_names, _providers_line


def test_providers_are_grouped_so_a_cpu_fallback_shows():
    served = {"adem": {"providers": ["CUDAExecutionProvider", "CPUExecutionProvider"]},
              "ruber": {"providers": ["CPUExecutionProvider"]},
              "length": {"providers": ["CPUExecutionProvider"]}}
    assert _providers_line(served) == ("CPUExecutionProvider: 2 models; "
                                       "CUDAExecutionProvider,CPUExecutionProvider: 1 models")


def test_no_gpu_line_when_nothing_runs_on_cuda():
    assert _gpu_names({"length": {"providers": ["CPUExecutionProvider"]}}) == ""


def test_every_text_of_a_default_batch_is_distinct_and_the_reranking_one_shares_its_context():
    from benchmarks.bench import items_for

    items = items_for("referenced", 32)
    texts = [t for i in items for t in (*i["context"], i["response"], i["reference"])]
    assert len(set(texts)) == len(texts)  # the encode cache saves nothing: the figure to size by
    shared = items_for("referenced", 32, shared_context=True)
    assert len({tuple(i["context"]) for i in shared}) == 1 and len({i["response"] for i in shared}) == 32
    turns = [t["text"] for i in items_for("dialogue", 4) for t in i["turns"]]
    assert len(set(turns)) == len(turns)


def test_memory_is_read_from_the_workers_of_a_process(tmp_path):
    import os
    import subprocess
    import sys

    from benchmarks.bench import MemorySampler, _pss_kib, _workers_of

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in _workers_of(os.getpid())
        assert _pss_kib(child.pid) > 0
        worker, total = MemorySampler(os.getpid()).sample()
        assert 0 < worker <= total
    finally:
        child.kill()
        child.wait()


def test_heavy_bodies_fit_the_published_limits():
    """97 items of max_chars (10,000) characters made a 3.9 MB body, refused with 413: the texts are
    cut so the body fits max_body_bytes, and each still passes the encoder's 256 word pieces."""
    import json

    from benchmarks.bench import HEAVY_PIECES, heavy_chars, heavy_items
    from service.config import load_settings

    limits = load_settings(environ={}).limits()
    n = limits["max_encoder_tokens"] // (4 * HEAVY_PIECES)
    chars = heavy_chars(n, limits)
    body = json.dumps({"models": ["adem", "ruber"], "items": heavy_items(n, chars)}).encode()
    assert chars <= limits["max_chars"] and len(body) <= limits["max_body_bytes"]
    assert len(heavy_items(1, chars)[0]["response"].split()) > HEAVY_PIECES  # every word at least one piece
    assert heavy_chars(1, limits) == limits["max_chars"]


def test_heavy_requests_are_sized_by_the_longest_truncation_of_the_encoders_served():
    """Sized by MiniLM's 256 word pieces where mpnet-base (384) is served, the heavy request passed
    max_encoder_tokens: 97 items x 4 texts x 384 pieces, refused 413."""
    from benchmarks.bench import HEAVY_PIECES, heavy_pieces
    from tests.conftest import MODEL_STORE

    def served(*encoders: str) -> dict:
        return {"m": {"components": [{"name": name, "precision": "int8"} for name in encoders] + [{"name": "glove-50d"}]}}

    assert heavy_pieces(served("minilm-l6"), MODEL_STORE) == HEAVY_PIECES == 256
    assert heavy_pieces(served("minilm-l6", "mpnet-base"), MODEL_STORE) == 384
    assert heavy_pieces(served(), MODEL_STORE) == HEAVY_PIECES


def test_every_reference_free_model_served_gets_a_reranking_scenario():
    import argparse

    from benchmarks.bench import _scenarios

    served = {"adem": {"kind": "referenced"}, "autojudge": {"kind": "unreferenced"},
              "unref-new": {"kind": "unreferenced"}, "mh": {"kind": "dialogue"}}
    args = argparse.Namespace(models="adem", batch=32)
    reranks = [(label, body) for label, path, body, _ in _scenarios(args, served) if path == "/rerank"]
    assert [body["model"] for _, body in reranks] == ["autojudge", "unref-new"]
    for _, body in reranks:
        assert len(body["context"]) == 3 and len(set(body["candidates"])) == 32


def test_write_docs_replaces_its_machines_section_and_keeps_every_hand_written_line(tmp_path):
    from benchmarks.bench_docs import section, write

    row = {"items_per_s": 10.0, "requests_per_s": 1.0, "p50_ms": 5.0, "p99_ms": 9.0, "failed": 0, "spread": 0.1}
    path = tmp_path / "benchmarks.md"
    path.write_text("# Benchmarks\n\nintro by hand\n\n## Admission control\n\nwritten by hand\n")
    write(path, "CPU A, 2 cores", section("CPU A, 2 cores", ["machine: a"], {"default": {"x32": row}}, ["memory"]))
    write(path, "CPU B, 4 cores", section("CPU B, 4 cores", ["machine: b"], {"default": {"x32": row}}, []))
    faster = {**row, "items_per_s": 20.0}
    two = {"default": {"x32": faster}, "CPUExecutionProvider": {"x32": row}}
    write(path, "CPU A, 2 cores", section("CPU A, 2 cores", ["machine: a again"], two, ["memory"]))
    text = path.read_text()
    assert text.startswith("# Benchmarks\n\nintro by hand\n\n## Admission control\n\nwritten by hand\n")
    assert text.count("### CPU A, 2 cores") == 1 and "machine: a again" in text and "- machine: a\n" not in text
    assert text.index("### CPU A") < text.index("### CPU B")  # a machine keeps its place
    assert "| x32 | 20.0 | 1.0 | 5.0 | 9.0 | 0 | 10% | 10.0 |" in text
    assert "items/s (default)" in text and "items/s (CPUExecutionProvider)" in text


def test_the_batch_bound_items_are_distinct_and_of_mixed_lengths():
    """A batch of texts of one length pads none of them: the bound measured on it missed the moves of
    encoders whose vectors depend on padding (mpnet-base's)."""
    from benchmarks.bench import mixed_items

    items = mixed_items("referenced", 32)
    texts = [t for i in items for t in (*i["context"], i["response"], i["reference"])]
    assert len(set(texts)) == len(texts)
    lengths = {len(i["response"].split()) for i in items}
    assert min(lengths) <= 3 and max(lengths) >= 35 and len(lengths) >= 20, sorted(lengths)
    shared = mixed_items("referenced", 32, shared_context=True)
    assert len({tuple(i["context"]) for i in shared}) == 1 and len({i["response"] for i in shared}) == 32
    long = {len(i["response"].split()) for i in mixed_items("referenced", 32, draw=1)}
    assert min(long) <= 15 and max(long) >= 250, sorted(long)  # past the encoders' truncation
    dialogues = mixed_items("dialogue", 8)
    assert all(len(d["turns"]) >= 2 for d in dialogues)
