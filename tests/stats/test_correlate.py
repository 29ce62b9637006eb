"""The /correlate body (service.stats.correlate): levels, comparisons, agreement and bad input."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from service import stats
from service.stats import StatsInputError, correlate
from service.stats.correlate import canonical_order
from service.stats.significance import holm
from tests.stats.samples import GOOD, HUMAN, POOR, RNG, SCIPY, drawn_groups, no_nan
from service.stats.correlation import correlation
from service.stats.significance import williams_test


def test_bootstrap_is_seeded() -> None:
    first = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, resamples=200, seed=7)
    again = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, resamples=200, seed=7)
    other = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, resamples=200, seed=8)
    assert first == again
    assert first["metrics"]["good"]["item"]["pearson"]["ci"] != other["metrics"]["good"]["item"]["pearson"]["ci"]


def test_the_answer_says_its_comparisons_are_two_sided_and_uncorrected() -> None:
    body = correlate(HUMAN[:40].tolist(), {"good": GOOD[:40].tolist(), "poor": POOR[:40].tolist()}, resamples=0)
    assert "two-sided" in body["resampling"]["item"]["comparisons"]
    assert "uncorrected for the other comparisons" in body["resampling"]["item"]["comparisons"]


@pytest.mark.parametrize("field", ["systems", "inputs"])
def test_an_invisible_label_is_refused_as_blank(field: str) -> None:
    """A zero-width space passed the schema's pattern and made a system of its own; /human-eval refused it."""
    labels = ["a", "b"] * 19 + ["\u200b", "a"]
    with pytest.raises(StatsInputError) as refused:
        correlate(HUMAN[:40].tolist(), {"good": GOOD[:40].tolist()}, resamples=0, **{field: labels})
    assert refused.value.fields == {f"{field}.38": f"Must name {'a system' if field == 'systems' else 'an input'} "
                                                   f"(not blank): label every item, or leave `{field}` out."}


def test_the_answer_gives_each_systems_means_on_the_scale_sent() -> None:
    """The means the system level correlates, for a paper's system table (the statistics read them rescaled)."""
    human = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10.5]
    scores = {"m": [1e-300 * v for v in (1, 1, 2, 2, 3, 3, 4, 4, 5, 5)], "z": [0, 1] * 5}
    systems = ["e", "e", "b", "b", "c", "c", "d", "d", "a", "a"]
    body = correlate(human, scores, systems, resamples=0)
    assert body["systems"]["means"] == {
        "a": {"n": 2, "human": 9.75, "metrics": {"m": pytest.approx(5e-300), "z": 0.5}},
        "b": {"n": 2, "human": 3.5, "metrics": {"m": pytest.approx(2e-300), "z": 0.5}},
        "c": {"n": 2, "human": 5.5, "metrics": {"m": pytest.approx(3e-300), "z": 0.5}},
        "d": {"n": 2, "human": 7.5, "metrics": {"m": pytest.approx(4e-300), "z": 0.5}},
        "e": {"n": 2, "human": 1.5, "metrics": {"m": pytest.approx(1e-300), "z": 0.5}}}
    means = body["systems"]["means"]
    r = sps.pearsonr([means[k]["human"] for k in sorted(means)], [means[k]["metrics"]["m"] for k in sorted(means)])
    assert body["metrics"]["m"]["system"]["pearson"]["r"] == pytest.approx(r.statistic, abs=1e-12)


def test_systems_that_differ_only_by_a_trailing_nul_are_not_merged() -> None:
    """The label "c\\u0000" was grouped with "c" (numpy's fixed-width strings drop trailing NULs)."""
    systems = ["a", "a", "b", "b", "c", "c", "c\u0000", "c\u0000"] * 5
    body = correlate(HUMAN[:40].tolist(), {"good": GOOD[:40].tolist()}, systems, resamples=0)
    assert body["metrics"]["good"]["system"]["pearson"]["n"] == 4
    assert sorted(body["systems"]["labels"]) == ["a", "b", "c", "c\u0000"]


def test_two_unicode_spellings_of_a_system_label_are_one_system() -> None:
    """"café" composed and decomposed were two systems; labels are read in NFC."""
    systems = ["caf\u00e9", "cafe\u0301", "b", "b", "c", "c", "d", "d"] * 5
    body = correlate(HUMAN[:40].tolist(), {"good": GOOD[:40].tolist()}, systems, resamples=0)
    assert sorted(body["systems"]["labels"]) == ["b", "c", "caf\u00e9", "d"]


