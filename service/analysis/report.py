"""Markdown tables of the /correlate and /human-eval results, for terminals and docs."""
from __future__ import annotations

import json
from typing import Any

from service.stats.human_eval import OVERALL


def _num(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        if value != 0 and abs(value) < 10 ** -digits:
            return f"{value:.1e}"
        return f"{value:.{digits}f}"
    return str(value)


def _ci(ci: list[float] | None) -> str:
    return "—" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def _p(entry: dict[str, Any]) -> str:
    """A p-value, `± its Monte Carlo standard error` where it is a Monte Carlo estimate, or `floor 1/(B+1)` where
    it sits at its bootstrap's floor: smaller than B resamples resolve, neither a figure nor a bound."""
    if entry.get("p_at_floor") and entry.get("p"):
        return f"floor 1/{round(1 / entry['p'])}"
    error = entry.get("p_mc_se")
    defined = f" (B = {entry['resamples_defined']} defined)" if entry.get("resamples_defined") else ""
    return _num(entry.get("p")) + ("" if error is None or entry.get("p") is None else f" ± {_num(error)}") + defined


def _resampling(summary: dict[str, Any] | None) -> str:
    """One line naming what a level's intervals and p-values come from: method, level, B, seed, design."""
    if summary is None:
        return ""
    line = (f"{summary['method']}, {summary['confidence']:.12g} intervals, B = {summary['resamples']} resamples, "
            f"seed {summary['seed']}, design `{summary['design']}`: {summary['resampled']}. p: {summary['p']}.")
    if "reason" in summary:
        line += f" No interval: {summary['reason']}."
    return f"Resampling: {line}\n\n"


def _system_ci(system: dict[str, Any]) -> str:
    """A /human-eval system's interval, or in its place why it has none (answers from before the reason was
    recorded carry only the null)."""
    if system.get("overall_z_ci"):
        return _ci(system["overall_z_ci"])
    return f"none: {system['overall_z_ci_reason']}" if system.get("overall_z_ci_reason") else "—"


def _tool(result: dict[str, Any]) -> list[str]:
    """The tool's version that computed the result (answers from before it was recorded carry none)."""
    return [f"dialscore {result['dialscore']}"] if result.get("dialscore") else []


def _scored_by(result: dict[str, Any]) -> list[str]:
    """The input file and each model's version and options, where the command recorded them."""
    given = result.get("input") or {}
    lines = [f"Input: `{given['file']}` ({given['format']}, SHA-256 {given['sha256'][:16]}...)"] if given else []
    models = given.get("models") or {}
    if models:
        lines.append("Scored by: " + "; ".join(
            f"{name} {about['version']}" + (f" with options {json.dumps(about['options'])}" if about.get("options")
                                            else "") for name, about in models.items()))
    return lines


def _trained_note(result: dict[str, Any], *names: str) -> str:
    """Where a metric read some of the items in training: how many, on each of its rows and comparisons."""
    trained = (result.get("input") or {}).get("trained") or {}
    return "; ".join(f"{trained[name]} of {result['n']} items are {name}'s training items: not held out"
                     for name in names if trained.get(name))


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


METHOD_NAMES = {"kendall": "kendall tau-b"}  # tau-b: ties corrected, as scipy.stats.kendalltau computes it


def correlate_markdown(result: dict[str, Any]) -> str:
    """Correlations per level (r, CI, p, n, reason) and the pairwise comparisons."""
    agreement = result.get("agreement")
    items = f"Items: {result['n']}" + (f" ({result['input_notes']})" if result.get("input_notes") else "")
    if agreement:
        items += (f"; the human side of each is the mean of its ratings ({agreement['raters_per_item']:.2f} an item "
                  "on average)")
    parts: list[str] = [*_tool(result), *_scored_by(result), items]
    levels = ["item"] + (["system"] if "systems" in result else [])
    for level in levels:
        rows = []
        for name, per_level in result["metrics"].items():
            for method, entry in per_level[level].items():
                note = [entry.get("reason", entry.get("ci_reason", entry.get("p_reason", ""))), _trained_note(result, name)]
                rows.append([name, METHOD_NAMES.get(method, method), _num(entry["r"]), _ci(entry.get("ci")), _p(entry),
                             str(entry["n"]), "; ".join(part for part in note if part)])
        parts.append(f"### {level.capitalize()} level\n\n"
                     + _resampling(result.get("resampling", {}).get(level))
                     + _table(["metric", "method", "r", "CI", "p", "n", "note"], rows))
    means = (result.get("systems") or {}).get("means")
    if means:
        names = list(result["metrics"])
        parts.append("### System means (what the system level correlates)\n\n" + _table(
            ["system", "items", "human", *names],
            [[label, str(m["n"]), _num(m["human"]), *(_num(m["metrics"][name]) for name in names)]
             for label, m in means.items()]))
    if result["comparisons"]:
        rows = [[c["level"], c["a"], c["b"], METHOD_NAMES.get(c["method"], c["method"]), c["test"], _num(c["delta"]), _p(c),
                 _num(c.get("p_holm")) + (" (floor)" if c.get("p_at_floor") else ""), _ci(c.get("ci")),
                 "; ".join(part for part in (c.get("reason", ""), _trained_note(result, c["a"], c["b"])) if part)]
                for c in result["comparisons"]]
        said = [(level, summary["comparisons"]) for level, summary in result.get("resampling", {}).items() if summary]
        parts.append("### Comparisons (delta = r_a - r_b)\n\n"
                     + "".join(f"Tests, {level} level: {line}; its rows resample as its table above says.\n\n"
                               for level, line in said)
                     + _table(["level", "a", "b", "method", "test", "delta", "p", "p (Holm)", "CI of delta", "note"], rows))
    if agreement:
        drawn = agreement.get("resampling")
        alphas = ", ".join(f"({metric}) = {_num(agreement.get(key))}" + (f" {_ci(agreement.get(key + '_ci'))}"
                                                                      if agreement.get(key + "_ci") else "")
                           for metric, key in (("interval", "krippendorff_alpha"),
                                               ("ordinal", "krippendorff_alpha_ordinal")))
        drawn_line = (f"; intervals: {drawn['method']} at {drawn['confidence']:g}, {drawn['resamples']} resamples "
                      f"(seed {drawn['seed']}) of {drawn['resampled']}: {agreement['pairable_items']}" if drawn else "")
        parts.append(f"Inter-rater agreement: Krippendorff's alpha {alphas}, {agreement['raters_per_item']:.2f} "
                     f"ratings per item{drawn_line}"
                     + (f"; no interval: {agreement['reason']}" if agreement.get("reason") else ""))
    return "\n\n".join(parts) + "\n"


def human_eval_markdown(result: dict[str, Any]) -> str:
    """Rater quality control, the system table (overall z, per-criterion z, raw) and significance."""
    raters = result["raters"]
    criteria = result["criteria"]
    kept = (f"{result['kept_ratings']:,} dialogues kept (N = {result['kept_ratings'] * len(criteria):,} ratings: "
            f"dialogues x {len(criteria)} criteria, as Ji et al. 2022 count N).")
    qc = result.get("quality_control")
    if qc:
        parts = [*_tool(result), f"Raters: {len(raters['passed'])} of {raters['total']} passed quality control "
                 f"({100 * raters['pass_rate']:.1f}%); {kept}",
                 f"Quality control: {qc['test']} (system `{qc['qc_system']}`; criteria "
                 f"{', '.join(qc['criteria'])}); a rater passes at {qc['passes']} = {qc['alpha']:g}."]
    else:  # no quality-control system: every rater is kept, none was tested
        parts = [*_tool(result), f"Raters: {raters['total']}, all kept: no quality-control system was given, so "
                                  f"none was tested; {kept}"]
    parts += [f"**Warning:** {warning}" for warning in result.get("warnings", [])]
    reversed_names = set(result.get("reversed", []))
    marked = [f"{c} (reversed)" if c in reversed_names else c for c in criteria]
    rows = [[str(i + 1), s["system"], str(s["n"]), str(s["n_ratings"]), f"{s['overall_z']:.3f}",
             _system_ci(s)] + [f"{s['z'][c]:.3f}" for c in criteria] + [f"{s['raw'][OVERALL]:.2f}"]
            for i, s in enumerate(result["systems"])]
    note = ""
    if reversed_names:
        note = ("\n\n(reversed): a negative criterion, scored as low + high - score before anything else, so that "
                "higher is better in every column.")
    intervals = result["intervals"]
    level = f"{100 * intervals['confidence']:g}% CI"
    parts.append("### Systems, best first (mean z over passed raters)\n\n"
                 f"n: dialogues; N: ratings, dialogues x criteria (Ji et al.'s N); {level}: {intervals['method']}"
                 + (f"; it resamples {intervals['resampled']}" if intervals.get("resampled") else "") + ".\n\n"
                 + _table(["#", "system", "n", "N", "overall z", level] + marked + ["raw overall"], rows) + note)
    names = [s["system"] for s in result["systems"]]
    for key, heading in (("significance", "### One-sided rank-sum p (row better than column), uncorrected\n\n"
                                          "Each test alone, as Ji et al. report them; a reading of several cells at "
                                          "once takes the Holm-adjusted table below."),
                         ("significance_holm", "### The same p, Holm-adjusted\n\n"
                                               + result["significance_tests"]["significance_holm"].replace(
                                                   "`family`", str(result["significance_tests"]["family"])) + ".")):
        rows = [[a] + ["" if a == b else _num(result[key][a][b]) for b in names] for a in names]
        parts.append(f"{heading}\n\n" + _table(["p"] + names, rows))
    if qc and "upstream" not in result:  # why each rater passed or failed (the comparison with upstream lists them)
        reasons, failed = raters.get("reasons", {}), set(raters["failed"])
        rows = [[rater, _num(p), "fail" if rater in failed else "pass", reasons.get(rater, "")]
                for rater, p in sorted(raters["p"].items())]
        parts.append(f"### Raters\n\nEach rater's quality-control p (passes at p < {qc['alpha']:g}), and why a "
                     "rater has none.\n\n" + _table(["rater", "p", "quality control", "no p because"], rows))
    return "\n\n".join(parts) + "\n"


def upstream_markdown(comparison: dict[str, Any]) -> str:
    """How a reproduction agrees with the results published with the data."""
    lines = [f"Workers compared: {comparison['workers']}; same pass/fail: {comparison['agree']} "
             f"({100 * comparison['agreement']:.1f}%)."]
    if comparison["disagreements"]:
        rows = [[d["rater"], _num(d["p"]), d["ours"], d["upstream"]] for d in comparison["disagreements"]]
        lines.append(_table(["worker", "p", "ours", "upstream"], rows))
    if comparison.get("per_worker"):
        rows = [[d["rater"], _num(d["p"], 4), d["ours"], d["upstream"], "yes" if d["ours"] == d["upstream"] else "NO"]
                for d in comparison["per_worker"]]
        lines.append("<details><summary>Every worker: quality-control p, our decision, upstream's</summary>\n\n"
                     + _table(["worker", "p", "ours", "upstream", "same"], rows) + "\n\n</details>")
    if comparison.get("z_max_abs_diff") is not None:
        lines.append(f"z-scores compared: {comparison['z_compared']}; largest absolute difference "
                     f"{comparison['z_max_abs_diff']:.2e}" + (" (identical)." if comparison["z_max_abs_diff"] == 0 else "."))
    return "\n\n".join(lines) + "\n"


def pairs_markdown(pairs: dict[str, list[float]]) -> str:
    """Quartiles of the between-rater correlations, passed and failed (Ji et al.'s Figure 2)."""
    import numpy as np

    rows = []
    for label, values in pairs.items():
        if values:
            q1, q2, q3 = np.percentile(values, [25, 50, 75])
            share = float(np.mean(np.asarray(values) >= 0.5))
            rows.append([label, str(len(values)), f"{q1:.3f}", f"{q2:.3f}", f"{q3:.3f}", f"{100 * share:.1f}%"])
        else:
            rows.append([label, "0", "—", "—", "—", "—"])
    return _table(["raters", "pairs", "r, 25th pct", "median r", "r, 75th pct", "r >= 0.5"], rows) + "\n"
