"""What a system-level bootstrap resamples: the systems, the items within each system, or both.

After Deutsch, Dror and Roth (TACL 2021), "A Statistical Analysis of Summarization Evaluation
Metrics using Resampling Methods": BOOT-SYSTEMS, BOOT-INPUTS and BOOT-BOTH. Items are resampled
within each system, or, where the request names each item's input (the context every system
answered), as whole inputs with every system's items for them, as Deutsch et al. do. `items` alone
treats the systems as the whole population, and its intervals are far too narrow for a claim about
other systems; `both` is the default because its 95% intervals held the population correlation at
about the nominal rate in simulation (tests/stats/test_designs.py; the table: docs/api.md).
"""
from __future__ import annotations

import numpy as np

from service.stats.bootstrap import stratified_indices

SYSTEMS, ITEMS, BOTH = "systems", "items", "both"
DESIGNS = (SYSTEMS, ITEMS, BOTH)
DEFAULT_DESIGN = BOTH
DESCRIPTIONS = {
    SYSTEMS: "systems resampled with replacement, each keeping all its items (the items are fixed)",
    ITEMS: "items resampled with replacement within each system (the systems are fixed, not resampled)",
    BOTH: "systems resampled with replacement, then items with replacement within each drawn system",
}
BY_INPUTS = {
    SYSTEMS: DESCRIPTIONS[SYSTEMS],
    ITEMS: "inputs resampled with replacement, each bringing every system's items for it (the systems fixed)",
    BOTH: "systems resampled with replacement, and inputs with replacement, each bringing every drawn "
          "system's items for it",
}
# The system draws come from their own stream of the seed, so `both` draws the same items as `items`.
# Not scipy.stats.bootstrap: it resamples one level of observations (no two-stage design), and each
# call draws its own resamples where the paired comparisons need every metric on the same ones. p
# comes from these draws too (bootstrap.bootstrap_p), not scipy.stats.permutation_test, whose
# permutations of systems would match the `systems` design alone.
_SLOT_STREAM = 1


def system_slots(count: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples, count) systems drawn with replacement: position j of a row is the system that
    fills the resample's j-th place."""
    rng = np.random.default_rng((seed, _SLOT_STREAM))
    return rng.integers(0, count, size=(resamples, count))


def system_resamples(design: str, groups: np.ndarray, count: int, resamples: int, seed: int,
                     input_count: int | None = None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(item draws, system slots) of a design. Item draws: (resamples, items) indices stratified by
    system, or with `input_count` (resamples, inputs) draws of inputs; None where the items stay as
    they are. Slots: (resamples, systems), or None where the systems stay."""
    if design not in DESIGNS:
        raise ValueError(f"unknown design {design!r}")
    items = None
    if design in (ITEMS, BOTH):
        items = (stratified_indices(groups, count, resamples, seed) if input_count is None else
                 np.random.default_rng(seed).integers(0, input_count, size=(resamples, input_count)))
    slots = system_slots(count, resamples, seed) if design in (SYSTEMS, BOTH) else None
    return items, slots