def test_correlate_body_item_and_system_levels() -> None:
    systems = [f"s{i % 5}" for i in range(40)]
    body = correlate(HUMAN.tolist(), {"good": GOOD.tolist(), "poor": POOR.tolist()}, systems, resamples=200)
    no_nan(body)
    item = body["metrics"]["good"]["item"]["pearson"]
    assert item["r"] == pytest.approx(sps.pearsonr(GOOD, HUMAN).statistic)
    assert item["ci"][0] < item["r"] < item["ci"][1] and item["n"] == 40
    labels = np.array(systems)
    means = lambda v: np.array([np.mean(np.asarray(v)[labels == s]) for s in sorted(set(systems))])  # noqa: E731
    system = body["metrics"]["good"]["system"]["kendall"]
    assert system["r"] == pytest.approx(sps.kendalltau(means(GOOD), means(HUMAN)).statistic)
    assert system["n"] == 5
    kinds = {(c["level"], c["method"], c["test"]) for c in body["comparisons"]}
    assert ("item", "pearson", "williams") in kinds and ("item", "kendall", "paired_bootstrap") in kinds
    assert ("system", "spearman", "paired_bootstrap") in kinds
    assert not any(c["method"] != "pearson" and c["test"] == "williams" for c in body["comparisons"])
    williams = next(c for c in body["comparisons"] if c["test"] == "williams" and c["level"] == "item")
    r_ab = sps.pearsonr(GOOD, POOR).statistic
    expected = stats.williams_test(sps.pearsonr(GOOD, HUMAN).statistic, sps.pearsonr(POOR, HUMAN).statistic, r_ab, 40)
    assert williams["p"] == pytest.approx(expected["p"]) and williams["p"] < 0.05
    assert body["agreement"] is None


@pytest.mark.parametrize("method", stats.METHODS)
def test_system_level_interval_resamples_items_within_systems(method: str) -> None:
    systems = [f"s{i % 6}" for i in range(40)]
    body = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, systems, [method], resamples=80, seed=5,
                     system_resampling="items")
    assert body["resampling"]["system"]["design"] == "items"
    order = canonical_order(HUMAN, {"good": GOOD})  # the order the draws are made in
    human, good = HUMAN[order], GOOD[order]
    count, groups = drawn_groups(np.asarray(systems)[order], human, good)
    indices = stats.stratified_indices(groups, count, 80, 5)
    dist = []
    for idx in indices:
        assert np.array_equal(groups[idx], groups)  # every system keeps its items' count
        h = [human[idx][groups == g].mean() for g in range(count)]
        m = [good[idx][groups == g].mean() for g in range(count)]
        dist.append(SCIPY[method](m, h).statistic)
    expected = stats.percentile_interval(np.array(dist))
    assert body["metrics"]["good"]["system"][method]["ci"] == pytest.approx(expected, abs=1e-12)


def test_correlate_constant_metric_is_null_never_nan() -> None:
    body = correlate(HUMAN.tolist(), {"flat": [1.0] * 40, "good": GOOD.tolist()}, resamples=50)
    no_nan(body)
    flat = body["metrics"]["flat"]["item"]["spearman"]
    assert flat["r"] is None and flat["ci"] is None and "constant" in flat["reason"]
    assert all(c["p"] is None and "reason" in c for c in body["comparisons"])


def test_correlate_several_ratings_per_item() -> None:
    ratings = [[h + d for d in (-0.5, 0.0, 0.5)] for h in HUMAN.tolist()]
    ratings[0] = [HUMAN[0]]  # ragged: one rating only
    body = correlate(ratings, {"good": GOOD.tolist()}, resamples=0)
    means = [float(np.mean(r)) for r in ratings]
    assert body["metrics"]["good"]["item"]["pearson"]["r"] == pytest.approx(sps.pearsonr(GOOD, means).statistic)
    assert body["metrics"]["good"]["item"]["pearson"]["ci"] is None  # resampling off
    assert body["agreement"]["krippendorff_alpha"] == pytest.approx(stats.krippendorff_alpha_interval(ratings))
    assert body["agreement"]["krippendorff_alpha_ordinal"] == pytest.approx(stats.krippendorff_alpha_ordinal(ratings))
    assert body["agreement"]["raters_per_item"] == pytest.approx((3 * 39 + 1) / 40)
    assert body["agreement"]["pairable_items"] == 39 and body["agreement"]["krippendorff_alpha_ci"] is None
    assert body["agreement"]["reason"] == "resampling is off (resamples = 0)"


