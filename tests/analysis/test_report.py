"""service/analysis/report.py: the markdown report of a correlate run."""
from __future__ import annotations

from scipy import stats as sps

from service import stats
from service.analysis.report import correlate_markdown, human_eval_markdown
from service.stats.human_eval import assess


def test_correlate_markdown_has_a_system_level_table_when_systems_are_given():
    """With `systems`, /correlate answers system-level correlations over per-system means, and the
    report shows them in their own table (the item table alone hid them)."""
    human = [1, 2, 3, 4, 5, 6, 7, 8, 9]
    metric = [1, 3, 2, 5, 4, 9, 8, 7, 3]
    systems = list("aaabbbccc")
    text = correlate_markdown(stats.correlate(human, {"m": metric}, systems=systems, resamples=0))
    assert "### Item level" in text and "### System level" in text
    item, system = text.split("### System level")
    r_system = sps.pearsonr([2, 5, 8], [2, 6, 6]).statistic  # per-system means
    r_item = sps.pearsonr(human, metric).statistic
    assert f"| m | pearson | {r_item:.3f} |" in item
    assert f"| m | pearson | {r_system:.3f} |" in system
    assert "### System level" not in correlate_markdown(stats.correlate(human, {"m": metric}, resamples=0))


def test_kendall_is_named_tau_b_in_the_tables():
    """scipy's kendalltau is tau-b (ties corrected); the report says which tau its figures are."""
    human = [1, 2, 2, 3, 4, 4, 5, 6, 7]
    result = stats.correlate(human, {"m": [1, 1, 2, 3, 3, 5, 4, 6, 7], "n": list(range(9))},
                             methods=["kendall"], resamples=0)
    text = correlate_markdown(result)
    tau_b = sps.kendalltau(human, [1, 1, 2, 3, 3, 5, 4, 6, 7], variant="b").statistic
    assert f"| m | kendall tau-b | {tau_b:.3f} |" in text and "| item | m | n | kendall tau-b |" in text


def test_the_comparisons_table_says_what_its_tests_are_and_that_each_p_is_uncorrected():
    human = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    result = stats.correlate(human, {"m": [1, 3, 2, 5, 4, 6, 8, 7, 10, 9], "n": [2, 1, 4, 3, 6, 5, 8, 9, 7, 10]},
                             systems=list("aabbccddee"), resamples=200)
    comparisons = correlate_markdown(result).split("### Comparisons")[1]
    tests_line = comparisons.split("| level |")[0]
    assert "dual of the deltas' percentile interval" in tests_line and "uncorrected" in tests_line

def test_the_agreement_line_gives_alphas_intervals_and_what_they_resample():
    ratings = [[h, h + d] for h, d in zip(range(12), [0, 1, 0, 2, 1, 0, 0, 1, 3, 0, 1, 0])]
    result = stats.correlate(ratings, {"m": list(range(12))}, resamples=200, seed=5)
    agreement = result["agreement"]
    text = correlate_markdown(result)
    low, high = agreement["krippendorff_alpha_ci"]
    assert (f"Krippendorff's alpha (interval) = {agreement['krippendorff_alpha']:.3f} [{low:.3f}, {high:.3f}], "
            "(ordinal) = ") in text
    assert ("intervals: percentile bootstrap at 0.95, 200 resamples (seed 5) of the items with two ratings or more, "
            "each with all its ratings (the raters are not resampled): 12") in text
    off = correlate_markdown(stats.correlate(ratings, {"m": list(range(12))}, resamples=0))
    assert f"(interval) = {agreement['krippendorff_alpha']:.3f}, (ordinal)" in off
    assert off.rstrip().endswith("; no interval: resampling is off (resamples = 0)")


def test_a_p_at_the_bootstrap_floor_is_shown_as_the_floor():
    """Every resample on one side of 0: p is at its floor 1/(B+1), smaller than B resamples resolve (not a
    bound: a p of 1.6/(B+1) lands there four times in ten), which the table says instead of a figure."""
    human = [float(h) for h in range(40)]
    metric = [h + (i % 3) for i, h in enumerate(human)]
    result = stats.correlate(human, {"m": metric}, systems=[f"s{i % 8}" for i in range(40)], methods=["pearson"],
                             resamples=500, seed=1)
    entry = result["metrics"]["m"]["system"]["pearson"]
    assert entry["p_at_floor"] and entry["p"] == 1 / 501
    text = correlate_markdown(result)
    assert "| floor 1/501 |" in text.split("### System level")[1]
    assert "design `both`" in text and "B = 500 resamples, seed 1" in text



