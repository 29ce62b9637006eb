"""System-level designs: what each resamples, the default's coverage in simulation, and the p from the same draws."""
from __future__ import annotations

import numpy as np
import pytest

from service import stats
from service.stats import bootstrap, designs
from service.stats.correlate import canonical_order, correlate
from tests.stats.coverage import coverage
from tests.stats.samples import GOOD, HUMAN, POOR, RNG, SCIPY


# --- coverage: the default is the design whose 95% intervals hold the population correlation ---------
@pytest.mark.parametrize("slope", [0.0, 1.0], ids=["nested-items", "shared-inputs"])
@pytest.mark.parametrize("systems", [5, 20])
def test_the_default_design_covers_the_population_correlation(systems: int, slope: float) -> None:
    shares = coverage(stats.DEFAULT_DESIGN, systems, list(stats.METHODS), slope=slope)
    assert 0.90 <= shares["pearson"] <= 0.99, shares
    # Rank correlations of 5 systems take few values: their intervals span most of [-1, 1] and cover
    # (nearly) always; what matters is that they never cover less than the nominal share by much.
    assert shares["spearman"] >= 0.90 and shares["kendall"] >= 0.90, shares


@pytest.mark.parametrize("systems", [5, 20])
def test_the_default_design_over_shared_inputs_covers_the_population_correlation(systems: int) -> None:
    shares = coverage(stats.DEFAULT_DESIGN, systems, list(stats.METHODS), slope=1.0, by_inputs=True)
    assert 0.90 <= shares["pearson"] <= 0.99, shares
    assert shares["spearman"] >= 0.90 and shares["kendall"] >= 0.90, shares


@pytest.mark.parametrize(("design", "systems", "slope"), [
    ("items", 20, 0.0),  # the systems taken as the whole population: intervals far too narrow
    ("systems", 5, 0.0),  # a percentile interval over 5 points is too narrow
    ("systems", 20, 1.0),  # a finite set of shared inputs moves every system together
])
def test_the_other_designs_cover_too_little(design: str, systems: int, slope: float) -> None:
    assert coverage(design, systems, ["pearson"], slope=slope)["pearson"] < 0.90


# --- what each design draws ---------------------------------------------------------------------------
def test_each_design_draws_what_it_names() -> None:
    groups = np.r_[RNG.integers(0, 5, size=30), np.arange(6)]
    items, slots = stats.system_resamples("items", groups, 6, 20, seed=3)
    assert slots is None and np.array_equal(items, stats.stratified_indices(groups, 6, 20, 3))
    items, slots = stats.system_resamples("systems", groups, 6, 20, seed=3)
    assert items is None and slots.shape == (20, 6) and slots.min() >= 0 and slots.max() < 6
    both_items, both_slots = stats.system_resamples("both", groups, 6, 20, seed=3)
    assert np.array_equal(both_items, stats.stratified_indices(groups, 6, 20, 3))  # as `items` draws them
    assert np.array_equal(both_slots, slots)  # and the systems as `systems` draws them
    with pytest.raises(ValueError):
        stats.system_resamples("inputs", groups, 6, 20, seed=3)


@pytest.mark.parametrize("design", ["systems", "both"])
@pytest.mark.parametrize("method", stats.METHODS)
def test_resampled_systems_are_each_resamples_drawn_systems(design: str, method: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bootstrap, "_CHUNK_CELLS", 300)  # several chunks of resamples
    human = RNG.integers(1, 6, size=40).astype(float)
    metric = human + RNG.normal(scale=0.7, size=40)
    groups = np.r_[RNG.integers(0, 7, size=33), np.arange(7)]
    items, slots = stats.system_resamples(design, groups, 7, 60, seed=2)
    got = stats.system_bootstrap_distributions(human, {"m": metric}, [method], groups, 7, items, slots)[method]["m"]
    for row in range(60):
        idx = np.arange(40) if items is None else items[row]
        h = bootstrap.decimal_ties(np.array([human[idx][groups == g].mean() for g in range(7)]))[slots[row]]
        m = bootstrap.decimal_ties(np.array([metric[idx][groups == g].mean() for g in range(7)]))[slots[row]]
        if np.ptp(h) == 0 or np.ptp(m) == 0:
            assert np.isnan(got[row])
        else:
            assert got[row] == pytest.approx(SCIPY[method](m, h).statistic, abs=1e-12)


def test_correlate_serves_the_default_design_the_simulation_measured() -> None:
    systems = np.array([f"s{i % 6}" for i in range(40)])
    body = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, systems.tolist(), ["pearson"], resamples=300, seed=7)
    order = canonical_order(HUMAN, {"good": GOOD}, systems)
    labels, groups = np.unique(systems[order], return_inverse=True)
    items, slots = stats.system_resamples(stats.DEFAULT_DESIGN, groups, labels.size, 300, 7)
    dist = stats.system_bootstrap_distributions(HUMAN[order], {"good": GOOD[order]}, ["pearson"], groups, labels.size,
                                                items, slots)["pearson"]["good"]
    entry = body["metrics"]["good"]["system"]["pearson"]
    assert entry["ci"] == pytest.approx(stats.percentile_interval(dist), abs=1e-12)
    assert entry["p"] == pytest.approx(stats.bootstrap_p(dist)["p"], abs=1e-12)
    assert body["resampling"]["system"]["design"] == stats.DEFAULT_DESIGN == "both"