def test_agreement_intervals_resample_the_items_with_two_ratings() -> None:
    """alpha's intervals hold it, come from resamples of the pairable items under the request's seed, and
    say why where they are null."""
    ratings = [[h + d for d in RNG.normal(scale=0.7, size=3)] for h in HUMAN.tolist()]
    ratings[0] = [HUMAN[0]]
    found = correlate(ratings, {"good": GOOD.tolist()}, resamples=500, seed=3, confidence=0.9)["agreement"]
    # the items in the order of their ratings (sorted within and across), then resample_indices' draws
    pairable = sorted((np.sort(u) for u in stats.agreement.pairable_units(ratings)), key=lambda u: (u.size, u.tolist()))
    draws = np.random.default_rng(3).integers(0, 39, size=(500, 39))
    for name, ordinal in (("krippendorff_alpha", False), ("krippendorff_alpha_ordinal", True)):
        low, high = found[f"{name}_ci"]
        assert low < found[name] < high
        assert [low, high] == stats.percentile_interval(stats.agreement.bootstrap_alphas(pairable, draws, ordinal), 0.9)
    assert found["resampling"] == {"method": "percentile bootstrap", "confidence": 0.9, "resamples": 500, "seed": 3,
                                   "resampled": "the items with two ratings or more, each with all its ratings "
                                                "(the raters are not resampled)"}
    assert "reason" not in found
    order = RNG.permutation(40)  # the same rows in another order, each item's ratings too: the same answer
    shuffled = [list(RNG.permutation(ratings[i])) for i in order]
    again = correlate(shuffled, {"good": GOOD[order].tolist()}, resamples=500, seed=3, confidence=0.9)["agreement"]
    assert again == found
    few = correlate([[1.0, 2.0]] * 7 + [[3.0]] * 3, {"m": list(range(10))}, resamples=100)["agreement"]
    assert few["krippendorff_alpha_ci"] is None and few["reason"].startswith("too few items with two ratings")
    steady = correlate([[1.0, 1.0]] * 9 + [[1.0, 2.0]], {"m": list(range(10))}, resamples=100)["agreement"]
    assert steady["krippendorff_alpha"] is not None and steady["krippendorff_alpha_ci"] is None
    assert steady["reason"].startswith("alpha is undefined in more than 5% of the resamples")


@pytest.mark.parametrize(
    ("human", "scores", "systems", "field"),
    [
        ([1.0, 2.0, 3.0], {"m": [1.0, 2.0]}, None, "scores.m"),
        ([1.0, float("nan"), 3.0], {"m": [1.0, 2.0, 3.0]}, None, "human.1"),
        ([1.0, 2.0, 3.0], {"m": [1.0, float("inf"), 3.0]}, None, "scores.m.1"),
        ([[1.0], [], [2.0]], {"m": [1.0, 2.0, 3.0]}, None, "human.1"),
        ([1.0, 2.0, 3.0], {"m": [1.0, 2.0, 3.0]}, ["a"], "systems"),
        ([1.0, 2.0], {"m": [1.0, 2.0]}, None, "human"),
        ([1.0, 2.0, 3.0], {}, None, "scores"),
        ([1.0, 2.0, 3.0], {"m": [1.0, 2.0, 3.0]}, None, "methods"),
    ],
)
def test_correlate_rejects_bad_input_naming_the_field(human, scores, systems, field) -> None:
    methods = [] if field == "methods" else list(stats.METHODS)
    with pytest.raises(StatsInputError) as caught:
        correlate(human, scores, systems, methods, resamples=10)
    assert field in caught.value.fields


def test_smallest_valid_input_three_items() -> None:
    body = correlate([1.0, 2.0, 4.0], {"a": [1.0, 3.0, 2.0], "b": [2.0, 2.5, 5.0]}, ["x", "y", "z"], resamples=100)
    no_nan(body)
    assert body["metrics"]["a"]["item"]["pearson"]["n"] == 3
    williams = [c for c in body["comparisons"] if c["test"] == "williams"]
    assert williams and all(c["p"] is None and "too few" in c["reason"] for c in williams)
    # Resamples of three points are mostly two points, r = +-1: no interval, no bootstrap p.
    assert body["metrics"]["a"]["item"]["kendall"]["ci"] is None
    assert "too few items for a bootstrap" in body["metrics"]["a"]["item"]["kendall"]["ci_reason"]
    assert all(c["p"] is None for c in body["comparisons"] if c["test"] == "paired_bootstrap")


def test_two_systems_are_too_few_for_a_system_level_correlation() -> None:
    body = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, ["a", "b"] * 20, resamples=50)
    no_nan(body)
    system = body["metrics"]["good"]["system"]["pearson"]
    assert system["r"] is None and system["n"] == 2 and system["reason"].startswith("too few systems")
    assert body["metrics"]["good"]["item"]["pearson"]["r"] is not None


