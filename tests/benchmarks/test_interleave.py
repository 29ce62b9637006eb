import pytest

from benchmarks.interleave import compare, order


def test_trees_alternate_which_goes_first() -> None:
    assert order(3) == [0, 1, 1, 0, 0, 1]


def test_rows_are_compared_by_their_medians_and_only_where_both_have_them() -> None:
    a = [{"x": {"p50_ms": 10.0}, "only a": {"p50_ms": 1.0}}, {"x": {"p50_ms": 12.0}}, {"x": {"p50_ms": 30.0}}]
    b = [{"x": {"p50_ms": 11.0}}, {"x": {"p50_ms": 13.2}}, {"x": {"p50_ms": 9.0}}]
    [(name, p50_a, p50_b, ratio)] = compare(a, b)
    assert name == "x" and p50_a == [10.0, 12.0, 30.0] and p50_b == [11.0, 13.2, 9.0]
    assert ratio == pytest.approx(11.0 / 12.0)