# --- p from the same resamples as the interval --------------------------------------------------------
def test_bootstrap_p_is_the_percentile_intervals_dual() -> None:
    rng = np.random.default_rng(5)
    for centre in np.linspace(-0.3, 0.3, 25):
        dist = np.clip(rng.normal(centre, 0.15, size=999), -1, 1)
        ci = stats.percentile_interval(dist, 0.95)
        p = stats.bootstrap_p(dist)["p"]
        below = int(np.count_nonzero(dist <= 0))
        if min(below, 999 - below) not in range(23, 27):  # away from the 2.5% tail's own resolution
            assert (ci[0] > 0 or ci[1] < 0) == (p < 0.05), (centre, ci, p)


def test_a_p_at_the_floor_says_so() -> None:
    found = stats.bootstrap_p(np.full(999, 0.4))
    assert found == {"p": 1 / 1000, "at_floor": True}
    one_below = stats.bootstrap_p(np.r_[np.full(998, 0.4), -0.1])
    assert one_below["p"] == pytest.approx(3 / 1000) and not one_below["at_floor"]
    assert stats.bootstrap_p(np.full(999, np.nan))["p"] is None


def test_the_system_level_p_and_interval_agree_where_they_did_not() -> None:
    # Resampling items within 5 systems gave an interval excluding 0 while the permutation p over the
    # systems was .5: one design for both now, so the two cannot tell different stories.
    systems = [f"s{i % 5}" for i in range(40)]
    for design in stats.DESIGNS:
        body = correlate(HUMAN.tolist(), {"poor": POOR.tolist(), "good": GOOD.tolist()}, systems, resamples=500,
                         system_resampling=design)
        assert body["resampling"]["system"]["design"] == design
        for entries in (body["metrics"]["poor"]["system"], body["metrics"]["good"]["system"]):
            for entry in entries.values():
                if entry["ci"] is not None and entry["p"] is not None:
                    excludes = entry["ci"][0] > 0 or entry["ci"][1] < 0
                    assert excludes == (entry["p"] < 0.05) or abs(entry["p"] - 0.05) < 0.01, (design, entry)


def test_every_report_names_its_design_method_resamples_and_seed() -> None:
    body = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, [f"s{i % 5}" for i in range(40)], resamples=200,
                     seed=9, system_resampling="systems")
    for level, design in (("item", "items"), ("system", "systems")):
        summary = body["resampling"][level]
        assert summary["design"] == design and summary["resamples"] == 200 and summary["seed"] == 9
        assert summary["method"] == "percentile bootstrap" and summary["confidence"] == 0.95
    assert body["resampling"]["system"]["resampled"] == designs.DESCRIPTIONS["systems"]
    no_systems = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, resamples=0)
    assert set(no_systems["resampling"]) == {"item"} and "off" in no_systems["resampling"]["item"]["reason"]


@pytest.mark.parametrize("design", ["items", "both"])
@pytest.mark.parametrize("method", stats.METHODS)
def test_resampled_inputs_bring_every_systems_items_for_them(design: str, method: str) -> None:
    human = RNG.integers(1, 6, size=36).astype(float)
    metric = human + RNG.normal(scale=0.7, size=36)
    groups = np.repeat(np.arange(6), 6)  # 6 systems answering the same 6 inputs, one system missing one
    inputs = np.tile(np.arange(6), 6)
    keep = np.arange(36) != 35
    human, metric, groups, inputs = human[keep], metric[keep], groups[keep], inputs[keep]
    draws, slots = stats.system_resamples(design, groups, 6, 60, seed=4, input_count=6)
    assert draws.shape == (60, 6)
    got = stats.system_bootstrap_distributions(human, {"m": metric}, [method], groups, 6, draws, slots,
                                               inputs)[method]["m"]
    for row in range(60):
        weight = np.bincount(draws[row], minlength=6)[inputs].astype(float)
        with np.errstate(invalid="ignore"):
            h = np.array([np.sum((weight * human)[groups == g]) / np.sum(weight[groups == g]) for g in range(6)])
            m = np.array([np.sum((weight * metric)[groups == g]) / np.sum(weight[groups == g]) for g in range(6)])
        h, m = bootstrap.decimal_ties(h), bootstrap.decimal_ties(m)
        if slots is not None:
            h, m = h[slots[row]], m[slots[row]]
        if not np.all(np.isfinite(h)) or np.ptp(h) == 0 or np.ptp(m) == 0:
            assert np.isnan(got[row])
        else:
            assert got[row] == pytest.approx(SCIPY[method](m, h).statistic, abs=1e-12)


def test_correlate_resamples_inputs_where_the_request_names_them() -> None:
    systems = [f"s{i % 5}" for i in range(40)]
    inputs = [f"c{i // 5}" for i in range(40)]  # 8 contexts, each answered by all 5 systems
    body = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, systems, ["pearson"], resamples=300, seed=2,
                     inputs=inputs)
    assert body["resampling"]["system"]["resampled"] == designs.BY_INPUTS["both"]
    shuffled = np.random.default_rng(1).permutation(40)
    again = correlate(HUMAN[shuffled].tolist(), {"good": GOOD[shuffled].tolist()}, [systems[i] for i in shuffled],
                      ["pearson"], resamples=300, seed=2, inputs=[inputs[i] for i in shuffled])
    assert again == body  # the draws follow the input labels, not the rows' order
    one = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, systems, ["pearson"], resamples=300,
                    system_resampling="items", inputs=["c"] * 40)["metrics"]["good"]["system"]["pearson"]
    assert one["ci"] is None and "one input" in one["ci_reason"]
    with pytest.raises(stats.StatsInputError) as caught:
        correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, systems, inputs=inputs[:-1])
    assert "inputs" in caught.value.fields
