"""service.scorers.baselines.embedding: the cosine the GloVe scorers and the M_H proxies share."""
import numpy as np
import pytest

from service.scorers.baselines.embedding import cosine


def test_cosine_is_scale_free_and_signed() -> None:
    a, b = np.array([1.0, 2.0, 0.0]), np.array([2.0, 4.0, 0.0])
    assert cosine(a, b) == pytest.approx(1.0)
    assert cosine(a, -3 * b) == pytest.approx(-1.0)
    assert cosine(np.array([1.0, 0.0]), np.array([0.0, 5.0])) == 0.0


def test_a_zero_vector_is_no_evidence_not_nan() -> None:
    assert cosine(np.zeros(3), np.array([1.0, 2.0, 3.0])) == 0.0