def test_too_few_resamples_for_the_confidence_give_no_interval_and_say_why() -> None:
    assert (stats.min_resamples(0.95), stats.min_resamples(0.99), stats.min_resamples(0.9)) == (40, 200, 20)
    one = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, resamples=1)["metrics"]["good"]["item"]["pearson"]
    assert one["ci"] is None and one["ci_reason"].startswith("too few resamples") and one["r"] is not None
    enough = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, resamples=40)["metrics"]["good"]["item"]["pearson"]
    assert enough["ci"][0] <= enough["r"] <= enough["ci"][1]
    near_one = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, confidence=0.9999999999999999)
    assert near_one["resampling"]["item"]["reason"] == (  # the level as given, not rounded to a "1 interval"
        "too few resamples for a 0.9999999999999999 interval (resamples = 1000, need at least 18014398509481984)")


def test_bootstrap_starts_at_eight_items() -> None:
    body = correlate(HUMAN[:8].tolist(), {"good": GOOD[:8].tolist()}, resamples=100)
    assert body["metrics"]["good"]["item"]["pearson"]["ci"] is not None


@settings(max_examples=60, deadline=None)
@given(
    data=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3), st.integers(-2, 2), st.sampled_from("abc")),
                  min_size=3, max_size=14),
    seed=st.integers(0, 3),
)
def test_any_valid_input_gives_finite_json_and_bounded_values(data, seed) -> None:
    human, a, b, systems = (list(column) for column in zip(*data))
    body = correlate([float(h) for h in human], {"a": [float(v) for v in a], "b": [float(v) for v in b]},
                     systems, resamples=30, seed=seed)
    no_nan(body)
    for per_level in body["metrics"].values():
        for entries in per_level.values():
            for entry in entries.values():
                assert (entry["r"] is None) == ("reason" in entry)
                if entry["r"] is not None:
                    assert -1.0 <= entry["r"] <= 1.0 and (entry["p"] is None) == ("p_reason" in entry)
                if entry["p"] is not None:
                    assert 0.0 <= entry["p"] <= 1.0
                if entry.get("ci"):
                    assert -1.0 <= entry["ci"][0] <= entry["ci"][1] <= 1.0
    for comparison in body["comparisons"]:
        assert comparison["p"] is None or 0.0 <= comparison["p"] <= 1.0


@pytest.mark.parametrize("method", ["spearman", "kendall"])
def test_system_interval_keeps_tied_system_means_tied(method: str) -> None:
    # Likert ratings give systems equal means; dividing before summing (a one-hot of 1/size) made
    # them differ by rounding, which moved ranks: this interval's lower end was off by up to 0.07.
    rng = np.random.default_rng(0)
    human = rng.integers(1, 6, size=40).astype(float)
    good = np.clip(human + rng.integers(-1, 2, size=40), 1, 5).astype(float)
    systems = [f"s{i % 6}" for i in range(40)]
    body = correlate(human.tolist(), {"good": good.tolist()}, systems, [method], resamples=200, seed=0,
                     system_resampling="items")
    order = canonical_order(human, {"good": good})
    human, good = human[order], good[order]
    groups = drawn_groups(np.asarray(systems)[order], human, good)[1]
    dist = []
    for idx in stats.stratified_indices(groups, 6, 200, 0):
        h = [human[idx][groups == g].mean() for g in range(6)]
        m = [good[idx][groups == g].mean() for g in range(6)]
        dist.append(np.nan if np.ptp(h) == 0 or np.ptp(m) == 0 else SCIPY[method](m, h).statistic)
    expected = stats.percentile_interval(np.array(dist))
    assert body["metrics"]["good"]["system"][method]["ci"] == pytest.approx(expected, abs=1e-12)


def test_many_systems_need_no_items_times_systems_memory() -> None:
    # 30,000 items in 30,000 systems took a 6.7 GiB one-hot matrix (a 500 or an OOM-killed pod).
    tracemalloc = pytest.importorskip("tracemalloc")
    n = 3000
    human, metric = RNG.normal(size=n), RNG.normal(size=n)
    tracemalloc.start()
    try:
        body = correlate(human.tolist(), {"m": metric.tolist()}, [f"s{i // 2}" for i in range(n)], resamples=40)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    no_nan(body)
    count = n // 2  # two items a system, so resampling within systems varies
    assert body["systems"]["count"] == count and body["metrics"]["m"]["system"]["pearson"]["ci"] is not None
    assert peak < n * count * 8 / 2  # well under one dense items x systems float matrix (34 MiB here)


def test_systems_of_one_item_each_get_no_zero_width_interval() -> None:
    human, metric = RNG.normal(size=50), RNG.normal(size=50)
    body = correlate(human.tolist(), {"m": metric.tolist(), "k": human.tolist()}, [f"s{i}" for i in range(50)],
                     resamples=200, system_resampling="items")
    no_nan(body)
    for method in stats.METHODS:
        entry = body["metrics"]["m"]["system"][method]
        assert entry["r"] is not None and entry["ci"] is None and "single item" in entry["ci_reason"]
        assert entry["p"] is None and "single item" in entry["p_reason"]
        assert body["metrics"]["m"]["item"][method]["ci"] is not None  # the item level still resamples
    # Resampling the systems varies however few items each has.
    both = correlate(human.tolist(), {"m": metric.tolist()}, [f"s{i}" for i in range(50)], resamples=200)
    assert all(entry["ci"] is not None for entry in both["metrics"]["m"]["system"].values())


