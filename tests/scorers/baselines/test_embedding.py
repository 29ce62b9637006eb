"""service.scorers.baselines.embedding: the cosine the GloVe scorers and the M_H proxies share."""
import numpy as np
import pytest

from service.scorers.baselines.embedding import average_similarity, cosine, extrema_similarity, greedy_similarity


def test_cosine_is_scale_free_and_signed() -> None:
    a, b = np.array([1.0, 2.0, 0.0]), np.array([2.0, 4.0, 0.0])
    assert cosine(a, b) == pytest.approx(1.0)
    assert cosine(a, -3 * b) == pytest.approx(-1.0)
    assert cosine(np.array([1.0, 0.0]), np.array([0.0, 5.0])) == 0.0


def test_a_zero_vector_is_no_evidence_not_nan() -> None:
    assert cosine(np.zeros(3), np.array([1.0, 2.0, 3.0])) == 0.0


def test_equal_word_bags_score_exactly_one_and_sums_do_not_depend_on_their_order() -> None:
    """Replies equal to their reference tie at exactly 1 whatever the CPU: float32 dot products rounded
    by the SIMD width left some at 0.9999999 and broke the ties (Spearman .524 on one CPU, .538 on another)."""
    rng = np.random.default_rng(3)
    misses = 0
    for _ in range(200):
        words = rng.normal(scale=0.4, size=(int(rng.integers(1, 30)), 50)).astype(np.float32)
        shuffled = words[rng.permutation(len(words))]
        misses += float(words.mean(axis=0) @ words.mean(axis=0)) / float(np.linalg.norm(words.mean(axis=0))) ** 2 != 1
        for similarity in (average_similarity, extrema_similarity, greedy_similarity):
            assert similarity(words, shuffled) == 1.0
        other = rng.normal(size=50).astype(np.float32)
        order = rng.permutation(50)
        assert cosine(words[0], other) == cosine(words[0][order], other[order])  # exactly, in any order
    assert misses > 20  # the plain float32 cosine of a vector with itself is often not 1
