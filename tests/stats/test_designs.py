"""System-level designs: what each resamples, the default's coverage in simulation, and the p from the same draws."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from service import stats
from service.stats import bootstrap, designs
from service.stats.correlate import canonical_order, correlate
from tests.stats.coverage import coverage, placement, simulated_runs, system_correlation
from tests.stats.samples import GOOD, HUMAN, POOR, RNG, SCIPY, drawn_groups


# --- coverage: the default is the design whose 95% intervals hold the population correlation ---------
@pytest.mark.parametrize(("systems", "slope"), [(5, 0.0), (20, 0.0), (5, 1.0)],
                         ids=["5-nested-items", "20-nested-items", "5-shared-inputs"])
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


def test_the_default_design_needs_inputs_named_where_many_systems_share_them() -> None:
    """Items drawn within each system cannot see that a finite set of shared inputs moves every system
    together: with 20 systems `both` then covers too little, and naming the inputs (above) mends it."""
    assert coverage(stats.DEFAULT_DESIGN, 20, ["pearson"], slope=1.0)["pearson"] < 0.90


@pytest.mark.parametrize("independent", [False, True], ids=["correlated-scatter", "independent-scatter"])
def test_the_simulations_truth_is_the_correlation_of_the_systems_means(independent: bool) -> None:
    """Correlated item scatter leaves the systems' means correlated rho whatever the items; independent
    scatter dilutes it to rho / (1 + noise^2 / items), which is what an interval should then hold."""
    human, metric, _ = simulated_runs(1, 20_000, 3, 0.6, 1.0, 0.0, seed=1, independent=independent)
    means = [values[0].reshape(20_000, 3).mean(axis=1) for values in (human, metric)]
    truth = system_correlation(0.6, 1.0, 3, independent)
    assert truth == pytest.approx(0.45 if independent else 0.6)
    assert np.corrcoef(*means)[0, 1] == pytest.approx(truth, abs=0.02)  # 3 standard errors at 20,000 systems


# docs/api.md, "What a system-level interval resamples": 100 systems of 3 items, item scatter independent
# (rho .8, truth .6). Resampling items again adds their scatter twice and pulls the percentile interval
# below r; resampling the systems alone keeps it centred. 50 runs a design, 200 resamples (about 1 s).
@pytest.mark.parametrize("design", stats.DESIGNS)
def test_with_few_items_and_independent_item_scatter_resampling_items_sits_below_r(design: str) -> None:
    found = placement(design, 100, ["pearson"], rho=0.8, items=3, independent=True, runs=50, resamples=200)
    if design == "systems":
        assert found.covered["pearson"] >= 0.85 and abs(found.midpoint_offset["pearson"]) < 0.03, found
    elif design == "items":
        assert found.covered["pearson"] < 0.7 and found.holds_estimate["pearson"] < 0.7, found
    else:
        assert found.midpoint_offset["pearson"] < -0.06, found


# --- what each design draws ---------------------------------------------------------------------------
def test_each_design_draws_what_it_names() -> None:
    groups = np.r_[RNG.integers(0, 5, size=30), np.arange(6)]
    items, slots, _ = stats.system_resamples("items", groups, 6, 20, seed=3)
    assert slots is None and np.array_equal(items, stats.stratified_indices(groups, 6, 20, 3))
    items, slots, _ = stats.system_resamples("systems", groups, 6, 20, seed=3)
    assert items is None and slots.shape == (20, 6) and slots.min() >= 0 and slots.max() < 6
    both = stats.system_resamples("both", groups, 6, 20, seed=3)
    assert np.array_equal(both.slots, slots)  # the systems as `systems` draws them
    assert both.items is None and both.slot_seed == 3  # then each drawn system's own items, from the seed
    over_inputs = stats.system_resamples("both", groups, 6, 20, seed=3, input_count=4)
    assert np.array_equal(over_inputs.items, stats.system_resamples("items", groups, 6, 20, 3, input_count=4).items)
    with pytest.raises(ValueError):
        stats.system_resamples("inputs", groups, 6, 20, seed=3)


@pytest.mark.parametrize("method", stats.METHODS)
def test_resampled_systems_are_each_resamples_drawn_systems(method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bootstrap, "_CHUNK_CELLS", 300)  # several chunks of resamples
    human = RNG.integers(1, 6, size=40).astype(float)
    metric = human + RNG.normal(scale=0.7, size=40)
    groups = np.r_[RNG.integers(0, 7, size=33), np.arange(7)]
    items, slots, _ = stats.system_resamples("systems", groups, 7, 60, seed=2)
    got = stats.system_bootstrap_distributions(human, {"m": metric}, [method], groups, 7, items, slots)[method]["m"]
    for row in range(60):
        h = bootstrap.decimal_ties(np.array([human[groups == g].mean() for g in range(7)]))[slots[row]]
        m = bootstrap.decimal_ties(np.array([metric[groups == g].mean() for g in range(7)]))[slots[row]]
        _assert_correlation(got[row], h, m, method)


def _assert_correlation(got: float, h: np.ndarray, m: np.ndarray, method: str) -> None:
    if not np.all(np.isfinite(h)) or np.ptp(h) == 0 or np.ptp(m) == 0:
        assert np.isnan(got)
    else:
        assert got == pytest.approx(SCIPY[method](m, h).statistic, abs=1e-12)


@pytest.mark.parametrize("chunk_cells", [300, 2_000_000])
@pytest.mark.parametrize("method", stats.METHODS)
def test_both_draws_each_drawn_systems_items_on_their_own(method: str, chunk_cells: int,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The two-stage bootstrap: systems with replacement, then items with replacement within each drawn
    system, a second copy of a system with items of its own; slot by slot in row order, from the
    seed's SLOT_ITEMS_STREAM, whatever the chunks."""
    monkeypatch.setattr(bootstrap, "_CHUNK_CELLS", chunk_cells)
    human = RNG.integers(1, 6, size=40).astype(float)
    metric = human + RNG.normal(scale=0.7, size=40)
    groups = np.r_[RNG.integers(0, 7, size=33), np.arange(7)]
    draws = stats.system_resamples("both", groups, 7, 60, seed=2)
    got = stats.system_bootstrap_distributions(human, {"m": metric}, [method], groups, 7, draws.items, draws.slots,
                                               slot_seed=draws.slot_seed)[method]["m"]
    rng = np.random.default_rng((2, bootstrap.SLOT_ITEMS_STREAM))
    members = [np.flatnonzero(groups == g) for g in range(7)]
    for row in range(60):
        picks = [members[g][rng.integers(0, members[g].size, size=members[g].size)] for g in draws.slots[row]]
        h = bootstrap.decimal_ties(np.array([human[p].sum() / p.size for p in picks]))
        m = bootstrap.decimal_ties(np.array([metric[p].sum() / p.size for p in picks]))
        _assert_correlation(got[row], h, m, method)


