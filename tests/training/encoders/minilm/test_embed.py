"""The MiniLM embedding cache of training text: reused only by the encoder that made it, and never
misaligned or unreadable after a kill, a second writer or a folder that cannot be written."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from training.encoders.minilm.embed import EmbeddingCache, load_encoder


@pytest.fixture(scope="module")
def encoder():
    return load_encoder()


def _rewrite(folder, **changes) -> None:
    """The saved cache with some of its arrays replaced, as another encoder or an old run left it."""
    path = folder / EmbeddingCache.FILE
    with np.load(path, allow_pickle=False) as saved:
        arrays = {k: saved[k] for k in saved.files}
    arrays.update(changes)
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)


def test_cache_is_reused_by_the_encoder_that_made_it(tmp_path, encoder) -> None:
    vectors = EmbeddingCache(tmp_path, encoder).get(["hello there", "how are you?"])
    again = EmbeddingCache(tmp_path, encoder)
    assert set(again.index) == {"hello there", "how are you?"}
    np.testing.assert_array_equal(again.get(["hello there", "how are you?"]), vectors)
    assert os.listdir(tmp_path) == [EmbeddingCache.FILE]  # no partial file left behind


def test_cache_of_another_encoder_is_encoded_again(tmp_path, encoder, capsys) -> None:
    """A re-exported encoder gives other vectors (by up to 1e-7), so a cache it did not make is not used."""
    EmbeddingCache(tmp_path, encoder).get(["hello there"])
    other = {"name": "minilm-l6", "version": "2026.11.0", "file": "encoder-int8.onnx", "sha256": "0" * 64}
    _rewrite(tmp_path, encoder=np.array(json.dumps(other)))
    assert EmbeddingCache(tmp_path, encoder).index == {}
    assert "encoding again" in capsys.readouterr().err


@pytest.mark.parametrize("damage", ["empty", "cut", "misaligned"])
def test_a_damaged_cache_is_rebuilt_not_trusted(tmp_path, encoder, damage, capsys) -> None:
    EmbeddingCache(tmp_path, encoder).get(["hello there", "how are you?"])
    path = tmp_path / EmbeddingCache.FILE
    if damage == "empty":
        path.write_bytes(b"")
    elif damage == "cut":
        path.write_bytes(path.read_bytes()[:200])
    else:
        _rewrite(tmp_path, texts=np.array(json.dumps(["hello there"])))
    assert EmbeddingCache(tmp_path, encoder).index == {}
    assert "encoding again" in capsys.readouterr().err


def test_two_writers_never_pair_a_text_with_another_texts_vector(tmp_path, encoder) -> None:
    first, second = EmbeddingCache(tmp_path, encoder), EmbeddingCache(tmp_path, encoder)
    first.get(["one text", "two texts"])
    second.get(["three texts"])  # saved last: its own rows only
    merged = EmbeddingCache(tmp_path, encoder)
    for text in merged.index:
        np.testing.assert_array_equal(merged.get([text]), encoder.encode([text]))


def test_a_folder_that_cannot_be_written_keeps_vectors_in_memory(tmp_path, encoder, capsys) -> None:
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("x")
    cache = EmbeddingCache(blocked / "cache", encoder)  # its parent is a file: mkdir fails, as read-only would
    vectors = cache.get(["hello there"])
    assert vectors.shape == (1, 384) and not cache.writable
    assert "kept in memory" in capsys.readouterr().err


def test_where_a_vector_was_computed_is_part_of_its_identity() -> None:
    from service.artifacts.hardware import int8_dot_products
    from training.encoders.minilm.embed import computed_on, encoder_identity

    assert encoder_identity()["provider"] == "CPUExecutionProvider"  # load_encoder's, as the caches are made
    assert computed_on("OpenVINOExecutionProvider", "bf16", "int8-float") == {
        "provider": "OpenVINOExecutionProvider", "compute": "bf16"}
    assert computed_on("CPUExecutionProvider", None, "int8-float") == {"provider": "CPUExecutionProvider"}
    assert computed_on("CPUExecutionProvider", None, "int8") == {"provider": "CPUExecutionProvider",
                                                                 "int8_dot": str(int8_dot_products())}
