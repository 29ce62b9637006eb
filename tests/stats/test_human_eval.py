"""service.stats.human_eval: Ji et al. 2022's procedure, checked against scipy and against the paper's data."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from service.stats.human_eval import QC_TEST, HumanEvalInputError, assess

RNG = np.random.default_rng(7)
SYSTEMS = {"good": 70.0, "fair": 50.0, "degraded": 15.0}


def synthetic(careful: int = 3, careless: int = 2, items: int = 4) -> list[dict]:
    """Careful raters see the degraded system as bad; careless ones score at random."""
    ratings = []
    for r in range(careful + careless):
        rater = f"{'careful' if r < careful else 'careless'}{r}"
        for system, level in SYSTEMS.items():
            for i in range(items):
                if r < careful:
                    fun, robotic = level + RNG.normal(0, 8), 100 - level + RNG.normal(0, 8)
                else:
                    fun, robotic = RNG.uniform(0, 100), RNG.uniform(0, 100)
                ratings.append({"rater": rater, "system": system, "item": f"{rater}-{system}-{i}",
                                "scores": {"fun": float(np.clip(fun, 0, 100)),
                                           "robotic": float(np.clip(robotic, 0, 100))}})
    return ratings


def test_quality_control_standardisation_and_ranking_follow_the_definitions() -> None:
    ratings = synthetic()
    body = assess(ratings, reverse=["robotic"], qc_system="degraded")
    json.dumps(body, allow_nan=False)
    raters = body["raters"]
    assert set(raters["passed"]) >= {"careful0", "careful1", "careful2"}
    for rater, p in raters["p"].items():
        mine = [r for r in ratings if r["rater"] == rater]
        qc = [r["scores"]["fun"] for r in mine if r["system"] == "degraded"]  # robotic is reversed: not pooled
        ordinary = [r["scores"]["fun"] for r in mine if r["system"] != "degraded"]
        assert p == pytest.approx(sps.mannwhitneyu(qc, ordinary, alternative="less").pvalue)
        assert (rater in raters["passed"]) == (p < 0.05)

    # z: each rater's reversed scores standardised with their own mean and sample sd.
    z_by_item = {}
    for rater in {r["rater"] for r in ratings}:
        mine = [r for r in ratings if r["rater"] == rater]
        values = np.array([[r["scores"]["fun"], 100 - r["scores"]["robotic"]] for r in mine])
        z = (values - values.mean()) / values.std(ddof=1)
        z_by_item.update({r["item"]: row for r, row in zip(mine, z)})
    kept = [r for r in ratings if r["rater"] in raters["passed"] and r["system"] != "degraded"]
    assert [s["system"] for s in body["systems"]] == ["good", "fair"]  # best first, no QC system
    for entry in body["systems"]:
        rows = [r for r in kept if r["system"] == entry["system"]]
        zs = np.array([z_by_item[r["item"]] for r in rows])
        assert entry["n"] == len(rows)
        assert entry["overall_z"] == pytest.approx(zs.mean())
        assert entry["z"]["robotic"] == pytest.approx(zs[:, 1].mean())
        assert entry["raw"]["robotic"] == pytest.approx(np.mean([100 - r["scores"]["robotic"] for r in rows]))
        lo, hi = entry["overall_z_ci"]
        assert lo < entry["overall_z"] < hi

    good = [z_by_item[r["item"]].mean() for r in kept if r["system"] == "good"]
    fair = [z_by_item[r["item"]].mean() for r in kept if r["system"] == "fair"]
    assert body["significance"]["good"]["fair"] == pytest.approx(
        sps.mannwhitneyu(good, fair, alternative="greater").pvalue)
    assert body["significance"]["fair"]["good"] == pytest.approx(
        sps.mannwhitneyu(fair, good, alternative="greater").pvalue)
    assert "good" not in body["significance"]["good"]


def test_without_a_quality_control_system_everyone_passes() -> None:
    body = assess(synthetic(), reverse=["robotic"])
    assert body["raters"]["failed"] == [] and body["raters"]["p"] == {}
    assert {s["system"] for s in body["systems"]} == set(SYSTEMS)


def test_two_unicode_spellings_of_a_label_are_one_rater_system_and_item() -> None:
    """A rater named "café" composed and decomposed counted as two raters, each rating the item once."""
    ratings = [{"rater": "caf\u00e9", "system": "good", "item": "1", "scores": {"fun": 50}},
               {"rater": "cafe\u0301", "system": "good", "item": "1", "scores": {"fun": 40}}]
    with pytest.raises(HumanEvalInputError, match="already rated item"):
        assess(ratings)
    ratings[1]["item"] = "2"
    ratings += [{"rater": "caf\u00e9", "system": "b\u00e1d", "item": f"q{i}", "scores": {"fun": 5 + i}} for i in range(3)]
    body = assess(ratings, qc_system="ba\u0301d")  # the quality-control system in the other spelling
    assert body["raters"]["passed"] + body["raters"]["failed"] == ["caf\u00e9"]
    assert body["raters"]["p"]["caf\u00e9"] is not None  # its quality-control ratings were found


def test_a_rater_who_never_varies_fails_without_nan() -> None:
    ratings = synthetic(careful=2, careless=0)
    ratings += [{"rater": "flat", "system": s, "item": f"flat-{s}", "scores": {"fun": 50, "robotic": 50}}
                for s in SYSTEMS]
    body = assess(ratings, reverse=["robotic"], qc_system="degraded")
    json.dumps(body, allow_nan=False)
    assert "flat" in body["raters"]["failed"] and body["raters"]["p"]["flat"] is None
    assert body["raters"]["constant"] == ["flat"] and "same score" in body["raters"]["reasons"]["flat"]


def test_a_rater_without_quality_control_ratings_fails_with_a_reason() -> None:
    ratings = synthetic(careful=2, careless=0)
    ratings.append({"rater": "new", "system": "good", "item": "n1", "scores": {"fun": 80, "robotic": 10}})
    ratings.append({"rater": "new", "system": "fair", "item": "n2", "scores": {"fun": 40, "robotic": 30}})
    body = assess(ratings, reverse=["robotic"], qc_system="degraded")
    assert "new" in body["raters"]["failed"] and "no quality-control" in body["raters"]["reasons"]["new"]


def test_reversing_an_unused_criterion_changes_nothing_but_a_warning() -> None:
    """API.md's own example reverses "repetitive" beside ratings that lack it: answered, with a
    warning naming it, since a misspelt negative criterion would be left unreversed."""
    ratings = synthetic(careful=2, careless=0, items=2)
    plain = assess(ratings, reverse=["robotic"])
    extra = assess(ratings, reverse=["robotic", "repetitive", "repetitive"])
    warnings = extra.pop("warnings")
    assert extra == plain and "warnings" not in plain
    assert len(warnings) == 1 and "'repetitive'" in warnings[0] and "fun, robotic" in warnings[0]


def test_the_response_names_the_criteria_it_reversed() -> None:
    """A misspelt `reverse` entry is not an error (above), so the response shows what was reversed."""
    ratings = synthetic(careful=2, careless=0, items=2)
    assert assess(ratings, reverse=["robotic", "repetitive"])["reversed"] == ["robotic"]
    assert assess(ratings, reverse=["robotc"])["reversed"] == []


@pytest.mark.parametrize(
    ("change", "kwargs", "field"),
    [
        (lambda r: r[0]["scores"].update(fun=101), {}, "ratings.0.scores.fun"),
        (lambda r: r[1]["scores"].pop("robotic"), {}, "ratings.1.scores"),
        # the first rating scoring other criteria than the rest: it is named, not every other one
        (lambda r: r[0]["scores"].pop("robotic"), {}, "ratings.0.scores"),
        (lambda r: r[2]["scores"].update(fun=float("nan")), {}, "ratings.2.scores.fun"),
        (lambda r: r[2].update(rater=""), {}, "ratings.2.rater"),
        (lambda r: None, {"scale": (100, 0)}, "scale"),
        (lambda r: None, {"alpha": 1.5}, "alpha"),
        (lambda r: None, {"qc_criteria": ["boring"]}, "qc_criteria"),
        # A rating sent twice would count twice: it turned a failing rater into a passing one.
        (lambda r: r.append(dict(r[0])), {}, f"ratings.{3}.item"),
        (lambda r: r[1].update(item=r[0]["item"]), {}, "ratings.1.item"),  # one item under two systems
    ],
)
def test_bad_input_names_the_field(change, kwargs, field) -> None:
    ratings = synthetic(careful=1, careless=0, items=1)
    change(ratings)
    with pytest.raises(HumanEvalInputError) as caught:
        assess(ratings, **kwargs)
    assert field in caught.value.fields
    if field.endswith(".scores"):
        assert list(caught.value.fields) == [field]


def test_reproduces_ji_et_al_free_run_1(data_dir: Path) -> None:
    from service.analysis.importers import ji2022_csv, ji2022_json

    ji = data_dir / "human_eval" / "ji2022"
    data = ji2022_csv(ji / "raw_mturk_csv" / "FreeTopicRound1" / "Combined_Batches_305hits.csv")
    upstream = ji2022_json([ji / "dialogue_data"]).upstream
    body = assess(data.ratings, data.reverse, data.scale, data.qc_system, qc_criteria=data.qc_criteria)
    assert len(body["raters"]["passed"]) == 173  # the paper's Table 1
    assert body["kept_ratings"] == 1075
    assert set(body["raters"]["passed"]) == set(upstream["passed"])
    order = [s["system"] for s in body["systems"]]
    assert order[0] == "A" and order[-1] == "E"  # the paper's Table 3
    assert body["systems"][0]["overall_z"] == pytest.approx(0.534, abs=5e-4)
    assert body["systems"][-1]["overall_z"] == pytest.approx(-0.243, abs=5e-4)
    # Table 3's N: ratings, dialogues x 7 criteria (A: 114 dialogues, N = 798)
    paper_n = {"A": 798, "B": 798, "A_p": 707, "C": 791, "C_p": 714, "B_p": 707, "D": 707, "D_p": 798,
               "E_p": 763, "E": 742}
    assert {s["system"]: s["n_ratings"] for s in body["systems"]} == paper_n
    assert body["quality_control"]["alpha"] == 0.05 and body["quality_control"]["qc_system"] == data.qc_system
    assert body["reversed"] == ["robotic", "repetitive"]
    # docs/human-eval.md's reading of the pairwise tests: 36 of the 90 ordered pairs below .05 uncorrected,
    # 29 after Holm over all 90; A > B (.047) and D over the bottom three do not survive it.
    raw, holm = body["significance"], body["significance_holm"]
    assert body["significance_tests"]["family"] == 90
    assert sum(p < 0.05 for row in raw.values() for p in row.values()) == 36
    assert sum(p < 0.05 for row in holm.values() for p in row.values()) == 29
    assert raw["A"]["B"] == pytest.approx(0.0465, abs=5e-5) and holm["A"]["B"] == 1.0
    assert all(raw["D"][b] < 0.05 <= holm["D"][b] for b in ("D_p", "E_p", "E"))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["w1", "w2", "w3"]), st.sampled_from(["A", "B", "qc"]),
                          st.integers(0, 100), st.integers(0, 100)), min_size=2, max_size=30))
def test_any_valid_ratings_give_finite_json(rows) -> None:
    ratings = [{"rater": r, "system": s, "item": f"i{k}", "scores": {"fun": f, "dull": d}}
               for k, (r, s, f, d) in enumerate(rows)]
    qc = "qc" if any(s == "qc" for _, s, _, _ in rows) else None
    body = assess(ratings, reverse=["dull"], qc_system=qc)
    json.dumps(body, allow_nan=False)
    assert sorted(body["raters"]["passed"] + body["raters"]["failed"]) == sorted({r for r, *_ in rows})
    for p in body["raters"]["p"].values():
        assert p is None or 0.0 <= p <= 1.0
    assert [s["overall_z"] for s in body["systems"]] == sorted((s["overall_z"] for s in body["systems"]), reverse=True)


def test_ratings_with_equal_score_sums_tie_exactly_in_the_significance_test() -> None:
    # One rater, A's three ratings all sum to 225. Averaged z-scores left the third
    # a bit off the other two, which broke their tie and moved the rank-sum p (.082 instead of .098).
    rows = {"A": [(51, 76, 95, 3), (3, 51, 76, 95), (95, 3, 51, 76)],
            "B": [(14, 83, 95, 25), (31, 87, 42, 27), (76, 51, 95, 3)]}
    ratings = [{"rater": "w1", "system": system, "item": f"{system}{i}", "scores": dict(zip("xyuv", values))}
               for system, scores in rows.items() for i, values in enumerate(scores)]
    result = assess(ratings)
    means = {system: [np.mean(v) for v in scores] for system, scores in rows.items()}
    expected = sps.mannwhitneyu(means["A"], means["B"], alternative="greater").pvalue
    assert result["significance"]["A"]["B"] == pytest.approx(expected, abs=1e-12)


def test_many_raters_are_grouped_in_one_pass() -> None:
    from service.stats.human_eval import rows_by

    labels = np.array(["b", "a", "b", "c", "a"], dtype=object)
    groups = rows_by(labels)
    assert list(groups) == ["b", "a", "c"]  # order of first appearance, as the response lists raters
    assert [g.tolist() for g in groups.values()] == [[0, 2], [1, 4], [3]]


def test_labels_that_differ_only_by_a_trailing_nul_are_different_systems_and_raters() -> None:
    """System "T\\u0000" took the rows of "T" (numpy's fixed-width strings drop trailing NULs):
    its own rating was lost, and a system with no other match was a 500 from the mean of no rows."""
    ratings = [{"rater": "w1", "system": "T\u0000", "item": "1", "scores": {"x": 10}},
               {"rater": "w1", "system": "T", "item": "2", "scores": {"x": 90}},
               {"rater": "w1", "system": "U", "item": "3", "scores": {"x": 50}}]
    body = assess(ratings)
    json.dumps(body, allow_nan=False)
    by_name = {s["system"]: s for s in body["systems"]}
    assert by_name["T\u0000"]["raw"]["x"] == 10.0 and by_name["T"]["raw"]["x"] == 90.0
    assert [by_name[s]["n"] for s in ("T\u0000", "T", "U")] == [1, 1, 1]
    alone = assess([{"rater": "w1", "system": "S\u0000", "item": "1", "scores": {"x": 10}},
                    {"rater": "w1", "system": "T", "item": "2", "scores": {"x": 90}}])
    assert {s["system"]: s["n"] for s in alone["systems"]} == {"S\u0000": 1, "T": 1}
    # the quality-control system and rater names are compared the same way
    qc = synthetic(careful=2, careless=0)
    qc += [dict(r, rater=r["rater"] + "\u0000", item=r["item"] + "b") for r in qc if r["rater"] == "careful0"]
    qc += [dict(r, system="degraded\u0000", item=r["item"] + "q") for r in qc if r["system"] == "degraded"][:2]
    body = assess(qc, reverse=["robotic"], qc_system="degraded")
    assert "careful0\u0000" in body["raters"]["p"] and "degraded\u0000" in {s["system"] for s in body["systems"]}


def test_the_exact_rank_sum_null_is_used_only_where_it_is_cheap() -> None:
    """scipy's exact null for 8 values against 16,300 cost 3 s a test: a /human-eval request within
    the limits took 406 s. Small against small stays exact (scipy's auto); beyond
    EXACT_MAX_PAIRS pairs it is the normal approximation, close to the exact p there."""
    from service.stats.human_eval import EXACT_MAX_PAIRS, rank_sum_p

    rng = np.random.default_rng(3)
    small, mid, big = rng.normal(size=8), rng.normal(size=EXACT_MAX_PAIRS // 8), rng.normal(size=4000)
    assert rank_sum_p(small, mid, "greater") == sps.mannwhitneyu(small, mid, alternative="greater",
                                                                 method="exact").pvalue
    asymptotic = sps.mannwhitneyu(small, big, alternative="greater", method="asymptotic").pvalue
    assert rank_sum_p(small, big, "greater") == asymptotic
    assert asymptotic == pytest.approx(sps.mannwhitneyu(small, big, alternative="greater", method="exact").pvalue,
                                       abs=0.01)


def test_the_significance_matrix_keeps_the_systems_order_whatever_order_it_tests_in() -> None:
    samples = {"b": np.arange(5.0), "a": np.arange(3.0, 40.0), "c": np.arange(2.0, 9.0) + 0.5}
    from service.stats.human_eval import significance_matrix

    matrix = significance_matrix(samples)
    assert list(matrix) == ["b", "a", "c"] and list(matrix["a"]) == ["b", "c"]
    for a, row in matrix.items():
        for b, p in row.items():
            assert p == sps.mannwhitneyu(samples[a], samples[b], alternative="greater").pvalue


# Holm (1979) step-down by hand: sorted .005 .01 .03 .04 times 4, 3, 2, 1 -> .02 .03 .06 .04, each at least
# the one before (.04 -> .06), capped at 1; and a tie, whose order does not matter.
@pytest.mark.parametrize(("raw", "adjusted"), [
    ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02]),
    ([0.2, 0.5, 0.9], [0.6, 1.0, 1.0]),
    ([0.02, 0.02, 0.5], [0.06, 0.06, 0.5]),
    ([], []),
])
def test_holm_adjusts_step_down(raw: list[float], adjusted: list[float]) -> None:
    from service.stats.human_eval import holm

    assert holm(raw).tolist() == pytest.approx(adjusted)


def test_the_answer_gives_each_pairwise_p_uncorrected_and_holm_adjusted_over_every_ordered_pair() -> None:
    from service.stats.human_eval import holm

    body = assess(synthetic(), reverse=["robotic"], qc_system="degraded")
    raw, adjusted = body["significance"], body["significance_holm"]
    cells = [(a, b) for a in raw for b in raw[a]]
    assert len(cells) == 2 and body["significance_tests"]["family"] == 2  # k(k - 1) for k = 2 systems
    assert [adjusted[a][b] for a, b in cells] == pytest.approx(holm([raw[a][b] for a, b in cells]).tolist())
    assert "not adjusted" in body["significance_tests"]["significance"]
    assert body["significance_tests"]["significance_holm"].startswith("Holm-adjusted over every ordered pair")


def test_a_quality_control_system_no_rating_holds_fails_every_rater_with_a_warning() -> None:
    """API.md's own example names qc_system "degraded" beside one rating of system A: it is answered
    (was a 422), every rater failing quality control for having rated no quality-control dialogue,
    and `warnings` says why no system is ranked, so a misspelt name is not silently ignored."""
    ratings = synthetic(careful=2, careless=0, items=2)
    body = assess(ratings, reverse=["robotic"], qc_system="degradd")
    assert body["raters"]["passed"] == [] and sorted(body["raters"]["failed"]) == sorted(body["raters"]["p"])
    assert set(body["raters"]["reasons"].values()) == {"rated no quality-control dialogue"}
    assert body["systems"] == [] and body["significance"] == {} and body["kept_ratings"] == 0
    assert len(body["warnings"]) == 1 and "'degradd'" in body["warnings"][0]
    # two quality-control dialogues against four can never reach p < .05 (1/15 at best): four against eight
    passing = synthetic(careful=2, careless=0, items=4)
    assert "warnings" not in assess(passing, reverse=["robotic"], qc_system="degraded")


def _ratings_on_1_to_5() -> list[dict]:
    rng = np.random.default_rng(3)
    out = []
    for rater in ("r1", "r2", "r3"):
        for system, level in (("A", 4.0), ("B", 2.5)):
            for i in range(4):
                out.append({"rater": rater, "system": system, "item": f"{system}{i}",
                            "scores": {"fluent": float(np.clip(round(level + rng.normal(0, .7)), 1, 5)),
                                       "repetitive": float(np.clip(round(6 - level + rng.normal(0, .7)), 1, 5))}})
    return out


def test_reversal_on_a_scale_that_does_not_start_at_zero() -> None:
    """A reversed criterion is lo + hi - x (Ji et al.); hi - x agrees with it only on [0, hi]."""
    ratings = _ratings_on_1_to_5()
    body = assess(ratings, reverse=["repetitive"], scale=(1, 5))
    for entry in body["systems"]:
        raw = [r["scores"]["repetitive"] for r in ratings if r["system"] == entry["system"]]
        assert entry["raw"]["repetitive"] == pytest.approx(np.mean([6 - v for v in raw]))


def _per_rating_z(ratings: list[dict], system: str) -> np.ndarray:
    """A system's per-rating mean z on _ratings_on_1_to_5 (repetitive reversed): each rater's mean and
    sample sd over all their oriented scores."""
    z = {}
    for rater in {r["rater"] for r in ratings}:
        mine = [r for r in ratings if r["rater"] == rater]
        values = np.array([[r["scores"]["fluent"], 6 - r["scores"]["repetitive"]] for r in mine])
        z.update({(rater, r["item"]): (row.mean() - values.mean()) / values.std(ddof=1)
                  for r, row in zip(mine, values)})
    return np.array([z[r["rater"], r["item"]] for r in ratings if r["system"] == system])


def test_overall_z_interval_is_students_t_on_n_minus_one_df() -> None:
    """Each rater's z uses their mean and sample sd over all their oriented scores; a system's
    interval is Student's t on its per-rating mean z with n - 1 degrees of freedom."""
    ratings = _ratings_on_1_to_5()
    body = assess(ratings, reverse=["repetitive"], scale=(1, 5))
    for entry in body["systems"]:
        sample = _per_rating_z(ratings, entry["system"])
        expected = sps.t.interval(0.95, sample.size - 1, loc=sample.mean(), scale=sps.sem(sample))
        assert entry["overall_z_ci"] == pytest.approx(list(expected), rel=1e-9)


@pytest.mark.parametrize("alpha", [0.05, 0.2, 0.5])
def test_overall_z_interval_is_95_percent_whatever_the_quality_control_alpha(alpha) -> None:
    """`alpha` is the raters' pass threshold; it must not set the width of the systems' intervals."""
    ratings = _ratings_on_1_to_5()
    body = assess(ratings, reverse=["repetitive"], scale=(1, 5), alpha=alpha)
    for entry in body["systems"]:
        lo, hi = entry["overall_z_ci"]
        half = sps.t.ppf(0.975, entry["n"] - 1) * sps.sem(_per_rating_z(ratings, entry["system"]))
        assert hi - lo == pytest.approx(2 * half, rel=1e-9)
    assert body["intervals"]["of"] == "overall_z_ci" and body["intervals"]["confidence"] == 0.95
    assert body["intervals"]["method"].startswith("Student-t")
    assert body["intervals"]["resampled"].startswith("nothing: ")  # a t interval draws nothing; it says so
    assert all("overall_z_ci_reason" not in entry for entry in body["systems"])


def test_a_system_without_an_interval_says_why() -> None:
    """A system with one dialogue, or whose dialogues' z are all equal, had `overall_z_ci` null and no word of
    why; the report and plot showed a bare point, as if exact."""
    ratings = [{"rater": "r1", "system": "A", "item": f"a{i}", "scores": {"fun": 60 + 7 * i}} for i in range(3)]
    ratings += [{"rater": "r1", "system": "lone", "item": "l0", "scores": {"fun": 50}}]
    ratings += [{"rater": "r2", "system": "flat", "item": f"f{i}", "scores": {"fun": 40}} for i in range(2)]
    ratings += [{"rater": "r2", "system": "A", "item": f"b{i}", "scores": {"fun": 30 + i}} for i in range(2)]
    systems = {s["system"]: s for s in assess(ratings)["systems"]}
    assert systems["lone"]["overall_z_ci"] is None and systems["lone"]["n"] == 1
    assert systems["lone"]["overall_z_ci_reason"] == "one dialogue (a t interval needs two)"
    assert systems["flat"]["overall_z_ci"] is None
    assert systems["flat"]["overall_z_ci_reason"] == "its 2 dialogues' z are all equal (no spread)"
    assert systems["A"]["overall_z_ci"] is not None and "overall_z_ci_reason" not in systems["A"]


def test_the_body_names_its_quality_control_test_and_counts_n_as_the_paper() -> None:
    ratings = [{"rater": rater, "system": system, "item": f"{rater}-{system}-{i}",
                "scores": {"fun": base + 5 * i, "robotic": 100 - base - 3 * i, "fluent": base}}
               for rater in ("r1", "r2") for system, base in (("A", 70), ("B", 45), ("qc", 10)) for i in range(3)]
    body = assess(ratings, reverse=["robotic"], qc_system="qc", alpha=0.1)
    assert body["quality_control"] == {"test": QC_TEST, "qc_system": "qc", "criteria": ["fun", "fluent"],
                                       "alpha": 0.1, "passes": "p < alpha"}
    assert all(s["n_ratings"] == 3 * s["n"] for s in body["systems"]) and body["systems"][0]["n"] == 6
    assert assess(ratings, reverse=["robotic"])["quality_control"] is None


@pytest.mark.parametrize("label", ["   ", "\u200b"])
def test_a_blank_system_or_rater_is_refused(label):
    """Not ranked as a system (or a rater) named by nothing a person can read."""
    ratings = [{"rater": r, "system": s, "item": f"{r}{s}", "scores": {"x": 50.0}} for r in ("a", "b") for s in "AB"]
    for key in ("system", "rater"):
        changed = [dict(r) for r in ratings]
        changed[1][key] = label
        with pytest.raises(HumanEvalInputError) as caught:
            assess(changed)
        assert caught.value.fields == {f"ratings.1.{key}": f"Must name the {key} (not blank)."}


def test_a_rater_whose_quality_control_p_equals_alpha_fails_and_one_below_passes() -> None:
    """The pass rule is p < alpha: an exact rank-sum p lands on alpha itself (3 against 3: 1/20)."""
    ratings = [{"rater": rater, "system": system, "item": f"{rater}-{i}", "scores": {"fun": score}}
               for rater, pairs in (("at", [("degraded", 10), ("degraded", 11), ("degraded", 12), ("A", 60), ("B", 70),
                                            ("A", 80)]),
                                    ("below", [("degraded", 10), ("degraded", 11), ("degraded", 12), ("degraded", 13),
                                               ("A", 60), ("B", 70), ("A", 80), ("B", 90)]))
               for i, (system, score) in enumerate(pairs)]
    raters = assess(ratings, qc_system="degraded", alpha=0.05)["raters"]
    assert raters["p"]["at"] == pytest.approx(sps.mannwhitneyu([10, 11, 12], [60, 70, 80], alternative="less").pvalue)
    assert raters["p"]["at"] == 0.05 and raters["p"]["below"] == pytest.approx(1 / 70)
    assert raters["failed"] == ["at"] and raters["passed"] == ["below"]


def test_most_ratings_scoring_nothing_names_the_first_of_them():
    ratings = synthetic(careful=1, careless=0, items=1)
    for r in ratings[1:]:
        r["scores"] = {}
    with pytest.raises(HumanEvalInputError) as caught:
        assess(ratings)
    assert "ratings.1.scores" in caught.value.fields


def test_overall_beside_other_criteria_is_named_where_most_ratings_use_it():
    ratings = synthetic(careful=1, careless=0, items=1)
    ratings[0]["scores"] = {"fun": 3}
    for r in ratings[1:]:
        r["scores"] = {"fun": 3, "overall": 4}
    with pytest.raises(HumanEvalInputError) as caught:
        assess(ratings)
    assert "ratings.1.scores.overall" in caught.value.fields


def test_a_system_only_failed_raters_rated_and_nobody_passing_are_warned_of() -> None:
    """Both vanished from the report without a word: a system rated only by raters who failed, and every
    system where no rater passed."""
    ratings = synthetic(careful=3, careless=0)
    ratings += [{"rater": "random", "system": "orphan", "item": f"orphan-{i}", "scores": {"fun": 50.0, "robotic": 50.0}}
                for i in range(3)] + [{"rater": "random", "system": "degraded", "item": f"random-qc-{i}",
                                        "scores": {"fun": 60.0 + i, "robotic": 40.0}} for i in range(3)]
    body = assess(ratings, reverse=["robotic"], qc_system="degraded")
    assert "random" in body["raters"]["failed"] and "orphan" not in {s["system"] for s in body["systems"]}
    assert any("'orphan': rated only by raters who failed" in w for w in body["warnings"])
    nobody = assess(synthetic(careful=0, careless=2, items=1), reverse=["robotic"], qc_system="degraded")
    assert nobody["raters"]["passed"] == [] and nobody["systems"] == []
    assert any(w.startswith("No rater passed quality control") for w in nobody["warnings"])


def test_raters_kept_with_one_score_everywhere_are_warned_of() -> None:
    """Without quality control they are kept at z = 0, which pulls their systems towards 0 unsaid (ConvAI2's
    intermediate ratings: 77 of 99 raters, 60 of them with one dialogue)."""
    ratings = [{"rater": f"r{i}", "system": "a" if i % 2 else "b", "item": f"i{i}", "scores": {"overall": 3.0}}
               for i in range(3)]
    ratings += [{"rater": "many", "system": system, "item": f"m{j}", "scores": {"overall": float(j)}}
                for j, system in enumerate("abab")]
    body = assess(ratings)
    assert sorted(body["raters"]["constant"]) == ["r0", "r1", "r2"]
    assert any(w.startswith("3 of 4 raters gave the same score everywhere (3 rated one dialogue)")
               for w in body["warnings"]), body.get("warnings")
    assert "warnings" not in assess([r for r in ratings if r["rater"] == "many"])