def test_a_system_drawn_twice_is_not_the_same_resample_twice() -> None:
    """Three systems of 50 items: a ninth of the resamples draw one system three times. Each copy has
    items of its own, so the correlation is defined there; one shared draw made the copies a single
    point, a constant side, and those resamples (over the 5% allowed) left no interval."""
    human = np.arange(150, dtype=float)
    metric = human + RNG.normal(size=150)
    body = correlate(human.tolist(), {"m": metric.tolist()}, ["a"] * 50 + ["b"] * 50 + ["c"] * 50, ["pearson"],
                     resamples=400, seed=0, system_resampling="both")
    entry = body["metrics"]["m"]["system"]["pearson"]
    assert entry["ci"] is not None and "ci_reason" not in entry, entry


def test_correlate_serves_the_default_design_the_simulation_measured() -> None:
    systems = np.array([f"s{i % 6}" for i in range(40)])
    body = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, systems.tolist(), ["pearson"], resamples=300, seed=7)
    order = canonical_order(HUMAN, {"good": GOOD})
    count, groups = drawn_groups(systems[order], HUMAN[order], GOOD[order])
    draws = stats.system_resamples(stats.DEFAULT_DESIGN, groups, count, 300, 7)
    dist = stats.system_bootstrap_distributions(HUMAN[order], {"good": GOOD[order]}, ["pearson"], groups, count,
                                                draws.items, draws.slots, slot_seed=draws.slot_seed)["pearson"]["good"]
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
    assert found == {"p": 1 / 1000, "at_floor": True, "mc_se": pytest.approx(2 * sps.binom.std(999, 1 / 2000) / 999)}
    one_below = stats.bootstrap_p(np.r_[np.full(998, 0.4), -0.1])
    assert one_below["p"] == pytest.approx(3 / 1000) and not one_below["at_floor"]
    assert stats.bootstrap_p(np.full(999, np.nan))["p"] is None