def test_api_example_spearman_p_is_exact_at_item_level_and_absent_without_a_system_bootstrap() -> None:
    body = correlate([3.0, 4.5, 1.0], {"adem": [2.9, 4.0, 1.7], "bleu4": [0.1, 0.0, 0.2]},
                     ["hred", "human", "tfidf"], resamples=1000)
    no_nan(body)
    for name, sign in (("adem", 1.0), ("bleu4", -1.0)):
        for level in ("item", "system"):
            entry = body["metrics"][name][level]
            assert entry["spearman"]["r"] == sign
            assert entry["spearman"]["ci"] is None and "too few items" in entry["spearman"]["ci_reason"]
        item = body["metrics"][name]["item"]
        assert item["spearman"]["p"] == pytest.approx(1 / 3)
        assert item["kendall"]["p"] == pytest.approx(item["spearman"]["p"])  # n = 3: both exact
        # The system level's p comes from its bootstrap, which three items cannot have.
        system = body["metrics"][name]["system"]["spearman"]
        assert system["p"] is None and "too few items" in system["p_reason"]


def test_correlate_is_scale_free_down_to_denormals() -> None:
    """A power-of-two rescaling first: 5e-324 x (1..10) gave r = .988 (the unscaled data: .939), and
    values near 1e-300 gave 'undefined' bootstrap intervals as sums of squares underflowed."""
    human, metric = list(range(1, 11)), [2, 1, 4, 3, 6, 5, 8, 7, 10, 9]
    plain = correlate(human, {"m": metric}, methods=["pearson"], resamples=100)["metrics"]["m"]["item"]["pearson"]
    for scale in (5e-324, 1e-300, 1e300):
        tiny = correlate([h * scale for h in human], {"m": [m * scale for m in metric]}, methods=["pearson"],
                         resamples=100)["metrics"]["m"]["item"]["pearson"]
        assert tiny["r"] == pytest.approx(plain["r"], abs=1e-12) and tiny["ci"] == pytest.approx(plain["ci"]), scale


def test_averages_do_not_depend_on_the_order_of_the_values() -> None:
    # Items 0, 1 and 5 average to .2 however their ratings are ordered, and the
    # systems' means to .2 whatever the order of their items; np.mean and bincount left them a
    # bit apart, which broke the ties Spearman's and Kendall's ranks see.
    nested = correlate([[.1, .2, .3], [.3, .2, .1], [.5, .5, .5], [.1, .1, .1], [.9, .8, .7], [.2, .1, .3]],
                       {"a": [1, 2, 3, 4, 5, 6]}, resamples=0)
    expected = sps.spearmanr([.2, .2, .5, .1, .8, .2], [1, 2, 3, 4, 5, 6]).statistic
    assert nested["metrics"]["a"]["item"]["spearman"]["r"] == pytest.approx(expected, abs=1e-12)
    metric, systems = [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4], list("AAABBBCCCDDD")
    in_order = correlate([.1, .2, .3, .1, .2, .3, .9, .9, .9, .5, .5, .5], {"m": metric}, systems=systems, resamples=0)
    reordered = correlate([.1, .2, .3, .3, .2, .1, .9, .9, .9, .5, .5, .5], {"m": metric}, systems=systems,
                          resamples=0)
    for method in ("spearman", "kendall"):
        assert (in_order["metrics"]["m"]["system"][method] == reordered["metrics"]["m"]["system"][method])
    assert in_order["metrics"]["m"]["system"]["spearman"]["r"] == pytest.approx(
        sps.spearmanr([.2, .2, .9, .5], [1, 2, 3, 4]).statistic, abs=1e-12)


def test_a_confidence_near_one_is_named_as_sent() -> None:
    body = correlate(list(range(10)), {"m": list(range(10))}, confidence=0.999999999, resamples=100)
    assert "0.999999999 interval" in body["metrics"]["m"]["item"]["pearson"]["ci_reason"]


def test_intervals_and_bootstrap_p_do_not_depend_on_the_order_of_the_rows() -> None:
    """The same rows sorted another way give the same answer, seed for seed: the bootstrap draws
    positions, so before canonical_order a shuffled file moved every interval."""
    rng = np.random.default_rng(3)
    human = rng.integers(1, 6, size=60).astype(float)  # ties in the humans, as ratings have
    scores = {"good": (human + rng.normal(size=60)).tolist(), "poor": rng.normal(size=60).tolist()}
    systems = [f"s{i % 5}" for i in range(60)]
    body = correlate(human.tolist(), scores, systems, resamples=300, seed=1)
    for permutation in (rng.permutation(60), np.arange(60)[::-1]):
        shuffled = correlate(human[permutation].tolist(), {k: np.asarray(v)[permutation].tolist()
                                                         for k, v in scores.items()},
                             [systems[i] for i in permutation], resamples=300, seed=1)
        assert shuffled == body


