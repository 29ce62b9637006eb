"""scripts/item_clusters.py: the interval widths docs/api.md quotes, by items and by whole contexts."""
from __future__ import annotations

import numpy as np

from scripts.item_clusters import interval_widths


def test_copies_within_a_context_widen_the_interval_by_contexts_alone() -> None:
    """Ten contexts of five identical replies are ten observations, not fifty: only drawing whole
    contexts sees that."""
    rng = np.random.default_rng(0)
    human, metric = rng.normal(size=10), rng.normal(size=10)
    which = np.repeat(np.arange(10), 5)
    widths = interval_widths(human[which], metric[which] + 0.5 * human[which], which, resamples=400)
    for by_items, by_contexts in widths.values():
        assert by_contexts > 1.5 * by_items


def test_contexts_of_one_reply_draw_as_items_do() -> None:
    rng = np.random.default_rng(1)
    human, metric = rng.normal(size=40), rng.normal(size=40)
    widths = interval_widths(human, metric + human, np.arange(40), resamples=400)
    for by_items, by_contexts in widths.values():
        assert 0.7 < by_contexts / by_items < 1.4
