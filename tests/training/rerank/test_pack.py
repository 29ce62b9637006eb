"""The packed folder holds what the device reads: word pieces, rows with their folds, groups, teacher columns."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.training.rerank.conftest import HELD, TEACHER_ROWS
from training.rerank.pack import TRAVEL_LIMIT, travel_bytes
from training.rerank.pieces import CLS, SEP
from training.rerank.train import Pack

pytestmark = pytest.mark.data


def test_the_pack_holds_rows_groups_and_teacher_columns(tiny_pack: Path) -> None:
    pack = Pack.load(tiny_pack)
    a, info = pack.arrays, pack.info
    assert info["judged_train"] > 0 and info["judged_dev"] > 0 and info["next_turn_groups"] > 0
    assert HELD in info["folds"] and "dstc7" in info["folds"]
    assert "xdial_dailydialog_gupta" not in info["counted_once"]  # an alias is counted once
    assert not {CLS, SEP} & set(pack.texts.ids.tolist())  # special tokens are added per pair, not packed
    assert len(pack.texts) == info["texts"] and a["j_reply"].max() < len(pack.texts)
    assert ((a["g_replies"] >= 0).sum(axis=1) >= 2).all()  # a human reply and at least one negative
    assert info["teacher_columns"] == sorted(["all", HELD])
    known = np.isfinite(a["j_teacher"]).all(axis=1)
    assert known[:TEACHER_ROWS].all() and known.sum() >= TEACHER_ROWS
    expected = {"all": 2.0, HELD: -2.0}
    assert a["j_teacher"][0].tolist() == [expected[c] for c in info["teacher_columns"]]
    dev_sets = {info["sets"][s] for s in a["j_set"][~a["j_train"]]}
    assert {"topicalchat_turn", "convai2_turn"} <= dev_sets  # measured on, never trained on


def test_a_changed_pack_is_refused(tiny_pack: Path, tmp_path: Path) -> None:
    copy = tmp_path / "pack"
    copy.mkdir()
    info = json.loads((tiny_pack / "pack.json").read_text())
    (copy / "pack.json").write_text(json.dumps({**info, "sha256": "0" * 64}))
    (copy / "pack.npz").write_bytes((tiny_pack / "pack.npz").read_bytes())
    with pytest.raises(ValueError, match="sha256"):
        Pack.load(copy)


def test_the_travel_check_counts_the_tracked_tree_and_the_carried_folder(tiny_pack: Path) -> None:
    repo = Path(__file__).resolve().parents[3]
    sizes = travel_bytes(repo, [tiny_pack])
    assert sizes["carried"] == sum(p.stat().st_size for p in tiny_pack.iterdir())
    assert sizes["tracked"] > 2**20 and sizes["total"] == sizes["tracked"] + sizes["untracked"] + sizes["carried"]
    assert sizes["limit"] == TRAVEL_LIMIT