def test_the_readme_example_ranks_decimal_ties_among_system_means_as_ties() -> None:
    """docs/examples/correlate.json: m2's system means tie in decimal (.2 and .2), which one ulp
    once ranked apart (system-level Spearman -.211 where the tie gives -.447)."""
    from pathlib import Path

    example = json.loads((Path(__file__).resolve().parents[2] / "docs/examples/correlate.json").read_text())
    body = correlate(example["human"], example["scores"], example.get("systems"), ["spearman"], resamples=0)
    sums = {}
    for label, value in zip(example["systems"], example["scores"]["m2"]):
        sums.setdefault(label, []).append(value)
    means = {label: round(sum(v) / len(v), 12) for label, v in sums.items()}
    human = {}
    for label, value in zip(example["systems"], example["human"]):
        human.setdefault(label, []).append(value)
    labels = sorted(means)
    expected = sps.spearmanr([means[k] for k in labels], [np.mean(human[k]) for k in labels]).statistic
    assert body["metrics"]["m2"]["system"]["spearman"]["r"] == pytest.approx(expected, abs=1e-12)


def test_an_interval_from_a_few_defined_resamples_is_refused_not_given() -> None:
    """BLEU-4 at 0 on 9 of 10 items: a third of the resamples miss the one item that varies, so their
    correlation is undefined. Dropping them gave Spearman r .522 with the interval [.525, .880], which
    leaves out r. Now no interval, and the reason."""
    human = list(range(1, 11))
    body = correlate(human, {"bleu": [0.0] * 9 + [0.3], "length": [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]}, seed=0)
    for method in ("pearson", "spearman", "kendall"):
        entry = body["metrics"]["bleu"]["item"][method]
        assert entry["r"] is not None and entry["ci"] is None
        assert "undefined in more than 5% of the bootstrap resamples" in entry["ci_reason"]
        assert body["metrics"]["length"]["item"][method]["ci"] is not None  # the other metric keeps its own
    paired = [c for c in body["comparisons"] if c["test"] == "paired_bootstrap"]
    assert paired and all(c["p"] is None and c["ci"] is None and "5%" in c["reason"] for c in paired)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=10_000))
def test_a_given_interval_holds_its_estimate_on_mostly_zero_metrics(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 21))
    metric = np.where(rng.random(n) < 0.9, 0.0, rng.random(n)).tolist()
    human = (rng.permutation(n) + 1.0).tolist()
    body = correlate(human, {"m": metric}, methods=["spearman", "kendall"], resamples=400, seed=seed)
    for entry in body["metrics"]["m"]["item"].values():
        if entry["ci"] is not None:
            assert entry["ci"][0] - 1e-9 <= entry["r"] <= entry["ci"][1] + 1e-9


def test_a_comparisons_p_agrees_with_its_interval_where_deltas_meet_their_bound() -> None:
    """Five systems, one metric following the humans and one against them: the system level's Spearman
    deltas pile up against 2. A p below .05 comes with an interval that excludes 0 (the null-shifted
    count lost its upper tail there: p .03 beside [0.0, 1.9] in a third of these runs)."""
    rng = np.random.default_rng(0)
    level, systems = np.repeat(np.arange(5.0), 8), [f"s{i}" for i in range(5) for _ in range(8)]
    checked = 0
    for _ in range(60):
        human, a, b = (level * slope + rng.normal(scale=1.5, size=40) for slope in (1.0, 1.0, -0.5))
        body = correlate(human.tolist(), {"a": a.tolist(), "b": b.tolist()}, systems, methods=["spearman"],
                         resamples=500, seed=1)
        for comparison in body["comparisons"]:
            if comparison["test"] == "paired_bootstrap" and comparison["p"] is not None:
                low, high = comparison["ci"]
                assert comparison["p"] >= 0.05 or low > 0 or high < 0, comparison
                checked += 1
    assert checked == 120

