"""Reliable human assessment of dialogue systems after Ji et al. (2022), as pure functions (assess).
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats as sps

from service.errors import FieldsError
from service.stats.significance import holm
from service.text import canonical, is_blank


class HumanEvalInputError(FieldsError):
    """Ratings the schema cannot catch (scores outside the scale, mixed criteria): becomes a 422."""


OVERALL = "overall"  # the key of the mean over criteria in each system's `raw`
LABELS = ("rater", "system", "item")
# The level of each system's `overall_z_ci`; fixed, not the quality-control threshold `alpha`, which
# decides which raters pass and has nothing to say about how wide a system's interval should be.
CI_CONFIDENCE = 0.95
CI_METHOD = "Student-t interval of the mean per-dialogue z (n - 1 degrees of freedom)"
CI_RESAMPLED = ("nothing: mean +- t x standard error of the system's kept dialogues' z, the dialogues taken as a "
                "sample (raters and systems fixed)")
PAIR_TEST = ("one-sided Wilcoxon rank-sum (Mann-Whitney U, scipy) of the per-dialogue mean z: row system's "
             "scores greater than column system's")
HOLM = ("Holm-adjusted over every ordered pair of systems (k(k - 1) one-sided tests: `family`): the chance "
        "that any cell below alpha is a false claim is at most alpha")
QC_TEST = ("one-sided Wilcoxon rank-sum (Mann-Whitney U, scipy): a rater's scores of the quality-control system "
           "lower than their scores of the other systems, pooled over the quality-control criteria")


def _check(ratings: list[dict], scale: tuple[float, float], alpha: float) -> list[str]:
    """Validate the request and return the criteria: those most ratings score (the first such rating's
    order), so that a rating scoring others is the one named, even where it comes first."""
    errors: dict[str, str] = {}
    if not ratings:
        raise HumanEvalInputError({"ratings": "Give at least one rating."})
    lo, hi = float(scale[0]), float(scale[1])
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        errors["scale"] = "Must be [low, high] with low < high."
    if not 0 < alpha < 1:
        errors["alpha"] = "Must lie strictly between 0 and 1."
    sets = [frozenset(r.get("scores") or {}) for r in ratings]
    common = Counter(sets).most_common(1)[0][0]
    at = sets.index(common)
    criteria = list(ratings[at].get("scores") or {})
    if not criteria:
        errors[f"ratings.{at}.scores"] = "Give at least one criterion."
    elif OVERALL in criteria and len(criteria) > 1:  # its mean would be overwritten by the mean over criteria
        errors[f"ratings.{at}.scores.{OVERALL}"] = (f"'{OVERALL}' names the mean over the criteria in each "
                                                    "system's `raw`; rename this criterion (alone, it may keep "
                                                    "the name).")
    # A `reverse` entry the ratings do not use is not an error (API.md's own example lists "repetitive"
    # beside ratings without it), but a misspelt one reverses nothing, so assess() warns of it.
    seen: dict[tuple[str, str], int] = {}  # (rater, item) -> first rating: a repeat would count twice
    for i, rating in enumerate(ratings):
        pair = (rating.get("rater"), rating.get("item"))
        if all(isinstance(part, str) for part in pair):
            if pair in seen:
                errors[f"ratings.{i}.item"] = (f"Rater {pair[0]!r} already rated item {pair[1]!r} "
                                               f"(ratings.{seen[pair]}); each rater rates an item once.")
            else:
                seen[pair] = i
        for key in LABELS:
            if not isinstance(rating.get(key), str) or is_blank(rating[key]):
                errors[f"ratings.{i}.{key}"] = f"Must name the {key} (not blank)."
        scores = rating.get("scores") or {}
        if set(scores) != set(criteria):
            errors[f"ratings.{i}.scores"] = f"Every rating must score the same criteria: {', '.join(criteria)}."
            continue
        for name, value in scores.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                errors[f"ratings.{i}.scores.{name}"] = "Must be a finite number."
            elif not lo <= value <= hi:
                errors[f"ratings.{i}.scores.{name}"] = f"Must lie within the scale [{lo:g}, {hi:g}]."
    # A `qc_system` no rating holds is not refused either (API.md's example names "degraded" beside a
    # single rating of system A): every rater then fails quality control, having rated no
    # quality-control dialogue, and the response's `warnings` says why nothing is ranked.
    if errors:
        raise HumanEvalInputError(errors)
    return criteria


def oriented_scores(ratings: list[dict], criteria: Sequence[str], reverse: Sequence[str],
                    scale: tuple[float, float]) -> np.ndarray:
    """Ratings x criteria matrix with negative criteria reversed (lo + hi - score): higher is better."""
    lo, hi = float(scale[0]), float(scale[1])
    raw = np.array([[float(r["scores"][c]) for c in criteria] for r in ratings], dtype=np.float64)
    reversed_names = set(reverse)
    for j, name in enumerate(criteria):
        if name in reversed_names:
            raw[:, j] = lo + hi - raw[:, j]
    return raw


def labelled(labels: np.ndarray, wanted: set) -> np.ndarray:
    """Mask of the rows whose label is in `wanted`, compared as Python strings.

    Not `labels == value` nor np.isin: both turn the value into a fixed-width numpy string, which
    drops trailing NUL characters, so a system "T\\u0000" would take the rows of "T".
    """
    return np.fromiter((label in wanted for label in labels.tolist()), dtype=bool, count=len(labels))


def rows_by(labels: np.ndarray) -> dict[str, np.ndarray]:
    """{label: indices of its rows}, labels in order of first appearance, in one pass (masks per
    label cost ratings x raters)."""
    rows: dict[str, list[int]] = {}
    for i, label in enumerate(labels.tolist()):
        rows.setdefault(label, []).append(i)
    return {label: np.asarray(indices, dtype=np.int64) for label, indices in rows.items()}


def standardise(raw: np.ndarray, by_rater: dict[str, np.ndarray],
                ) -> tuple[np.ndarray, dict[str, dict[str, float]], list[str]]:
    """Per-rater z-scores of a (ratings, criteria) array; raters whose scores never vary get z = 0.

    Mean and sample standard deviation (ddof = 1) over all of one rater's scores, as upstream.
    Returns (z, {rater: {"mean", "sd"}}, raters with constant scores).
    """
    z = np.zeros_like(raw, dtype=np.float64)
    moments: dict[str, dict[str, float]] = {}
    constant: list[str] = []
    for rater, rows in by_rater.items():
        values = raw[rows]
        mean = float(values.mean())
        sd = float(values.std(ddof=1)) if values.size > 1 else 0.0
        moments[rater] = {"mean": mean, "sd": sd}
        if sd > 0:
            z[rows] = (values - mean) / sd
        else:
            constant.append(rater)
    return z, moments, constant


def rating_means_z(raw: np.ndarray, raters: np.ndarray, moments: dict[str, dict[str, float]]) -> np.ndarray:
    """Each rating's mean z over its criteria, as (mean raw score - rater mean) / rater sd.

    The same number as the mean of the criteria's z-scores (z is linear), but from an exactly rounded sum
    of the raw scores, so two ratings of one rater with equal score sums get equal values and tie in the
    rank-sum test, where averaging z-scores (as upstream does) leaves them a rounding apart."""
    means = np.array([math.fsum(row) for row in raw.tolist()]) / raw.shape[1]
    centre = np.array([moments[r]["mean"] for r in raters.tolist()])
    spread = np.array([moments[r]["sd"] for r in raters.tolist()])
    varies = spread > 0
    out = np.zeros(raw.shape[0])
    out[varies] = (means[varies] - centre[varies]) / spread[varies]
    return out


# scipy's "auto" takes the exact null whenever one sample has 8 values or fewer and there are no
# ties, whatever the other's size; its cost grows with the square of n1 * n2, in Python. Beyond this
# many pairs the normal approximation is used, as scipy does for all larger samples; there it is close
# to the exact p (docs/notes/2026-11-27-service-layout.md).
EXACT_MAX_PAIRS = 8_000


def rank_sum_p(x: np.ndarray, y: np.ndarray, alternative: str) -> float | None:
    """One-sided Mann-Whitney U (Wilcoxon rank-sum) p of scipy, exact where that is cheap (above)."""
    method = "auto" if x.size * y.size <= EXACT_MAX_PAIRS else "asymptotic"
    p = float(sps.mannwhitneyu(x, y, alternative=alternative, method=method).pvalue)
    return p if math.isfinite(p) else None


def quality_control_p(qc_scores: np.ndarray, ordinary_scores: np.ndarray) -> float | None:
    """One-sided rank-sum p that a rater scored the degraded system lower than the ordinary ones."""
    if qc_scores.size == 0 or ordinary_scores.size == 0:
        return None
    return rank_sum_p(qc_scores, ordinary_scores, "less")


def mean_interval(values: np.ndarray, confidence: float = CI_CONFIDENCE) -> list[float] | None:
    """Student-t interval of a mean (the ranking plot's error bars); None below two values or no spread,
    or where it is unbounded (a confidence of 1.0)."""
    if values.size < 2 or np.ptp(values) == 0:
        return None
    lo, hi = sps.t.interval(confidence, values.size - 1, loc=values.mean(), scale=sps.sem(values))
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    return [float(lo), float(hi)]


def no_interval_reason(values: np.ndarray, confidence: float = CI_CONFIDENCE) -> str | None:
    """Why mean_interval gives none for `values`, in words a table cell holds; None where it gives one."""
    if values.size < 2:
        return "one dialogue (a t interval needs two)" if values.size else "no dialogue"
    if np.ptp(values) == 0:
        return f"its {values.size} dialogues' z are all equal (no spread)"
    if mean_interval(values, confidence) is None:
        return f"unbounded at confidence {confidence:g}"
    return None


def significance_matrix(samples: dict[str, np.ndarray]) -> dict[str, dict[str, float | None]]:
    """Uncorrected p of the one-sided rank-sum test that row system's scores exceed column system's (no
    diagonal): each test alone, as Ji et al. report them; holm_matrix adjusts them for the whole matrix."""
    pairs = [(a, b) for a in samples for b in samples if a != b]
    # Pairs of the same two sample sizes one after another: scipy keeps the exact null of the last
    # sizes it saw, so that each is built once rather than once per pair.
    pairs.sort(key=lambda pair: sorted((samples[pair[0]].size, samples[pair[1]].size)))
    p = {(a, b): rank_sum_p(samples[a], samples[b], "greater") if samples[a].size and samples[b].size else None
         for a, b in pairs}
    return {a: {b: p[a, b] for b in samples if b != a} for a in samples}


def holm_matrix(matrix: dict[str, dict[str, float | None]]) -> tuple[dict[str, dict[str, float | None]], int]:
    """The matrix's p-values Holm-adjusted over all of its defined cells, and how many tests that family holds.

    The family is every ordered pair, k(k - 1) one-sided tests for k systems, not the k(k - 1)/2 pairs each
    tested in the direction observed: every cell is a claim of its own ("row beats column"), and the smaller
    of a pair's two one-sided p-values falls below alpha twice as often as alpha where the systems do not
    differ, so it is no p-value to adjust. A cell without a test (an empty sample) stays None, outside it."""
    cells = [(a, b) for a, row in matrix.items() for b, p in row.items() if p is not None]
    adjusted = dict(zip(cells, holm([matrix[a][b] for a, b in cells]).tolist()))
    return {a: {b: adjusted.get((a, b)) for b in row} for a, row in matrix.items()}, len(cells)


def unused_reverse_warnings(reverse: Sequence[str], criteria: Sequence[str]) -> list[str]:
    """One warning per `reverse` entry that no rating scores: it reverses nothing, so a misspelling
    would leave a negative criterion unreversed and change every rater's z-scores."""
    known = set(criteria)
    unused = list(dict.fromkeys(name for name in reverse if name not in known))
    return [f"`reverse` names {name!r}, which no rating scores, so it reversed nothing; the criteria are "
            f"{', '.join(criteria)} (a misspelt negative criterion is left unreversed)." for name in unused]


def assess(ratings: list[dict], reverse: Sequence[str] = (), scale: tuple[float, float] = (0, 100),
           qc_system: str | None = None, alpha: float = 0.05,
           qc_criteria: Sequence[str] | None = None) -> dict[str, Any]:
    """The body of a /human-eval 200 response: rater quality control, system scores, significance.

    The paper's procedure as its released code has it (TianboJi/Dialogue-Eval): negative criteria are
    reversed; each rater's scores are standardised by that rater's mean and sample standard deviation;
    a rater passes quality control when a one-sided rank-sum test finds their ratings of the degraded
    quality-control system lower than those of the other systems (p < alpha); systems are ranked by mean
    z-score over passed raters; every ordered pair of systems gets a one-sided rank-sum test (scipy's
    Mann-Whitney U), reported uncorrected and Holm-adjusted. `ratings`: [{"rater", "system", "item",
    "scores": {criterion: number}}]. Without `qc_system` every rater passes. `qc_criteria` (default: the
    positive criteria, as upstream) are those the quality-control test pools."""
    # Labels in NFC: two spellings of one name ("café" composed or not) are one rater, system or item.
    ratings = [{**r, **{k: canonical(r[k]) for k in LABELS if isinstance(r.get(k), str)}} for r in ratings]
    qc_system = canonical(qc_system) if isinstance(qc_system, str) else qc_system
    criteria = _check(ratings, scale, alpha)
    reversed_names = set(reverse)
    if qc_criteria is None:
        qc_criteria = [c for c in criteria if c not in reversed_names] or list(criteria)
    known = set(criteria)
    unknown = [c for c in qc_criteria if c not in known]
    if unknown or not qc_criteria:
        raise HumanEvalInputError({"qc_criteria": f"Must name criteria of the ratings ({', '.join(criteria)})."})
    qc_columns = [criteria.index(c) for c in qc_criteria]
    raw = oriented_scores(ratings, criteria, reverse, scale)
    raters = np.array([r["rater"] for r in ratings], dtype=object)
    systems = np.array([r["system"] for r in ratings], dtype=object)
    by_rater = rows_by(raters)
    z, moments, constant = standardise(raw, by_rater)
    is_qc = labelled(systems, {qc_system})

    passed: list[str] = []
    failed: list[str] = []
    pvalues: dict[str, float | None] = {}
    reasons: dict[str, str] = {}
    for rater in moments:
        if qc_system is None:
            passed.append(rater)
            continue
        rows = by_rater[rater]
        qc_rows, ordinary_rows = rows[is_qc[rows]], rows[~is_qc[rows]]
        if rater in constant:
            p, reasons[rater] = None, "gave the same score everywhere"
        else:
            p = quality_control_p(raw[np.ix_(qc_rows, qc_columns)].ravel(),
                                  raw[np.ix_(ordinary_rows, qc_columns)].ravel())
            if p is None:
                reasons[rater] = ("rated no quality-control dialogue" if not qc_rows.size
                                  else "rated no ordinary dialogue")
        pvalues[rater] = p
        (passed if p is not None and p < alpha else failed).append(rater)

    kept = labelled(raters, set(passed)) & ~is_qc
    per_rating_z = rating_means_z(raw, raters, moments)
    summary = []
    samples: dict[str, np.ndarray] = {}
    kept_rows = np.flatnonzero(kept)
    for system, indices in rows_by(systems[kept_rows]).items():
        rows = kept_rows[indices]  # ascending, as the mask gave them: the same sums to the last bit
        samples[system] = per_rating_z[rows]
        summary.append({
            "system": system,
            "n": int(rows.size),
            "n_ratings": int(rows.size) * len(criteria),  # Ji et al.'s Table 3 N
            "raw": {**{c: float(raw[rows, j].mean()) for j, c in enumerate(criteria)},
                    OVERALL: float(raw[rows].mean())},
            "z": {c: float(z[rows, j].mean()) for j, c in enumerate(criteria)},
            "overall_z": float(z[rows].mean()),
            "overall_z_ci": mean_interval(samples[system]),
        })
        reason = no_interval_reason(samples[system])
        if reason is not None:  # said where the interval would be: a blank would read as exact
            summary[-1]["overall_z_ci_reason"] = reason
    summary.sort(key=lambda s: (-s["overall_z"], s["system"]))
    ordered = {s["system"]: samples[s["system"]] for s in summary}
    significance = significance_matrix(ordered)
    adjusted, family = holm_matrix(significance)
    body: dict[str, Any] = {
        "raters": {"passed": passed, "failed": failed, "p": pvalues,
                   "total": len(moments), "pass_rate": len(passed) / len(moments)},
        "systems": summary,
        "intervals": {"of": "overall_z_ci", "confidence": CI_CONFIDENCE, "method": CI_METHOD,
                      "resampled": CI_RESAMPLED},
        "significance": significance,
        "significance_holm": adjusted,
        "significance_tests": {"test": PAIR_TEST, "significance": "each test's own p, not adjusted for the others",
                               "significance_holm": HOLM, "family": family},
        "criteria": criteria,
        "reversed": [c for c in criteria if c in reversed_names],  # a misspelt `reverse` entry shows as missing here
        "qc_criteria": list(qc_criteria),
        "kept_ratings": int(kept.sum()),
        "quality_control": {"test": QC_TEST, "qc_system": qc_system, "criteria": list(qc_criteria),
                            "alpha": alpha, "passes": "p < alpha"} if qc_system is not None else None,
    }
    warnings = unused_reverse_warnings(reverse, criteria)
    if qc_system is not None and not is_qc.any():
        warnings.append(f"No rating is of the quality-control system {qc_system!r}, so no rater could pass "
                            "quality control and no system is ranked; name the system that holds the degraded "
                            "dialogues, or leave qc_system out to keep every rater untested.")
    elif qc_system is not None and not passed:
        warnings.append("No rater passed quality control, so no system is ranked: see `raters` for each rater's p "
                        "(or reason), and check that the quality-control dialogues are the degraded ones.")
    unrated = sorted(set(systems[~is_qc].tolist()) - {s["system"] for s in summary}) if passed else []
    if unrated:
        warnings.append(f"{', '.join(map(repr, unrated))}: rated only by raters who failed quality control, so "
                        "left out of the ranking.")
    kept_constant = [r for r in constant if r in passed]  # with quality control they fail it
    if kept_constant:
        single = sum(1 for r in kept_constant if by_rater[r].size == 1)
        warnings.append(f"{len(kept_constant)} of {len(moments)} raters gave the same score everywhere ({single} "
                        "rated one dialogue): a z-score cannot place them, so their ratings count as z = 0 and pull "
                        "their systems' means towards 0; z-scores need several ratings from each rater (see "
                        "`raters.constant`).")
    if warnings:
        body["warnings"] = warnings
    if reasons:
        body["raters"]["reasons"] = reasons
    if constant:
        body["raters"]["constant"] = constant
    return body