def test_a_bootstrap_p_says_its_b_where_some_resamples_were_undefined() -> None:
    """p = 77/1000 was printed under "B = 1000" where one resample of 1,000 was undefined: p counts 999."""
    found = stats.bootstrap_p(np.r_[np.full(961, 0.4), np.full(38, -0.1), np.nan])
    assert found["p"] == 77 / 1000 and found["defined"] == 999
    assert "defined" not in stats.bootstrap_p(np.full(999, 0.4))
    rng = np.random.default_rng(3)
    human = rng.normal(size=20)
    systems = [f"s{i % 5}" for i in range(20)]
    body = correlate(human.tolist(), {"m": (human + rng.normal(size=20)).tolist()}, systems, ["pearson"],
                     resamples=2000, seed=0, system_resampling="systems")
    entry = body["metrics"]["m"]["system"]["pearson"]
    assert entry["resamples_defined"] == 1997  # five systems: a draw of one system five times has no r
    assert entry["p"] == 229 / 1998  # (2k + 1) / (B + 1) with B the defined


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
    draws, slots, _ = stats.system_resamples(design, groups, 6, 60, seed=4, input_count=6)
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


def _one_system_answers_two_of_ten_inputs() -> tuple[list[float], list[float], list[str], list[str]]:
    """5 systems over 10 shared inputs; system e answered only i0 and i1."""
    human, metric, systems, inputs = [], [], [], []
    for s, quality in zip("abcde", [1.0, 2.0, 3.0, 4.0, 5.0]):
        for i in range(2 if s == "e" else 10):
            h = quality + float(RNG.normal())
            human.append(h)
            metric.append(h + float(RNG.normal()))
            systems.append(s)
            inputs.append(f"i{i}")
    return human, metric, systems, inputs


@pytest.mark.parametrize("design", ["items", "both"])
def test_a_system_without_items_in_many_resamples_is_named_as_the_reason(design: str) -> None:
    """About a tenth of the resamples of 10 inputs draw neither of e's: e has no mean there. The answer
    says so and names e, not that a side is constant."""
    human, metric, systems, inputs = _one_system_answers_two_of_ten_inputs()
    body = correlate(human, {"m": metric, "n": [-x for x in metric]}, systems, ["pearson"], resamples=1000, seed=0,
                     system_resampling=design, inputs=inputs)
    entry = body["metrics"]["m"]["system"]["pearson"]
    assert entry["ci"] is None and entry["p"] is None
    for reason in (entry["ci_reason"], entry["p_reason"],
                   next(c["reason"] for c in body["comparisons"]
                        if c["level"] == "system" and c["test"] == "paired_bootstrap")):
        assert "a system had no item" in reason and "'e' in" in reason and "2 of the 10 inputs" in reason
        assert "constant" not in reason


def test_systems_without_items_are_those_none_of_whose_inputs_was_drawn() -> None:
    groups = np.array([0, 0, 1, 1, 1, 2])
    inputs = np.array([0, 1, 0, 1, 2, 3])
    for design in ("items", "both"):
        draws = stats.system_resamples(design, groups, 3, 50, seed=1, input_count=4)
        empty = designs.systems_without_items(draws, groups, inputs, 3)
        for row in range(50):
            held = range(3) if draws.slots is None else set(draws.slots[row].tolist())
            expected = [s in held and not set(inputs[groups == s]) & set(draws.items[row].tolist()) for s in range(3)]
            assert empty[row].tolist() == expected