def test_every_monte_carlo_p_comes_with_its_standard_error() -> None:
    """Bootstrap p (system level, paired comparisons) and sampled-permutation p (tied ranks, 10 to 50 items):
    p_mc_se is the binomial standard error of the share of draws they count; exact and scipy p have none."""
    human = np.repeat(np.arange(1.0, 6.0), 6)  # 30 items with ties: Monte Carlo permutation p
    good = human + RNG.normal(scale=1.0, size=30)
    body = correlate(human.tolist(), {"good": good.tolist(), "poor": RNG.normal(size=30).tolist()},
                     [f"s{i // 5}" for i in range(30)], resamples=400, seed=2)
    for method, entry in body["metrics"]["poor"]["item"].items():
        assert ("p_mc_se" in entry) == (method != "pearson")
        if method != "pearson":
            assert entry["p_mc_se"] == pytest.approx(2 * sps.binom.std(9_999, entry["p"] / 2) / 9_999)
    # beyond what 9,999 pairings resolve, p is their floor, with no Monte Carlo error
    assert body["metrics"]["good"]["item"]["spearman"]["p"] == 2 / 10_000
    assert body["metrics"]["good"]["item"]["spearman"]["p_at_floor"]
    assert "p_mc_se" not in body["metrics"]["good"]["item"]["spearman"]
    for name in ("good", "poor"):
        for entry in body["metrics"][name]["system"].values():
            assert entry["p_mc_se"] == pytest.approx(2 * sps.binom.std(400, entry["p"] / 2) / 400)
    for comparison in body["comparisons"]:
        if comparison["test"] == "paired_bootstrap":
            assert comparison["p_mc_se"] == pytest.approx(2 * sps.binom.std(400, comparison["p"] / 2) / 400)
        else:
            assert "p_mc_se" not in comparison
    untied = correlate(HUMAN[:9].tolist(), {"good": GOOD[:9].tolist()}, resamples=0)  # exact p
    assert all("p_mc_se" not in entry for entry in untied["metrics"]["good"]["item"].values())


# A reason's list of the systems left without items: which of those tied in count it names (at most
# three, ties in the labels' order) follows their names, the counts do not.
WITHOUT_ITEMS = re.compile(r"(and so no mean: )(.*?)((?: and others)?)(?=; name as|\")")


def _named_alike(body: dict, names: list[int]) -> str:
    """The body as JSON with system k's name, `system {names[k]}`, written as `#k` (reasons name systems),
    and each list of systems without items as its sorted counts."""
    text = json.dumps({key: value for key, value in body.items() if key != "systems"})
    for k, name in enumerate(names):
        text = text.replace(f"'system {name}'", f"#{k}")
    return WITHOUT_ITEMS.sub(lambda m: m[1] + "; ".join(sorted(re.sub(r"^#\d+ ", "", part) for part in m[2].split("; ")))
                             + m[3], text)


@settings(max_examples=60, deadline=None)
@given(
    items=st.lists(st.tuples(st.integers(1, 5), st.integers(0, 6), st.integers(0, 4), st.integers(0, 3)),
                   min_size=10, max_size=30),
    renaming=st.permutations(range(5)),
    design=st.sampled_from(stats.DESIGNS),
    by_inputs=st.booleans(),
    seed=st.integers(0, 3),
)
def test_renaming_systems_or_inputs_leaves_every_figure_as_it_was(items, renaming, design, by_inputs, seed) -> None:
    """The draws pick systems (and inputs) by id; ids follow what the systems hold, so any names give the
    same intervals and p for a seed."""
    human, metric, system, given_input = (list(column) for column in zip(*items))
    scores = {"m": [float(v) for v in metric], "n": [float((v * 3) % 5) for v in human]}

    def run(names: list[int]) -> dict:
        return correlate([float(h) for h in human], scores, [f"system {names[s]}" for s in system],
                         resamples=40, seed=seed, confidence=0.9, system_resampling=design,
                         inputs=[f"input {names[i]}" for i in given_input] if by_inputs else None)

    before, after = run(list(range(5))), run(renaming)
    assert _named_alike(after, renaming) == _named_alike(before, list(range(5)))
    assert sorted(after["systems"]["labels"]) == sorted(f"system {renaming[s]}" for s in set(system))


@pytest.mark.parametrize("trial", range(6))
def test_inputs_that_hold_the_same_rows_are_interchangeable_under_renaming(trial: int) -> None:
    """Two inputs with the same rows, spread over the systems differently, share one place in the draws'
    order: placed by their labels, swapping their names moved the intervals (the property test above
    seldom draws two inputs alike)."""
    rng = np.random.default_rng(trial)
    rows = [(int(rng.integers(1, 6)), int(rng.integers(0, 7))) for _ in range(4)]
    spread = [rows[k] for k in rng.permutation(4)]
    items = [(s, i, *row) for s in range(4)
             for i, row in ((0, rows[s]), (1, spread[s]), (2, (int(rng.integers(1, 6)), int(rng.integers(0, 7)))))]
    human = [float(item[2]) for item in items]
    scores = {"m": [float(item[3]) for item in items], "n": [float(item[2] * 3 % 5) for item in items]}
    for design in ("items", "both"):
        def run(names: list[int]) -> dict:
            return correlate(human, scores, [f"s{item[0]}" for item in items], resamples=40, seed=trial % 4,
                             confidence=0.9, system_resampling=design, inputs=[f"in{names[item[1]]}" for item in items])

        assert run([1, 0, 2])["metrics"] == run([0, 1, 2])["metrics"], design