def test_a_monte_carlo_p_is_shown_with_its_standard_error():
    human = [float(h % 7) for h in range(40)]
    result = stats.correlate(human, {"m": [float((h * 5) % 11) for h in range(40)]},
                             systems=[f"s{i % 8}" for i in range(40)], methods=["pearson"], resamples=500, seed=1)
    entry = result["metrics"]["m"]["system"]["pearson"]
    assert not entry["p_at_floor"]
    assert f"| {entry['p']:.3f} ± {entry['p_mc_se']:.3f} |" in correlate_markdown(result).split("### System level")[1]


def test_the_human_eval_report_names_its_test_marks_reversed_criteria_and_counts_n():
    ratings = [{"rater": rater, "system": system, "item": f"{rater}-{system}-{i}",
                "scores": {"fun": base + 5 * i, "robotic": 100 - base - 3 * i}}
               for rater in ("r1", "r2") for system, base in (("A", 70), ("B", 45), ("qc", 10)) for i in range(3)]
    text = human_eval_markdown(assess(ratings, reverse=["robotic"], qc_system="qc"))
    assert "Quality control: one-sided Wilcoxon rank-sum (Mann-Whitney U, scipy)" in text
    assert "system `qc`; criteria fun); a rater passes at p < alpha = 0.05." in text
    assert "12 dialogues kept (N = 24 ratings: dialogues x 2 criteria, as Ji et al. 2022 count N)" in text
    assert "| # | system | n | N | overall z | 95% CI | fun | robotic (reversed) | raw overall |" in text
    assert "95% CI: Student-t interval of the mean per-dialogue z" in text
    assert "| 1 | A | 6 | 12 |" in text


def test_the_human_eval_report_says_which_pairwise_table_is_uncorrected_and_which_holm_adjusted():
    ratings = [{"rater": "r1", "system": system, "item": f"{system}-{i}", "scores": {"fun": base + 7 * i}}
               for system, base in (("A", 60), ("B", 50), ("C", 40)) for i in range(4)]
    result = assess(ratings)
    text = human_eval_markdown(result)
    raw, holm = text.split("### One-sided rank-sum p (row better than column), uncorrected")[1].split(
        "### The same p, Holm-adjusted")
    assert f"| A |  | {result['significance']['A']['B']:.3f} |" in raw
    assert "Holm-adjusted over every ordered pair of systems (k(k - 1) one-sided tests: 6)" in holm  # not `family`
    assert f"| A |  | {result['significance_holm']['A']['B']:.3f} |" in holm


def test_the_human_eval_report_lists_each_raters_p_and_why_a_rater_has_none():
    """The JSON held each rater's p and reason; the Markdown showed only counts, so the rater who gave one
    score everywhere failed without a word."""
    ratings = [{"rater": rater, "system": system, "item": f"{rater}-{system}-{i}",
                "scores": {"fun": 50.0 if rater == "same" else base + 9 * i}}
               for rater in ("careful", "same") for system, base in (("A", 60), ("B", 55), ("qc", 10))
               for i in range(4)]
    result = assess(ratings, qc_system="qc")
    raters = human_eval_markdown(result).split("### Raters")[1]
    assert "| same | — | fail | gave the same score everywhere |" in raters
    assert f"| careful | {result['raters']['p']['careful']:.3f} | pass |  |" in raters


def test_the_human_eval_report_says_why_a_system_has_no_interval():
    ratings = [{"rater": "r1", "system": system, "item": f"{system}-{i}", "scores": {"fun": base + 7 * i}}
               for system, base, dialogues in (("A", 60, 3), ("B", 50, 1)) for i in range(dialogues)]
    text = human_eval_markdown(assess(ratings))
    # in the CI cell of B's row, not a footnote that fits any of several reasons
    assert "| B | 1 | 1 | -1.245 | none: one dialogue (a t interval needs two) |" in text
    assert "it resamples nothing: mean +- t x standard error" in text
    many = [{**r, "item": f"{r['item']}-{k}"} for r in ratings for k in range(2)]
    assert "none:" not in human_eval_markdown(assess([{**r, "scores": {"fun": r["scores"]["fun"] + k}}
                                                      for k, r in enumerate(many)]))
