"""What each level's bootstrap resamples. System level: the systems, the items within each system, or both.

After Deutsch, Dror and Roth (TACL 2021): BOOT-SYSTEMS, BOOT-INPUTS and BOOT-BOTH; where the request
names each item's input, items are drawn as whole inputs with every system's items for them. `items`
alone treats the systems as the whole population. `both`, the default, held the population correlation
at about the nominal rate where item scatter is correlated like the systems; where it is independent,
resampled items add it twice to each system mean, and `systems` suits many systems
(tests/stats/test_designs.py; docs/api.md). Item level: the items, or whole inputs (a cluster bootstrap:
replies to one input are not independent draws).
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import NamedTuple

import numpy as np

from service.stats.bootstrap import stratified_indices

SYSTEMS, ITEMS, BOTH = "systems", "items", "both"
DESIGNS = (SYSTEMS, ITEMS, BOTH)
DEFAULT_DESIGN = BOTH
DESCRIPTIONS = {
    SYSTEMS: "systems resampled with replacement, each keeping all its items (the items are fixed)",
    ITEMS: "items resampled with replacement within each system (the systems are fixed, not resampled)",
    BOTH: "systems resampled with replacement, then items with replacement within each drawn system (each copy "
          "of a system drawn twice with its own items)",
}
BY_INPUTS = {
    SYSTEMS: DESCRIPTIONS[SYSTEMS],
    ITEMS: "inputs resampled with replacement, each bringing every system's items for it (the systems fixed)",
    BOTH: "systems resampled with replacement, and inputs with replacement, each bringing every drawn "
          "system's items for it",
}
INPUTS = "inputs"
ITEM_DESIGNS = (ITEMS, INPUTS)
DEFAULT_ITEM_DESIGN = ITEMS
ITEM_DESCRIPTIONS = {
    ITEMS: "items resampled with replacement, as independent draws (items of one system or input are not: read "
           "claims about systems from the system level)",
    INPUTS: "inputs resampled with replacement, each bringing every item that answers it (replies to one input are "
            "not independent draws: a claim beyond the inputs in hand)",
}
# The system draws come from their own stream of the seed; so do `both`'s draws of each drawn system's
# own items (bootstrap.SLOT_ITEMS_STREAM), while over inputs `both` draws the inputs as `items` does.
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


class Resamples(NamedTuple):
    """A design's draws, as bootstrap.system_bootstrap_distributions takes them."""

    items: np.ndarray | None  # (resamples, items) stratified by system, or (resamples, inputs); None: kept
    slots: np.ndarray | None  # (resamples, systems) drawn systems; None: the systems kept
    slot_seed: int | None = None  # `both` over items nested in systems: each slot's own items drawn from it


def system_resamples(design: str, groups: np.ndarray, count: int, resamples: int, seed: int,
                     input_count: int | None = None) -> Resamples:
    """The draws of a design. `both` over items nested in systems draws each drawn system's items anew,
    a copy of a system included (slot_seed); over inputs (`input_count`) it draws the inputs once per
    resample, each bringing every drawn system's items for it, as Deutsch et al.'s BOOT-BOTH does."""
    if design not in DESIGNS:
        raise ValueError(f"unknown design {design!r}")
    slots = system_slots(count, resamples, seed) if design in (SYSTEMS, BOTH) else None
    if design == BOTH and input_count is None:
        return Resamples(None, slots, seed)
    items = None
    if design in (ITEMS, BOTH):
        items = (stratified_indices(groups, count, resamples, seed) if input_count is None else
                 input_resamples(input_count, resamples, seed))
    return Resamples(items, slots)


def systems_without_items(draws: Resamples, groups: np.ndarray, inputs: np.ndarray, count: int) -> np.ndarray:
    """(resamples, systems): which systems had no item in a resample drawn by inputs, none of the inputs
    they answered having been drawn (a system that answered few of them), counted where the resample
    holds the system (every system under `items`, the drawn ones under `both`). Such a system has no
    mean there, so the correlation is undefined."""
    input_count = int(inputs.max()) + 1
    answered = np.zeros((input_count, count), dtype=bool)
    answered[inputs, groups] = True
    drawn_inputs = np.zeros((draws.items.shape[0], input_count), dtype=bool)
    drawn_inputs[np.arange(draws.items.shape[0])[:, None], draws.items] = True
    empty = ~(drawn_inputs.astype(np.int64) @ answered.astype(np.int64)).astype(bool)
    if draws.slots is not None:
        held = np.zeros_like(empty)
        held[np.arange(empty.shape[0])[:, None], draws.slots] = True
        empty &= held
    return empty


def _by_content(keys: Sequence[tuple], ties: str) -> np.ndarray:
    """Each group's place when the groups are sorted by `keys`: `ties` "label" keeps equal keys in their
    present order (the labels'), "dense" gives them one place (so a key built on it names no label)."""
    order = sorted(range(len(keys)), key=keys.__getitem__)  # stable
    places = np.empty(len(keys), dtype=np.int64)
    if ties == "label":
        places[order] = np.arange(len(keys))
        return places
    place = -1
    for k, g in enumerate(order):
        place += k == 0 or keys[g] != keys[order[k - 1]]
        places[g] = place
    return places


def _contents(groups: np.ndarray, count: int, rows: Sequence[Hashable]) -> list[tuple]:
    """Each group's items' rows, sorted: what a group holds, whatever its label and the rows' order."""
    members: list[list] = [[] for _ in range(count)]
    for group, row in zip(groups.tolist(), rows):
        members[group].append(row)
    return [tuple(sorted(m)) for m in members]


def by_content(groups: np.ndarray, count: int, rows: Sequence[tuple], inputs: np.ndarray | None = None,
               input_count: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """System ids (and input ids) renumbered in the order of what the systems (inputs) hold, so that the
    draws, which pick ids, do not depend on the labels: renaming systems or inputs leaves every interval
    and p as it was for a seed. `rows` is each item's values (human, then each metric).

    A system's key is its items' rows sorted, with, where inputs are named, each item's input's contents
    (as a dense place: equal contents, equal place); an input's key is its items' (system id, row)s.
    Systems (inputs) that hold the same keep the labels' order; without inputs such systems are the same
    sample, so any order draws the same numbers."""
    input_places = None
    if inputs is not None:
        input_places = _by_content(_contents(inputs, input_count, rows), "dense")
        rows = [(*row, int(place)) for row, place in zip(rows, input_places[inputs])]
    systems = _by_content(_contents(groups, count, rows), "label")[groups]
    if inputs is None:
        return systems, None
    keyed = [(int(system), *row) for system, row in zip(systems, rows)]
    return systems, _by_content(_contents(inputs, input_count, keyed), "label")[inputs]


def inputs_by_content(inputs: np.ndarray, input_count: int, rows: Sequence[tuple]) -> np.ndarray:
    """Each item's input id, inputs numbered in the order of what they hold (their items' rows, sorted),
    so that the item level's draws by input do not depend on the inputs' labels."""
    return _by_content(_contents(inputs, input_count, rows), "label")[inputs]


def input_resamples(input_count: int, resamples: int, seed: int) -> np.ndarray:
    """(resamples, input_count) inputs drawn with replacement, from the seed's stream that draws items."""
    return np.random.default_rng(seed).integers(0, input_count, size=(resamples, input_count))