def test_adding_systems_leaves_the_item_level_as_it_was() -> None:
    """The same human scores and metric gave another item-level interval once
    `systems` was added, because the draws were made in an order sorted by system first."""
    systems = [f"s{i % 5}" for i in range(40)]
    alone = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, None, list(stats.METHODS), resamples=200, seed=3)
    with_systems = correlate(HUMAN.tolist(), {"good": GOOD.tolist()}, systems, list(stats.METHODS), resamples=200,
                             seed=3)
    assert with_systems["metrics"]["good"]["item"] == alone["metrics"]["good"]["item"]
    assert "system" in with_systems["metrics"]["good"]


def test_the_interval_follows_the_requested_confidence() -> None:
    """Same seed and resamples: the 50% interval sits inside the 95% one, at well under half its width."""
    wide = correlate(list(HUMAN), {"good": list(GOOD)}, methods=["pearson"], confidence=0.95, resamples=2000)
    narrow = correlate(list(HUMAN), {"good": list(GOOD)}, methods=["pearson"], confidence=0.5, resamples=2000)
    lo95, hi95 = wide["metrics"]["good"]["item"]["pearson"]["ci"]
    lo50, hi50 = narrow["metrics"]["good"]["item"]["pearson"]["ci"]
    assert lo95 < lo50 and hi50 < hi95
    assert hi50 - lo50 < 0.5 * (hi95 - lo95)


def test_williams_t_has_the_sign_of_delta_and_matches_the_formula() -> None:
    """p is symmetric in the two metrics, t is not: a swapped call would keep p and flip t."""
    n = len(HUMAN)
    body = correlate(list(HUMAN), {"good": list(GOOD), "poor": list(POOR)}, methods=["pearson"], resamples=0)
    (entry,) = [c for c in body["comparisons"] if c["test"] == "williams" and c["level"] == "item"]
    assert (entry["a"], entry["b"]) == ("good", "poor") and entry["delta"] > 0
    r12 = correlation(GOOD, HUMAN)["r"]
    r13 = correlation(POOR, HUMAN)["r"]
    r23 = correlation(GOOD, POOR)["r"]
    expected = williams_test(r12, r13, r23, n)
    assert entry["t"] > 0
    assert entry["t"] == pytest.approx(expected["t"], rel=1e-9) and entry["df"] == n - 3


def test_comparisons_carry_holm_adjusted_p_over_the_pairs_of_their_level_method_and_test() -> None:
    human = np.arange(20.0)
    metrics = {name: (human + RNG.normal(scale=scale, size=20)).tolist()
               for name, scale in (("a", 1.0), ("b", 4.0), ("c", 8.0), ("d", 16.0))}
    body = correlate(human.tolist(), metrics, methods=["pearson", "spearman"], resamples=300, seed=3)
    family = [c for c in body["comparisons"] if (c["level"], c["method"], c["test"]) == ("item", "spearman",
                                                                                           "paired_bootstrap")]
    assert len(family) == 6 and all(c["holm_family"] == 6 for c in family)  # 4 metrics: 6 pairs
    assert [c["p_holm"] for c in family] == pytest.approx(holm([c["p"] for c in family]).tolist())
    assert all(c["p_holm"] >= c["p"] for c in body["comparisons"] if c["p"] is not None)
    williams = [c for c in body["comparisons"] if c["test"] == "williams"]
    assert williams and all(c["holm_family"] == 6 for c in williams)


def test_alphas_drawn_a_chunk_at_a_time_are_the_whole_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Alpha's resamples are drawn a few rows at a time (its memory beside the item level's draws); the
    rows are those of one draw of the whole matrix with the request's seed."""
    import importlib

    module = importlib.import_module("service.stats.correlate")
    ratings = [[h + d for d in RNG.normal(scale=0.7, size=3)] for h in HUMAN.tolist()]
    whole = correlate(ratings, {"good": GOOD.tolist()}, resamples=300, seed=4)["agreement"]
    monkeypatch.setattr(module, "_ALPHA_CHUNK_CELLS", 40 * 7)  # 7 rows a chunk, the last one shorter
    assert correlate(ratings, {"good": GOOD.tolist()}, resamples=300, seed=4)["agreement"] == whole
    monkeypatch.setattr(module, "_ALPHA_CHUNK_CELLS", 1)  # less than a row: a row at a time
    assert correlate(ratings, {"good": GOOD.tolist()}, resamples=300, seed=4)["agreement"] == whole
