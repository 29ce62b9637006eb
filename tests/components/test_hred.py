"""service/components/hred.py: the VHRED encoder component ADEM and AutoJudge share."""
from __future__ import annotations

import numpy as np

from service.store.registry import component_class
from service.artifacts.manifest import read_manifest
from service.artifacts.runtime import Runtime, RuntimeSettings
from tests.conftest import MODEL_STORE

ENCODER = MODEL_STORE / "hred-encoder"


def test_a_long_context_is_encoded_from_its_most_recent_turns():
    """hred.py: a context's vector is the context encoder over its *last* max_context_turns
    utterances (ADEM section 4; the turns right before the reply matter most): a context longer
    than that is its tail, not its head."""
    manifest = read_manifest(ENCODER)
    runtime = Runtime(RuntimeSettings(providers=("CPUExecutionProvider",), intra_op_threads=1))
    encoder = component_class(manifest.scorer)(manifest, runtime)
    keep = encoder.max_context_turns
    context = [f"turn number {word} of the chat." for word in
               ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven")]
    assert len(context) > keep
    whole, tail, head = encoder.encode_contexts([context, context[-keep:], context[:keep]])
    np.testing.assert_array_equal(whole, tail)
    assert not np.allclose(whole, head, atol=1e-4)
