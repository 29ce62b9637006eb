"""training/export_checks.py: export refuses heads that do not belong to the encoder it ships."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.export_checks import IDENTITY_FIELDS, ExportError, HeadRun, check_head_encoder, orphaned_heads


def test_a_head_of_another_width_is_refused_even_with_the_same_identity() -> None:
    encoder = {"train_fingerprint": "f00", "steps": 12, "kl_anneal_steps": 6, "seed": 0, "weights_sha256": "ab" * 32}
    head = HeadRun("adem", Path("run"), {"encoder_fingerprint": "f00",
                                         "encoder_metrics": {k: encoder[k] for k in IDENTITY_FIELDS}}, 64)
    check_head_encoder(head, encoder, 64, "the store")  # same encoder, same width: accepted
    with pytest.raises(ExportError, match="64-d.*32-d"):
        check_head_encoder(head, encoder, 32, "the store")


def test_heads_exported_with_the_new_encoder_are_not_orphans(tmp_path: Path) -> None:
    (tmp_path / "hred-encoder").mkdir()
    (tmp_path / "hred-encoder" / "manifest.json").write_text(json.dumps({"files": {"e.onnx": {"sha256": "old"}}}))
    for head in ("adem", "autojudge"):
        (tmp_path / head).mkdir()
        (tmp_path / head / "manifest.json").write_text(json.dumps({"config": {"encoder_files": {"e.onnx": "old"}}}))
    new = {"e.onnx": "new"}
    assert orphaned_heads(tmp_path, new, set()) == ["adem", "autojudge"]
    assert orphaned_heads(tmp_path, new, {"adem"}) == ["autojudge"]
    assert orphaned_heads(tmp_path, new, {"adem", "autojudge"}) == []
