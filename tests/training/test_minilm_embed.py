"""The MiniLM embedding cache of training text: reused only by the encoder that made it."""
from __future__ import annotations

import json

import numpy as np
import pytest

from training.minilm.embed import EmbeddingCache, load_encoder


@pytest.fixture(scope="module")
def encoder():
    return load_encoder()


def test_cache_is_reused_by_the_encoder_that_made_it(tmp_path, encoder) -> None:
    first = EmbeddingCache(tmp_path, encoder)
    vectors = first.get(["hello there", "how are you?"])
    again = EmbeddingCache(tmp_path, encoder)
    assert set(again.index) == {"hello there", "how are you?"}
    np.testing.assert_array_equal(again.get(["hello there", "how are you?"]), vectors)
    assert json.loads((tmp_path / "encoder.json").read_text()) == again.identity


@pytest.mark.parametrize("made_by", [{"name": "minilm-l6", "version": "2026.11.0", "file": "encoder-int8.onnx",
                                      "sha256": "0" * 64}, None])
def test_cache_of_another_encoder_is_encoded_again(tmp_path, encoder, made_by, capsys) -> None:
    """A re-exported encoder gives other vectors; a cache from before encoder.json existed is of unknown origin."""
    EmbeddingCache(tmp_path, encoder).get(["hello there"])
    if made_by is None:
        (tmp_path / "encoder.json").unlink()
    else:
        (tmp_path / "encoder.json").write_text(json.dumps(made_by))
    stale = EmbeddingCache(tmp_path, encoder)
    assert stale.index == {}
    assert "encoding again" in capsys.readouterr().err