# --- the item level: items, or whole inputs ---------------------------------------------------------
def _clustered(inputs: int, replies: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Replies to shared inputs: each input moves people's and the metric's scores of its replies
    (correlated .2), and a reply's own scatter is correlated .6; the population correlation is .4."""
    effects = rng.multivariate_normal([0, 0], [[1, 0.2], [0.2, 1]], inputs)
    scatter = rng.multivariate_normal([0, 0], [[1, 0.6], [0.6, 1]], inputs * replies)
    which = np.repeat(np.arange(inputs), replies)
    return effects[which, 0] + scatter[:, 0], effects[which, 1] + scatter[:, 1], [f"c{k}" for k in which]


def test_resampling_inputs_covers_where_replies_share_inputs_and_resampling_items_does_not() -> None:
    rng, hits, runs = np.random.default_rng(5), {"items": 0, "inputs": 0}, 200
    for _ in range(runs):
        human, metric, inputs = _clustered(12, 8, rng)
        for design in hits:
            ci = correlate(human.tolist(), {"m": metric.tolist()}, methods=["pearson"], resamples=400, inputs=inputs,
                           item_resampling=design)["metrics"]["m"]["item"]["pearson"]["ci"]
            hits[design] += ci[0] <= 0.4 <= ci[1]
    assert hits["inputs"] / runs >= 0.85 and hits["items"] / runs <= 0.75, hits


def test_inputs_of_one_reply_each_draw_as_items_do() -> None:
    """Drawing inputs of one item each is drawing items: the same intervals and paired deltas, for a seed
    (to the last bits: the same counts in another array may be summed in another order)."""
    n = HUMAN.size
    scores = {"good": GOOD[:n].tolist(), "poor": POOR[:n].tolist()}
    by_items = correlate(HUMAN[:n].tolist(), scores, resamples=300, seed=4)
    by_inputs = correlate(HUMAN[:n].tolist(), scores, resamples=300, seed=4, inputs=[f"i{k}" for k in range(n)],
                          item_resampling="inputs")
    for method in stats.METHODS:
        for name in scores:
            assert by_inputs["metrics"][name]["item"][method]["ci"] == pytest.approx(
                by_items["metrics"][name]["item"][method]["ci"], rel=1e-12)
    paired = [c["ci"] for c in by_items["comparisons"] if c["test"] == "paired_bootstrap"]
    assert [c["ci"] for c in by_inputs["comparisons"] if c["test"] == "paired_bootstrap"] == [
        pytest.approx(ci, rel=1e-12, abs=1e-15) for ci in paired]


def test_resampling_inputs_gives_p_from_its_draws_and_no_williams_test() -> None:
    human, metric, inputs = _clustered(12, 8, np.random.default_rng(1))
    scores = {"m": metric.tolist(), "noise": np.random.default_rng(2).normal(size=human.size).tolist()}
    body = correlate(human.tolist(), scores, resamples=400, inputs=inputs, item_resampling="inputs")
    for name in scores:  # p is the dual of the interval, not scipy's test of independent items
        entry = body["metrics"][name]["item"]["pearson"]
        assert "p_mc_se" in entry and entry["p"] != sps.pearsonr(scores[name], human).pvalue
        assert (entry["ci"][0] > 0 or entry["ci"][1] < 0) == (entry["p"] < 0.05)
    assert {c["test"] for c in body["comparisons"]} == {"paired_bootstrap"}
    summary = body["resampling"]["item"]
    assert summary["design"] == "inputs" and summary["resampled"] == designs.ITEM_DESCRIPTIONS["inputs"]
    assert summary["inputs"] == 12 and "inputs" not in correlate(human.tolist(), scores)["resampling"]["item"]
    assert "Williams" not in summary["comparisons"] and summary["p"].startswith("bootstrap")
    assert "Williams" in correlate(human.tolist(), scores, resamples=400)["resampling"]["item"]["comparisons"]


def test_the_item_level_by_inputs_does_not_depend_on_the_inputs_labels() -> None:
    human, metric, inputs = _clustered(10, 5, np.random.default_rng(3))
    renamed = [f"other-{label[::-1]}" for label in inputs]
    first, again = (correlate(human.tolist(), {"m": metric.tolist()}, resamples=200, inputs=labels,
                              item_resampling="inputs") for labels in (inputs, renamed))
    assert first["metrics"] == again["metrics"]


def test_the_item_level_by_inputs_does_not_depend_on_the_rows_order() -> None:
    """Coarse ratings tie on every value across inputs: their order decided the weighted sums' last bits,
    and with them which side of 0 a resample's r of exactly 0 fell (p .043 against .050)."""
    for trial in range(10):
        rng = np.random.default_rng(trial)
        inputs = [f"c{j}" for j in np.repeat(np.arange(12), rng.integers(1, 7, 12))]
        n = len(inputs)
        human = (rng.integers(1, 3, n) / 3).tolist()
        scores = {"a": (rng.integers(0, 2, n) * 0.1 + 0.7).tolist(), "b": (rng.integers(0, 2, n) / 7).tolist()}
        first = correlate(human, scores, inputs=inputs, item_resampling="inputs", resamples=300, seed=2)
        shuffled = rng.permutation(n)
        again = correlate([human[i] for i in shuffled], {k: [v[i] for i in shuffled] for k, v in scores.items()},
                          inputs=[inputs[i] for i in shuffled], item_resampling="inputs", resamples=300, seed=2)
        assert again["metrics"] == first["metrics"] and again["comparisons"] == first["comparisons"]


def test_a_resampled_zero_but_for_rounding_counts_on_both_sides() -> None:
    exact, rounded = np.array([0.0, 0.3, 0.2, 0.1]), np.array([-1e-17, 0.3, 0.2, 0.1])
    assert bootstrap.bootstrap_p(rounded) == bootstrap.bootstrap_p(exact)
    assert bootstrap.bootstrap_p(np.array([-1e-9, 0.3, 0.2, 0.1]))["p"] == 3 / 5  # past the tolerance: a side


def test_resampling_inputs_needs_the_inputs_and_enough_of_them() -> None:
    with pytest.raises(stats.StatsInputError) as refused:
        correlate(HUMAN[:40].tolist(), {"good": GOOD[:40].tolist()}, item_resampling="inputs")
    assert "inputs" in refused.value.fields
    with pytest.raises(stats.StatsInputError) as refused:
        correlate(HUMAN[:40].tolist(), {"good": GOOD[:40].tolist()}, item_resampling="contexts")
    assert "item_resampling" in refused.value.fields
    few = correlate(HUMAN[:40].tolist(), {"good": GOOD[:40].tolist()}, inputs=[f"c{k % 5}" for k in range(40)],
                    item_resampling="inputs")
    entry = few["metrics"]["good"]["item"]["pearson"]
    assert entry["ci"] is None and entry["p"] is None
    assert entry["ci_reason"] == entry["p_reason"] == "too few inputs for a bootstrap (n = 5, need at least 8)"


def test_a_p_the_bootstrap_did_not_give_carries_no_monte_carlo_error() -> None:
    """Without resamples the system level's p is None: the sampled permutation p's error is not its."""
    rng = np.random.default_rng(0)
    human, metric = rng.integers(1, 4, 120).astype(float), rng.integers(1, 3, 120).astype(float)
    body = correlate(human.tolist(), {"m": metric.tolist()}, [f"s{k % 12}" for k in range(120)], ["spearman"],
                     resamples=0)
    entry = body["metrics"]["m"]["system"]["spearman"]
    assert entry["p"] is None and "p_mc_se" not in entry
