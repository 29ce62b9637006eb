"""M_H's card: its templates (cards/mh.md, cards/mh.json, cards/measured.md) filled from what `train-mh` measured.

cards/measured.md, the correlations against people, is also the heart of M_H's section of docs/evaluation.md."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.scorers.mh import proxies
from training.core.card import Templates, render, render_fields, terms_line

TEMPLATES = Templates(__file__)
NAME = "mh"


def _fmt(value: Any, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def corr(entry: Mapping[str, Any]) -> str:
    """A correlation as the card shows it: r with its p and interval, rho, n."""
    if entry.get("pearson") is None:
        return TEMPLATES.phrase("corr_undefined", n=entry["n"])
    p = TEMPLATES.phrase("p_small") if entry["p"] < 0.001 else TEMPLATES.phrase("p", p=f"{entry['p']:.3f}")
    return TEMPLATES.phrase("corr", pearson=_fmt(entry["pearson"]), p=p, low=_fmt(entry["ci"][0], 2),
                            high=_fmt(entry["ci"][1], 2), spearman=_fmt(entry["spearman"]), n=entry["n"])


def verdict(delta: float | None, p: float | None, bots: int) -> str:
    """Whether M_H beats the reply-length baseline at bot level, by the paired bootstrap's p."""
    if delta is None or p is None:
        return TEMPLATES.phrase("verdict_undefined")
    if delta > 0 and p < 0.05:
        return TEMPLATES.phrase("verdict_significant", bots=bots)
    return TEMPLATES.phrase("verdict_above" if delta > 0 else "verdict_not", bots=bots)


def stability_table(coefficients: Mapping[str, float], intercept: float, stability: Mapping[str, Any]) -> str:
    rows = ["| proxy | coefficient (all bots) | mean over folds | sd | min | max | same sign in every fold |",
            "|---|---|---|---|---|---|---|"]
    for name in proxies.PROXIES:
        s = stability[name]
        rows.append(f"| {name} | {coefficients[name]:+.3f} | {s['mean']:+.3f} | {s['sd']:.3f} | "
                    f"{s['min']:+.3f} | {s['max']:+.3f} | {'yes' if s['same_sign'] else 'no'} |")
    s = stability["intercept"]
    rows.append(f"| intercept | {intercept:+.3f} | {s['mean']:+.3f} | {s['sd']:.3f} | {s['min']:+.3f} | "
                f"{s['max']:+.3f} | |")
    return "\n".join(rows)


def proxy_table(result: Mapping[str, Any]) -> str:
    rows = ["| proxy | conversation r | conversation rho | bot r | bot rho | missing |", "|---|---|---|---|---|---|"]
    for name in proxies.PROXIES:
        p = result["proxies"][name]
        rows.append(f"| {name} | {_fmt(p['conversation']['pearson'])} | {_fmt(p['conversation']['spearman'])} | "
                    f"{_fmt(p['bot']['pearson'])} | {_fmt(p['bot']['spearman'])} | {p['missing']} |")
    return "\n".join(rows)


def figures(result: Mapping[str, Any], version: str) -> dict[str, Any]:
    """The figures of M_H's card, from a `train-mh` fit's result."""
    lbo, b, t, d = result["leave_bot_out"], result["bot_only_B"], result["transfer"], result["data"]
    length = result["baseline_reply_length"]
    boot = result["mh_vs_length_bot_level"]["paired_bootstrap_over_bots"]
    williams = result["mh_vs_length_bot_level"]["williams"]
    ci = boot.get("ci") or [None, None]
    return {
        "version": version, "conversations": d["convai2_conversations"], "min_pairs": d["min_pairs"],
        "bots": len(d["bots"]), "seconds": f"{result['seconds']:.0f}", "max_sentiment_words": proxies.MAX_SENTIMENT_WORDS,
        "mh_bot": corr(lbo["bot"]), "mh_conversation": corr(lbo["conversation"]),
        "b_bot": corr(b["fitted_on_human_bot"]["bot"]), "b_conversation": corr(b["fitted_on_human_bot"]["conversation"]),
        "refit_bot": corr(b["refitted_on_B"]["bot"]), "refit_conversation": corr(b["refitted_on_B"]["conversation"]),
        "length_bot": corr(length["bot"]), "length_conversation": corr(length["conversation"]),
        "delta": _fmt(boot.get("delta")), "delta_low": _fmt(ci[0], 2), "delta_high": _fmt(ci[1], 2),
        "delta_p": _fmt(boot.get("p")), "williams_p": _fmt(williams.get("p")),
        "verdict": verdict(boot.get("delta"), boot.get("p"), len(d["bots"])),
        "sensitivity_rows": "\n".join(
            f"| {row['min_pairs']} | {row['conversations']} | {_fmt(row['mh_bot']['pearson'])} | "
            f"{_fmt(row['length_bot']['pearson'])} | {_fmt(row['mh_conversation']['pearson'])} |"
            for row in result["sensitivity_min_pairs"]),
        "ieval_conversations": t["ieval"]["conversations"], "ieval_conversation": corr(t["ieval"]["conversation"]),
        "ieval_likert": corr(t["ieval"]["conversation_likert_mean"]), "ieval_bot": corr(t["ieval"]["bot"]),
        "ieval_length": corr(t["ieval"]["length_baseline"]), "ieval_length_bot": corr(t["ieval"]["length_bot"]),
        "conture_conversations": t["conture"]["conversations"], "conture_conversation": corr(t["conture"]["conversation"]),
        "conture_length": corr(t["conture"]["length_baseline"]),
        "stability_table": stability_table(result["coefficients"], result["intercept"], result["stability"]),
        "proxy_table": proxy_table(result), "coefficients": result["coefficients"], "intercept": result["intercept"],
        "coefficient_stability": result["stability"],
        "correlations": {
            "convai2_bot_level_leave_bot_out": lbo["bot"], "convai2_conversation_level_leave_bot_out": lbo["conversation"],
            "convai2_bot_level_reply_length_baseline": length["bot"],
            "convai2_bot_level_bot_only_B": b["fitted_on_human_bot"]["bot"],
            "ieval_conversation_level": t["ieval"]["conversation"], "ieval_bot_level": t["ieval"].get("bot"),
            "conture_conversation_level": t["conture"]["conversation"],
            "paper_bot_level": TEMPLATES.phrase("paper_bot_level")}}


def measured(figures: Mapping[str, Any]) -> str:
    """The correlations against people (cards/measured.md), for the card and for docs/evaluation.md."""
    return render(TEMPLATES.readme("measured"), figures).rstrip("\n")


def card(figures: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest's card: what /models serves of this fit."""
    return render_fields(TEMPLATES.card(NAME), {**TEMPLATES.phrases(), **figures})


def readme(figures: Mapping[str, Any]) -> str:
    fields = card(figures)
    return render(TEMPLATES.readme(NAME), {**TEMPLATES.phrases(), **fields, **figures, "measured": measured(figures),
                                           "terms": terms_line(fields)})
