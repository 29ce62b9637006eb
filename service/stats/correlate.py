"""The body of a /correlate answer: every metric at item and system level, comparisons, agreement.

Validation the schema cannot do (lengths, NaN, too few items) raises `StatsInputError`, which the
API answers with a 422 naming the field.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np

from service.errors import FieldsError
from service.text import canonical, is_blank
from service.stats.agreement import (AlphaResamples, krippendorff_alpha_interval, krippendorff_alpha_ordinal,
                                     pairable_units)
from service.stats.bootstrap import (MAX_UNDEFINED_SHARE, MIN_BOOTSTRAP, UNDEFINED_REASON, bootstrap_distributions,
                                     bootstrap_p, decimal_ties, min_resamples, paired_bootstrap_from,
                                     percentile_interval, p_fields, resample_indices, system_bootstrap_distributions,
                                     without_items_reason)
from service.stats.correlation import METHODS, MIN_ITEMS, correlation
from service.stats.designs import (BY_INPUTS, DEFAULT_DESIGN, DEFAULT_ITEM_DESIGN, DESCRIPTIONS, DESIGNS, INPUTS,
                                   ITEM_DESCRIPTIONS, ITEM_DESIGNS, ITEMS, SYSTEMS, Resamples, by_content,
                                   input_resamples, inputs_by_content, system_resamples, systems_without_items)
from service.stats.significance import holm, williams_test


_ALPHA_CHUNK_CELLS = 4_000_000  # alpha's draws held at once (rows x items): 32 MB


class StatsInputError(FieldsError):
    """Numbers the schema cannot catch (mismatched lengths, NaN/inf, too few items): becomes a 422."""


def _check_inputs(human: Any, scores: dict[str, Any], systems: Any, methods: Sequence[str],
                  confidence: float, resamples: int, design: str,
                  inputs: Any = None, item_design: str = DEFAULT_ITEM_DESIGN) -> tuple[np.ndarray, list[np.ndarray] | None]:
    """Validate and average the human ratings; returns (per-item means, per-item ratings or None)."""
    errors: dict[str, str] = {}
    if not isinstance(human, (list, tuple)) or len(human) == 0:
        raise StatsInputError({"human": "Give at least one human rating."})
    nested = any(isinstance(h, (list, tuple)) for h in human)
    units: list[np.ndarray] | None = None
    if nested:
        units = []
        for i, item in enumerate(human):
            values = np.asarray(item if isinstance(item, (list, tuple)) else [item], dtype=np.float64)
            if values.size == 0:
                errors[f"human.{i}"] = "Give at least one rating for every item."
            elif not np.all(np.isfinite(values)):
                errors[f"human.{i}"] = "Ratings must be finite numbers (no NaN or infinity)."
            units.append(values)
        # fsum: the exactly rounded sum, so one item's ratings give the same mean in any order (and
        # items with equal ratings tie exactly, which Spearman's and Kendall's ranks depend on).
        means = np.array([math.fsum(u.tolist()) / u.size if u.size and np.all(np.isfinite(u)) else np.nan
                          for u in units])
    else:
        means = np.asarray(human, dtype=np.float64)
        for i in np.flatnonzero(~np.isfinite(means)):
            errors[f"human.{i}"] = "Ratings must be finite numbers (no NaN or infinity)."
    n = len(human)
    if not scores:
        errors["scores"] = "Give the scores of at least one metric."
    for name, values in (scores or {}).items():
        if len(values) != n:
            errors[f"scores.{name}"] = f"Has {len(values)} scores for {n} human ratings."
            continue
        bad = np.flatnonzero(~np.isfinite(np.asarray(values, dtype=np.float64)))
        if bad.size:
            errors[f"scores.{name}.{int(bad[0])}"] = "Scores must be finite numbers (no NaN or infinity)."
    for field, labels, what in (("systems", systems, "a system"), ("inputs", inputs, "an input")):
        if labels is None:
            continue
        # Blank labels would make one group of the unlabelled items; a zero-width space is blank too (is_blank).
        blank = next((i for i, label in enumerate(labels) if is_blank(str(label))), None)
        if len(labels) != n:
            errors[field] = f"Has {len(labels)} labels for {n} human ratings."
        elif blank is not None:
            errors[f"{field}.{blank}"] = f"Must name {what} (not blank): label every item, or leave `{field}` out."
    if not methods or any(method not in METHODS for method in methods):
        errors["methods"] = f"Give one or more of: {', '.join(METHODS)}."
    if not 0 < confidence < 1:
        errors["confidence"] = "Must lie strictly between 0 and 1."
    if resamples < 0:
        errors["resamples"] = "Must not be negative."
    if design not in DESIGNS:
        errors["system_resampling"] = f"Give one of: {', '.join(DESIGNS)}."
    if item_design not in ITEM_DESIGNS:
        errors["item_resampling"] = f"Give one of: {', '.join(ITEM_DESIGNS)}."
    elif item_design == INPUTS and inputs is None:
        errors["inputs"] = "Required where item_resampling is 'inputs': the input (e.g. the context) each item answers."
    if errors:
        raise StatsInputError(errors)
    return means, units


def _level(human: np.ndarray, metrics: dict[str, np.ndarray], methods: Sequence[str], confidence: float,
           no_bootstrap: str | None, indices_for: Any, p_from_bootstrap: bool = False,
           undefined_reason: str = UNDEFINED_REASON, williams: bool = True) -> tuple[dict[str, dict], list[dict]]:
    """Correlations, intervals and pairwise comparisons at one level (item or system).

    `indices_for(method)` returns {metric name: bootstrap distribution of its correlation}, every
    metric on the same resamples; it is not called when `no_bootstrap` gives a reason not to. With
    `p_from_bootstrap` a correlation's p comes from that distribution too (`bootstrap_p`), so p and
    the interval resample the same things; without a bootstrap it is then None with `p_reason`.
    Pairs of metrics are compared by the paired bootstrap, and for Pearson by Williams' t where
    `williams` (it takes the points as independent draws). `undefined_reason` says why where too many
    resamples leave the correlation undefined.
    """
    n = int(human.size)
    results: dict[str, dict[str, Any]] = {name: {} for name in metrics}
    comparisons: list[dict[str, Any]] = []
    for method in methods:
        point = {name: correlation(values, human, method) for name, values in metrics.items()}
        dist = indices_for(method) if no_bootstrap is None else None
        for name, res in point.items():
            if res["r"] is None:
                results[name][method] = {**res, "ci": None}
                continue
            ci = percentile_interval(dist[name], confidence) if dist is not None else None
            entry = {"r": res["r"], "p": res["p"], "ci": ci, "n": n}
            if not p_from_bootstrap:  # a sampled permutation p's, not the p given
                entry.update({key: res[key] for key in ("p_mc_se", "p_at_floor") if key in res})
            if p_from_bootstrap:
                entry.update(_p_of(dist[name] if dist is not None else None, no_bootstrap, undefined_reason))
            if ci is None:
                entry["ci_reason"] = no_bootstrap or undefined_reason
            results[name][method] = entry
        by_williams = williams and method == "pearson"
        for a, b in combinations(metrics, 2):
            ra, rb = point[a]["r"], point[b]["r"]
            base = {"a": a, "b": b, "method": method}
            if ra is None or rb is None:
                reason = f"r is undefined for {a if ra is None else b}"
                if by_williams:
                    comparisons.append({**base, "delta": None, "p": None, "test": "williams", "reason": reason})
                comparisons.append({**base, "delta": None, "p": None, "ci": None, "test": "paired_bootstrap",
                                    "reason": reason})
                continue
            delta = ra - rb
            if by_williams:
                r_ab = correlation(metrics[a], metrics[b], "pearson")["r"]
                if r_ab is None:
                    comparisons.append({**base, "delta": delta, "p": None, "test": "williams",
                                        "reason": "one metric is constant"})
                else:
                    w = williams_test(ra, rb, r_ab, n)
                    entry = {**base, "delta": delta, "p": w["p"], "t": w["t"], "df": w["df"], "test": "williams"}
                    if "reason" in w:
                        entry["reason"] = w["reason"]
                    comparisons.append(entry)
            if dist is None:
                comparisons.append({**base, "delta": delta, "p": None, "ci": None, "test": "paired_bootstrap",
                                    "reason": no_bootstrap})
            else:
                paired = paired_bootstrap_from(dist[a] - dist[b], confidence)
                if paired.get("reason") == UNDEFINED_REASON:
                    paired["reason"] = undefined_reason
                comparisons.append({**base, "delta": delta, "test": "paired_bootstrap", **paired})
    return results, comparisons


def _p_of(distribution: np.ndarray | None, no_bootstrap: str | None,
          undefined_reason: str = UNDEFINED_REASON) -> dict[str, Any]:
    """A correlation's bootstrap p and whether it is at its floor, or p None and why."""
    if distribution is None:
        return {"p": None, "p_reason": no_bootstrap}
    found = bootstrap_p(distribution)
    if found["p"] is None:
        return {"p": None, "p_reason": undefined_reason}
    return p_fields(found)


