"""Batches by length and their shares among threads (service/artifacts/batching.py)."""
from service.artifacts.batching import length_buckets, shares


def test_length_buckets_cover_every_index_once_and_group_similar_lengths():
    lengths = [5, 1, 30, 2, 29, 6, 1, 31]
    batches = length_buckets(lengths, max_batch=3)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(lengths)))
    assert all(len(b) <= 3 for b in batches)
    assert [lengths[i] for i in flat] == sorted(lengths)
    assert length_buckets([], 4) == []
    assert length_buckets([100] * 10, max_batch=64, max_tokens=250) == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]]


def test_length_buckets_with_a_step_never_mix_lengths_across_a_multiple_of_it():
    lengths = [3, 8, 9, 16, 17, 1, 24, 12, 8, 10, 11, 18, 19]
    batches = length_buckets(lengths, max_batch=64, step=8)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert [sorted(lengths[i] for i in b) for b in batches] == [[1, 3, 8, 8], [9, 10, 11, 12, 16], [17, 18, 19, 24]]
    assert len(length_buckets([14, 15, 24], max_batch=64, step=8)) == 1  # a few texts: one run, not one per step


def test_shares_give_each_thread_about_equal_word_pieces_in_batches_of_similar_length():
    lengths = [15, 14, 24]  # one item of a referenced model: context, reply, reference
    assert shares(lengths, 2, max_batch=32) == [[[1, 0]], [[2]]]  # 29 and 24 pieces, not 14 and 39
    rerank = [20] + [11] * 8 + [13] * 8 + [14] * 8 + [24] * 8  # make bench's /rerank of 32
    buckets = length_buckets(rerank, max_batch=32, step=8)
    cut = shares(rerank, 2, max_batch=32, step=8)

    def padded(batches: list[list[int]]) -> int:
        return sum(len(batch) * max(rerank[i] for i in batch) for batch in batches)

    assert [padded(b) for b in ([buckets[0]], [buckets[1]])] == [336, 216]  # the buckets as they come
    assert [padded(share) for share in cut] == [280, 272]
    assert sorted(i for share in cut for batch in share for i in batch) == list(range(len(rerank)))
    assert max(rerank[i] for i in cut[0][-1]) <= min(rerank[i] for i in cut[1][0])  # cut in order of length
    assert sum(len(share) for share in cut) <= len(buckets) + 1  # one bucket cut, one run more at most


def test_shares_are_never_empty_and_one_run_is_length_buckets():
    assert shares([10, 10, 10], 4, max_batch=8) == [[[0]], [[1]], [[2]]]
    assert shares([1, 1, 100], 2, max_batch=8) == [[[0, 1]], [[2]]]
    assert shares([], 2, max_batch=8) == []
    lengths = [3, 8, 9, 16, 17, 1, 24, 12, 8, 10, 11, 18, 19]
    assert shares(lengths, 1, max_batch=64, step=8) == [length_buckets(lengths, max_batch=64, step=8)]
