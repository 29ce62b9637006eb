"""The corpus readers: real files, fixed splits, no overlap between splits."""
from __future__ import annotations

import pytest

from training.data import corpora


@pytest.mark.data
def test_dailydialog_official_splits_are_read_whole() -> None:
    validation = corpora.dailydialog("validation")
    assert len(validation) == 1000
    assert all(len(d) >= 2 and all(t and "__eou__" not in t for t in d) for d in validation)


def test_chitchat_split_is_deterministic_and_disjoint() -> None:
    splits = {s: corpora.chitchat(s) for s in corpora.SPLITS}
    total = sum(len(v) for v in splits.values())
    # 3,150 of the 7,168 conversations have a single sender (no reply): they are no dialogues.
    assert 4000 < total <= 7168
    assert abs(len(splits["validation"]) / total - 0.05) < 0.01
    keys = {s: {tuple(d) for d in v} for s, v in splits.items()}
    assert not keys["train"] & keys["validation"] and not keys["train"] & keys["test"]
    assert corpora.chitchat("validation") == splits["validation"]


def test_split_assignment_ignores_input_order() -> None:
    ids = [f"c{i}" for i in range(100)]
    assert corpora.chitchat_split_of(ids) == corpora.chitchat_split_of(list(reversed(ids)))


@pytest.mark.data
def test_load_dialogues_combines_sources_and_rejects_bad_names(tmp_path) -> None:
    both = corpora.load_dialogues("validation")
    assert len(both) == 1000 + len(corpora.chitchat("validation"))
    with pytest.raises(ValueError):
        corpora.load_dialogues("dev")
    with pytest.raises(ValueError):
        corpora.load_dialogues("train", sources=("reddit",))