def with_holm(comparisons: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each comparison with a p gains `p_holm`, Holm-adjusted over its family: the comparisons of one level,
    method and test that have a p (every pair of metrics), `holm_family` of them."""
    families: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for entry in comparisons:
        if entry.get("p") is not None:
            families.setdefault((entry["level"], entry["method"], entry["test"]), []).append(entry)
    for family in families.values():
        for entry, adjusted in zip(family, holm([entry["p"] for entry in family]).tolist()):
            entry.update(p_holm=adjusted, holm_family=len(family))
    return comparisons


def resampling_summary(level: str, design: str, confidence: float, resamples: int, seed: int,
                       no_bootstrap: str | None, by_inputs: bool = False) -> dict[str, Any]:
    """What one level's intervals and p-values resample, for the report: method, confidence level,
    resamples (B), seed, design, and how p was found. The item level's `design` is one of ITEM_DESIGNS."""
    from_bootstrap = level == "system" or design == INPUTS
    p = ("bootstrap: (2k + 1) / (B + 1), k the resamples on the smaller side of 0 (the percentile "
         "interval's dual); at its floor 1 / (B + 1) it is smaller than B resolves; p_mc_se its Monte Carlo "
         "standard error" if from_bootstrap else
         "scipy's, exact permutation p for rank correlations up to 9 items, Monte Carlo permutation p for "
         "Spearman up to 50 items and tied Kendall (9,999 pairings, seeded by n, not by `seed`; p_mc_se its "
         "Monte Carlo standard error)")
    resampled = ((BY_INPUTS if by_inputs else DESCRIPTIONS)[design] if level == "system" else
                 ITEM_DESCRIPTIONS[design])
    williams = "" if level == "item" and design == INPUTS else " and, for Pearson, Williams' t"
    summary = {"method": "percentile bootstrap", "confidence": confidence, "resamples": resamples, "seed": seed,
               "design": design, "resampled": resampled, "p": p,
               "comparisons": "paired bootstrap (both metrics on the same resamples; p the dual of the deltas' "
                              "percentile interval, as the system level's; p_mc_se its Monte Carlo standard error)"
                              f"{williams}; {'both ' if williams else ''}two-sided, each p uncorrected for the "
                              "other comparisons, p_holm "
                              "Holm-adjusted over the pairs of one level, method and test"}
    if no_bootstrap is not None:
        summary["reason"] = no_bootstrap
    return summary


def too_few_resamples(confidence: float, resamples: int) -> str:
    """Why no interval is drawn from `resamples` at `confidence` (min_resamples); the level as given, unrounded."""
    return (f"too few resamples for a {float(confidence)!r} interval (resamples = {resamples}, need at least "
            f"{min_resamples(confidence)})")


def _system_means(values: np.ndarray, groups: np.ndarray, count: int) -> np.ndarray:
    """Per-system means from exactly rounded sums: the same whatever the order of a system's items
    (bincount adds in item order, so reordering one system's .3, .2, .1 could break a tie between
    system means and move a rank correlation)."""
    order = np.argsort(groups, kind="stable")
    bounds = np.cumsum(np.bincount(groups, minlength=count))
    return decimal_ties(np.array([math.fsum(values[members].tolist()) / members.size if members.size else np.nan
                                  for members in np.split(order, bounds[:-1])]))


def canonical_order(human: np.ndarray, metrics: dict[str, np.ndarray]) -> np.ndarray:
    """The item order the bootstrap draws in: sorted by human score, then each metric by name.

    A resample is a row of item positions, so with one seed the intervals and paired-bootstrap p-values
    would move when the same rows came in another order; in this order they depend on the data alone
    (items that tie on every key are interchangeable). `systems` is not a key: the item level reads no
    system, and the system level draws within each system, its members in this order. The metrics are
    keys because every metric shares the item-level draws (the paired bootstrap needs that), so adding
    a metric moves the others' intervals, within their resampling noise."""
    keys = [metrics[name] for name in sorted(metrics, reverse=True)] + [human]
    return np.lexsort(keys)


def binary_rescaled(values: np.ndarray) -> np.ndarray:
    """`values` times the power of two that brings their largest magnitude into [0.5, 1).

    Every statistic here is unchanged by a positive scale, and a power of two scales exactly, so on
    ordinary data nothing moves by a bit; but sums of squares of values near 1e-300 underflow, and
    denormals (5e-324 x 1..10) carry a few bits each, which moved r and left bootstrap intervals
    "undefined"."""
    finite = values[np.isfinite(values)]
    largest = float(np.abs(finite).max()) if finite.size else 0.0
    if largest == 0.0:
        return values
    return np.ldexp(values, -int(np.frexp(largest)[1]))


def correlate(human: list[float] | list[list[float]], scores: dict[str, list[float]],
              systems: list[str] | None = None, methods: Sequence[str] = METHODS,
              confidence: float = 0.95, resamples: int = 1000, seed: int = 0,
              system_resampling: str = DEFAULT_DESIGN, inputs: list[str] | None = None,
              item_resampling: str = DEFAULT_ITEM_DESIGN) -> dict[str, Any]:
    """The body of a /correlate 200 response: per metric, level and method {r, p, ci, n}, comparisons,
    agreement, and `resampling`: what each level's intervals and p-values resample.

    The item level correlates every item, its bootstrap resampling what `item_resampling` names (items,
    or with `inputs` whole inputs, p then from those draws too); the system level (with `systems`)
    correlates per-system means, its bootstrap resampling what `system_resampling` names
    (designs.py), p from the same draws. Every comparison carries `test`: 'williams' (Pearson only) or
    'paired_bootstrap'. The arguments are checked here too (StatsInputError), not only by the request
    schema: service.stats is a library, which a notebook may call with no schema in front.
    """
    methods = list(dict.fromkeys(methods))
    design = system_resampling
    means, units = _check_inputs(human, scores, systems, methods, confidence, resamples, design, inputs,
                                 item_resampling)
    as_sent = {"human": means, **{name: np.asarray(values, dtype=np.float64) for name, values in scores.items()}}
    means = binary_rescaled(means)
    metrics = {name: binary_rescaled(np.asarray(values, dtype=np.float64)) for name, values in scores.items()}
    n = int(means.size)
    if n < MIN_ITEMS:
        raise StatsInputError({"human": f"Give at least {MIN_ITEMS} items (got {n})."})
    # object, not a numpy string array: that drops trailing NUL characters, and merged "c\u0000" into "c";
    # in NFC, so that two spellings of one label ("café" composed or not) are one system
    labels_given = None if systems is None else np.asarray([canonical(str(s)) for s in systems], dtype=object)
    order = canonical_order(means, metrics)
    means = means[order]
    metrics = {name: values[order] for name, values in metrics.items()}
    cache: dict[str, dict[str, np.ndarray]] = {}
    needed = min_resamples(confidence)
    rows = list(zip(means.tolist(), *(metrics[name].tolist() for name in sorted(metrics))))
    by_inputs_items = item_resampling == INPUTS
    item_inputs = None
    if by_inputs_items:  # the draws pick inputs by id: ids in the order of their contents, not of their labels
        given = np.asarray([canonical(str(x)) for x in inputs], dtype=object)
        item_inputs = np.unique(given[order], return_inverse=True)[1]
        item_inputs = inputs_by_content(item_inputs, int(item_inputs.max()) + 1, rows)
        # Items that tie on every value but answer different inputs weigh differently in a draw: their
        # inputs' ids (which the data fixes) order them, so the weighted sums add in one order for any
        # order of the rows.
        within = np.asarray(sorted(range(n), key=lambda i: (rows[i], int(item_inputs[i]))), dtype=np.int64)
        order, means, item_inputs = order[within], means[within], item_inputs[within]
        metrics = {name: values[within] for name, values in metrics.items()}
        rows = [rows[i] for i in within]
    units_drawn = ("inputs", int(item_inputs.max()) + 1) if by_inputs_items else ("items", n)
    no_bootstrap = ("resampling is off (resamples = 0)" if resamples == 0 else
                    too_few_resamples(confidence, resamples) if resamples < needed else
                    f"too few {units_drawn[0]} for a bootstrap (n = {units_drawn[1]}, need at least {MIN_BOOTSTRAP})"
                    if units_drawn[1] < MIN_BOOTSTRAP else None)
    indices = None
    if no_bootstrap is None:
        indices = input_resamples(units_drawn[1], resamples, seed) if by_inputs_items else resample_indices(
            n, resamples, seed)

    def item_distribution(method: str) -> dict[str, np.ndarray]:
        if not cache:  # every method in one pass: resample counts and ranks are shared
            cache.update(bootstrap_distributions(means, metrics, methods, indices, item_inputs))
        return cache[method]

    item, comparisons = _level(means, metrics, methods, confidence, no_bootstrap, item_distribution,
                               p_from_bootstrap=by_inputs_items, williams=not by_inputs_items)
    for entry in comparisons:
        entry["level"] = "item"
    body: dict[str, Any] = {"n": n, "metrics": {name: {"item": item[name]} for name in metrics}}
    resampling = {"item": resampling_summary("item", item_resampling, confidence, resamples, seed, no_bootstrap)}
    if by_inputs_items:  # the units drawn, a sample size the intervals rest on as much as n
        resampling["item"]["inputs"] = units_drawn[1]

    if systems is not None:
        labels, labelled = np.unique(labels_given[order], return_inverse=True)
        count = labels.size
        by_inputs = inputs is not None and design != SYSTEMS
        input_groups, input_count = None, None
        if by_inputs:
            given = np.asarray([canonical(str(x)) for x in inputs], dtype=object)
            input_groups = np.unique(given[order], return_inverse=True)[1]
            input_count = int(input_groups.max()) + 1
        # The draws pick systems (inputs) by id: ids in the order of their contents, not of their labels.
        groups, input_groups = by_content(labelled, count, rows, input_groups, input_count)
        drawn_labels = np.empty_like(labels)
        drawn_labels[groups] = labels[labelled]
        sys_human = _system_means(means, groups, count)
        sys_metrics = {name: _system_means(values, groups, count) for name, values in metrics.items()}
        # Resampling items within each system cannot move a system with one item (nor resampling inputs
        # a single input): every resample would be the sample itself, an interval a zero-width [r, r].
        cannot_vary = (None if design != ITEMS else
                       "every item answers one input, so resampling inputs cannot vary" if by_inputs and input_count == 1
                       else "every system has a single item, so resampling within systems cannot vary"
                       if not by_inputs and count == n else None)
        sys_no_bootstrap = no_bootstrap or cannot_vary
        draws = (system_resamples(design, groups, count, resamples, seed, input_count)
                 if sys_no_bootstrap is None else None)
        sys_cache: dict[str, dict[str, np.ndarray]] = {}

        def system_distribution(method: str) -> dict[str, np.ndarray]:
            if not sys_cache:  # every method in one pass: the resampled system means are shared
                sys_cache.update(system_bootstrap_distributions(means, metrics, methods, groups, count, draws.items,
                                                                draws.slots, input_groups, draws.slot_seed))
            return sys_cache[method]

        undefined_reason = UNDEFINED_REASON
        if by_inputs and draws is not None:
            undefined_reason = _without_items_reason(draws, groups, input_groups, drawn_labels, count)
        system, sys_comparisons = _level(sys_human, sys_metrics, methods, confidence, sys_no_bootstrap,
                                         system_distribution, p_from_bootstrap=True, undefined_reason=undefined_reason)
        resampling["system"] = resampling_summary("system", design, confidence, resamples, seed, sys_no_bootstrap,
                                                  by_inputs)
        for entry in sys_comparisons:
            entry["level"] = "system"
            _say_systems(entry)
        for name in metrics:
            body["metrics"][name]["system"] = system[name]
            for entry in system[name].values():
                _say_systems(entry)
        comparisons += sys_comparisons
        body["systems"] = {"count": int(count), "labels": [str(label) for label in labels],
                           "means": _means_by_system(as_sent, order, groups, drawn_labels, count)}
    body["comparisons"] = with_holm(comparisons)
    body["resampling"] = resampling
    body["agreement"] = None if units is None else _agreement(units, confidence, resamples, seed)
    return body


def _agreement(units: list[np.ndarray], confidence: float, resamples: int, seed: int) -> dict[str, Any]:
    """Krippendorff's alpha, interval and ordinal, each with its percentile interval over resamples of the
    items that have two ratings or more (each drawn with all its ratings; the raters are not resampled)."""
    # In an order of their ratings, as the correlations' items are (canonical_order): the same rows sent in
    # another order draw the same resamples.
    pairable = sorted((np.sort(u) for u in pairable_units(units)), key=lambda u: (u.size, u.tolist()))
    interval, ordinal = krippendorff_alpha_interval(pairable), krippendorff_alpha_ordinal(pairable)
    reason = ("no item has two ratings, or the ratings never vary" if interval is None else
              "resampling is off (resamples = 0)" if resamples == 0 else
              too_few_resamples(confidence, resamples) if resamples < min_resamples(confidence) else
              f"too few items with two ratings or more for a bootstrap (n = {len(pairable)}, need at least "
              f"{MIN_BOOTSTRAP})" if len(pairable) < MIN_BOOTSTRAP else None)
    intervals: list[list[float] | None] = [None, None]
    if reason is None:
        drawn = _alpha_resamples(pairable, resamples, seed)
        intervals = [percentile_interval(alphas, confidence) for alphas in drawn]
    if reason is None and None in intervals:
        reason = (f"alpha is undefined in more than {MAX_UNDEFINED_SHARE:.0%} of the resamples (their ratings "
                  "never vary)")
    body = {"krippendorff_alpha": interval, "krippendorff_alpha_ci": intervals[0],
            "krippendorff_alpha_ordinal": ordinal, "krippendorff_alpha_ordinal_ci": intervals[1],
            "raters_per_item": float(np.mean([u.size for u in units])), "metric": "interval",
            "pairable_items": len(pairable),
            "resampling": {"method": "percentile bootstrap", "confidence": confidence, "resamples": resamples,
                           "seed": seed, "resampled": "the items with two ratings or more, each with all its "
                                                      "ratings (the raters are not resampled)"}}
    return {**body, "reason": reason} if reason else body


def _alpha_resamples(pairable: list[np.ndarray], resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Interval and ordinal alpha on `resamples` draws of the items (resample_indices' draws with `seed`),
    drawn a chunk of rows at a time: beside the item level's own draws, a whole second matrix would double
    the request's peak memory at the limits (DIALSCORE_MAX_BOOTSTRAP_WORK)."""
    rng, rows = np.random.default_rng(seed), max(1, _ALPHA_CHUNK_CELLS // len(pairable))
    items = AlphaResamples(pairable)
    parts: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
    for start in range(0, resamples, rows):
        draws = rng.integers(0, len(pairable), size=(min(rows, resamples - start), len(pairable)))
        for by_rank, found in zip((False, True), parts):
            found.append(items.alphas(draws, by_rank))
    return np.concatenate(parts[0]), np.concatenate(parts[1])


def _means_by_system(given: dict[str, np.ndarray], order: np.ndarray, groups: np.ndarray, labels: np.ndarray,
                     count: int) -> dict[str, dict[str, Any]]:
    """Each system's items and the means the system level correlates, on the scale given (the statistics
    read them rescaled by a power of two): {label: {"n", "human", "metrics": {name: mean}}}."""
    sizes = np.bincount(groups, minlength=count)
    by_group = {name: _system_means(values[order], groups, count) for name, values in given.items()}
    return {str(labels[g]): {"n": int(sizes[g]), "human": float(by_group["human"][g]),
                             "metrics": {name: float(by_group[name][g]) for name in given if name != "human"}}
            for g in np.argsort(labels, kind="stable")}


def _without_items_reason(draws: Resamples, groups: np.ndarray, inputs: np.ndarray, labels: np.ndarray,
                          count: int) -> str:
    """The reason for undefined resamples where some had a system without items, else the usual one."""
    empty = systems_without_items(draws, groups, inputs, count)
    if not empty.any():
        return UNDEFINED_REASON
    answered = np.bincount(np.unique(inputs * count + groups) % count, minlength=count)
    return without_items_reason(empty, [str(label) for label in labels], answered.tolist(), int(inputs.max()) + 1)


def _say_systems(entry: dict[str, Any]) -> None:
    """System-level reasons count systems, not items (the bootstrap's items stay items)."""
    if entry.get("reason", "").startswith("too few items (n ="):
        entry["reason"] = entry["reason"].replace("too few items", "too few systems", 1)

