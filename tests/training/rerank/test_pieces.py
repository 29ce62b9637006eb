"""The pair layout the cross-encoder trains and is served on: BERT's pair form, cut at the context's start."""
from __future__ import annotations

import numpy as np

from training.rerank.pieces import CLS, PAD, SEP, Texts, batch, pair_ids


def texts(*pieces: list[int]) -> Texts:
    offsets = np.cumsum([0] + [len(p) for p in pieces])
    return Texts(np.array([i for p in pieces for i in p], np.uint16), offsets)


def test_a_pair_is_cls_context_sep_reply_sep_with_the_reply_as_segment_one() -> None:
    t = texts([5, 6], [7], [8, 9, 10])
    ids, types = pair_ids(t, np.array([0, 1, -1]), 2, max_length=64, max_reply=48)
    assert ids.tolist() == [CLS, 5, 6, SEP, 7, SEP, 8, 9, 10, SEP]
    assert types.tolist() == [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]


def test_a_long_pair_keeps_the_newest_context_and_the_start_of_the_reply() -> None:
    t = texts(list(range(1000, 1030)), list(range(2000, 2030)))
    ids, types = pair_ids(t, np.array([0]), 1, max_length=20, max_reply=8)
    assert len(ids) == 20
    assert ids[1:10].tolist() == list(range(1021, 1030))  # the context's last 9 pieces
    assert ids[11:19].tolist() == list(range(2000, 2008))  # the reply's first 8
    assert types.sum() == 9  # the reply and its [SEP]


def test_no_context_and_padding_in_a_batch() -> None:
    t = texts([5, 6, 7], [8])
    out = batch(t, np.array([[-1, -1], [0, -1]]), np.array([1, 1]), max_length=16, max_reply=8)
    assert out["input_ids"].tolist() == [[CLS, SEP, 8, SEP, PAD, PAD, PAD], [CLS, 5, 6, 7, SEP, 8, SEP]]
    assert out["attention_mask"].sum(axis=1).tolist() == [4, 7]
    assert out["token_type_ids"].tolist()[0] == [0, 0, 1, 1, 0, 0, 0]
