"""The scorer base: soft_bound keeps regression heads inside their advertised score_range."""
from __future__ import annotations

import numpy as np

from service.scorers.base import soft_bound


def test_soft_bound_keeps_every_score_inside_the_range_and_every_order() -> None:
    raw = np.concatenate([np.linspace(-20, 30, 5001), [-1e6, 1e6]])
    bounded = soft_bound(raw, 1.0, 5.0)
    assert np.all(bounded >= 1.0) and np.all(bounded <= 5.0)
    gaps = np.diff(bounded[:5001])
    assert np.all(gaps >= 0)
    assert np.all(gaps[np.abs(raw[:5000] - 3) < 6] > 0)  # strictly increasing up to ~20 band widths out


def test_soft_bound_is_the_identity_inside_the_band_and_smooth_at_its_edges() -> None:
    inside = np.linspace(1.2, 4.8, 37)  # the band is 5% of the 1-5 range at each end: 0.2 wide
    assert np.array_equal(soft_bound(inside, 1.0, 5.0), inside)
    eps = 1e-6
    for edge in (1.2, 4.8):
        left, mid, right = soft_bound(np.array([edge - eps, edge, edge + eps]), 1.0, 5.0)
        assert abs((right - left) / (2 * eps) - 1.0) < 1e-4  # slope 1 across the edge: no kink
        assert abs(mid - edge) < 1e-12


def test_soft_bound_follows_the_range_it_is_given() -> None:
    assert 0.0 < soft_bound(np.array([-3.0]), 0.0, 1.0)[0] < 0.05
    assert 99.0 < soft_bound(np.array([250.0]), 0.0, 100.0)[0] < 100.0


def test_items_and_turns_hold_their_texts_in_nfc() -> None:
    """Where every scored text is made into the value scorers take: canonically equivalent spellings are one."""
    import unicodedata

    from service.scorers.base import Item, Turn

    nfc = "we had a lovely crème brûlée at the café in zürich."
    nfd = unicodedata.normalize("NFD", nfc)
    assert Item([nfd, "ok"], nfd, nfd) == Item([nfc, "ok"], nfc, nfc)
    assert Item([nfd], nfd).reference is None
    assert Turn("bot", nfd).text == nfc
