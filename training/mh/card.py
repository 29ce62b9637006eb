"""M_H's card: the manifest's `card` and the README.md, from the figures `train-mh` measured."""
from __future__ import annotations

from typing import Any

from service.scorers.mh import proxies
from training.core.card import ModelCard, code, paragraphs


MACHINE = "2-core x86_64 CPU, no GPU"


CITATION = ("Ghandeharioun, Shen, Jaques, Ferguson, Jones, Lapedriza, Picard. Approximating Interactive Human "
            "Evaluation with Self-Play for Open-Domain Dialog Systems. NeurIPS 2019.")


LICENCE = ("Coefficients fitted on ConvAI2 human-bot dialogues (DeepPavlov/convai, licence not stated upstream); "
           "validated on iEval (CC BY 4.0) and ConTurE (CC BY 4.0). Uses GloVe 6B (PDDL / Apache-2.0), "
           "all-MiniLM-L6-v2 (Apache-2.0), VADER (MIT).")


SUBSTITUTES = ("VADER (vaderSentiment 3.3.2) in place of DeepMoji, which cannot be installed here: sentiment is "
               "VADER's compound score and sentiment coherence the cosine of VADER's (neg, neu, pos) "
               "distributions instead of 64-emoji distributions; all-MiniLM-L6-v2 in place of InferSent for "
               "semantic similarity; GloVe 6B 50-d in place of word2vec for the word coherences.")


VARIANT_TEXT = (
    "human-bot (default): the speakers as given, the setting the regression was fitted in. "
    "bot-only (the paper's -B): only the bot's turns are read. self-play (-B/B): a conversation the bot held "
    "with itself; speaker labels are ignored. In both, every utterance plays both roles, as the paper's -B/B "
    "(\"between consecutive bot utterances\") reads: the -U proxies (sentiment, transition, min-max, laughter, "
    "words) and question read every utterance, and the -U/B proxies (sentiment coherence, semantic "
    "similarity, the word coherences) compare every consecutive pair. (Until mh 2026.11.2 the utterances "
    "alternated roles, which compared only half the pairs and moved a score when the same utterances were "
    "shifted by one place.) The human-bot coefficients are applied unchanged in every variant, as the paper "
    "does.")


PROXY_RULES = (
    "question: 1 when a bot turn has '?' or one of nine question words, else 0 (the authors' reward code gives "
    "0.5 for each); laughter: the 'ha's of words made only of 'ha's ('haha' 2; 'lol', 'hehe' and emoji 0); "
    f"VADER reads an utterance's first {proxies.MAX_SENTIMENT_WORDS} words (the longest turn of the fitting and transfer "
    "data has 100). Turns with empty text are left out, as training left them "
    "out. Each proxy is held to its range in the fitting data before the regression (one turn of 'ha' x 1000 "
    "had set the score alone).")


LIMITATIONS = (
    "M_H is a linear regression of surface proxies and can be gamed, as the paper warns. Measured with "
    "`python -m training selfplay --bot scripted:laugh-echo --conversations 20` and `--bot scripted:repeat` "
    "(proxies held to their fitting range): a scripted bot that answers every turn with \"haha, why "
    "do you say '<the last turn>'? tell me more!\" scores 4.00, and one that always answers \"i love it!\" 3.28, "
    "both above the trained VHRED's 3.10: "
    "laughter, sentiment, question words and repetition-as-coherence all push the score up (before the range "
    "was held, the first bot scored the maximum, 5.0). Use it to compare real generative bots, never as a "
    "reward to optimise.")


def _fmt(value: Any, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _corr(entry: dict[str, Any]) -> str:
    if entry.get("pearson") is None:
        return f"r n/a (n={entry['n']})"
    p = "p < 0.001" if entry["p"] < 0.001 else f"p = {entry['p']:.3f}"
    return (f"r = {_fmt(entry['pearson'])} ({p}, 95% CI {_fmt(entry['ci'][0], 2)}.."
            f"{_fmt(entry['ci'][1], 2)}), rho = {_fmt(entry['spearman'])}, n = {entry['n']}")


def card_fields(result: dict[str, Any]) -> dict[str, Any]:
    """The manifest's `card`: what /models serves of this run."""
    lbo = result["leave_bot_out"]
    return {
        "summary": "M_H (Ghandeharioun et al. 2019): a linear regression of 11 conversation proxies (sentiment, "
                   "semantic and engagement) fitted to human 1-5 ratings of whole human-bot conversations; "
                   "scores a whole dialogue on the rating scale.",
        "inputs": "turns: [{speaker: user|bot, text}], oldest first; option variant human-bot|bot-only|self-play.",
        "substitutes": SUBSTITUTES,
        "variants": VARIANT_TEXT,
        "proxy_rules": PROXY_RULES,
        "training_data": f"ConvAI2 human-bot dialogues with the partner's eval_score and a bot id: "
                         f"{result['data']['convai2_conversations']} conversations, {len(result['data']['bots'])} "
                         f"bots (data_intermediate.json and data_volunteers.json).",
        "licence": LICENCE,
        "training_time": f"{result['seconds']:.0f} s on a {MACHINE} (proxies included)",
        "coefficients": result["coefficients"], "intercept": result["intercept"],
        "coefficient_stability": result["stability"],
        "correlations": {
            "convai2_bot_level_leave_bot_out": lbo["bot"],
            "convai2_conversation_level_leave_bot_out": lbo["conversation"],
            "convai2_bot_level_reply_length_baseline": result["baseline_reply_length"]["bot"],
            "convai2_bot_level_bot_only_B": result["bot_only_B"]["fitted_on_human_bot"]["bot"],
            "ieval_conversation_level": result["transfer"]["ieval"]["conversation"],
            "ieval_bot_level": result["transfer"]["ieval"].get("bot"),
            "conture_conversation_level": result["transfer"]["conture"]["conversation"],
            "paper_bot_level": "r > .7 (p < .05), self-play M_H-B/B vs interactive quality, 12 bots",
        },
        "limitations": LIMITATIONS,
        "citation": CITATION,
    }


def _stability_table(result: dict[str, Any]) -> list[str]:
    rows = ["| proxy | coefficient (all bots) | mean over folds | sd | min | max | same sign in every fold |",
            "|---|---|---|---|---|---|---|"]
    for name in proxies.PROXIES:
        s = result["stability"][name]
        rows.append(f"| {name} | {result['coefficients'][name]:+.3f} | {s['mean']:+.3f} | {s['sd']:.3f} | "
                    f"{s['min']:+.3f} | {s['max']:+.3f} | {'yes' if s['same_sign'] else 'no'} |")
    s = result["stability"]["intercept"]
    rows.append(f"| intercept | {result['intercept']:+.3f} | {s['mean']:+.3f} | {s['sd']:.3f} | {s['min']:+.3f} | "
                f"{s['max']:+.3f} | |")
    return rows


def _proxy_table(result: dict[str, Any]) -> list[str]:
    rows = ["| proxy | conversation r | conversation rho | bot r | bot rho | missing |", "|---|---|---|---|---|---|"]
    for name in proxies.PROXIES:
        p = result["proxies"][name]
        rows.append(f"| {name} | {_fmt(p['conversation']['pearson'])} | {_fmt(p['conversation']['spearman'])} | "
                    f"{_fmt(p['bot']['pearson'])} | {_fmt(p['bot']['spearman'])} | {p['missing']} |")
    return rows


def _headline(result: dict[str, Any]) -> list[str]:
    lbo = result["leave_bot_out"]
    b = result["bot_only_B"]
    t = result["transfer"]
    return [
        "| measure | bot level (ConvAI2, leave-bot-out) | conversation level |",
        "|---|---|---|",
        f"| M_H (human-bot) | {_corr(lbo['bot'])} | {_corr(lbo['conversation'])} |",
        f"| M_H-B (bot turns only, human-bot coefficients) | {_corr(b['fitted_on_human_bot']['bot'])} | "
        f"{_corr(b['fitted_on_human_bot']['conversation'])} |",
        f"| M_H-B refitted on bot-side proxies | {_corr(b['refitted_on_B']['bot'])} | "
        f"{_corr(b['refitted_on_B']['conversation'])} |",
        f"| bot's mean reply length (words) | {_corr(result['baseline_reply_length']['bot'])} | "
        f"{_corr(result['baseline_reply_length']['conversation'])} |",
        "| paper: M_H-B/B on self-play | r > .7, p < .05 (12 bots) | |",
        "",
        _comparison(result),
        "",
        "Sensitivity to the minimum number of user-then-bot exchanges per conversation (bot level, Pearson). The "
        "default, 3, follows the paper (raters chatted for at least 3 turns); it was set after the 1-exchange run "
        "had been seen, so read the whole table rather than one row:",
        "",
        "| min exchanges | conversations | M_H | reply length | M_H conversation level |",
        "|---|---|---|---|---|",
        *[f"| {row['min_pairs']} | {row['conversations']} | {_fmt(row['mh_bot']['pearson'])} | "
          f"{_fmt(row['length_bot']['pearson'])} | {_fmt(row['mh_conversation']['pearson'])} |"
          for row in result["sensitivity_min_pairs"]],
        "",
        "Transfer (the final ConvAI2 fit applied unchanged):",
        "",
        f"- iEval ({t['ieval']['conversations']} conversations, overall Rating 1-4): conversation level "
        f"{_corr(t['ieval']['conversation'])}; against the mean Likert score {_corr(t['ieval']['conversation_likert_mean'])}; "
        f"bot level (4 bots) {_corr(t['ieval']['bot'])}; reply-length baseline at conversation level "
        f"{_corr(t['ieval']['length_baseline'])}, at bot level {_corr(t['ieval']['length_bot'])}.",
        f"- ConTurE ({t['conture']['conversations']} conversations, mean human (overall) 1-5): conversation level "
        f"{_corr(t['conture']['conversation'])}; reply-length baseline {_corr(t['conture']['length_baseline'])}.",
    ]


def _comparison(result: dict[str, Any]) -> str:
    c = result["mh_vs_length_bot_level"]
    boot, williams = c["paired_bootstrap_over_bots"], c["williams"]
    delta = boot.get("delta")
    ci = boot.get("ci") or [None, None]
    return (f"M_H against reply length at bot level: difference of Pearson r = {_fmt(delta)} (paired bootstrap over "
            f"the bots: 95% CI {_fmt(ci[0], 2)}..{_fmt(ci[1], 2)}, p = {_fmt(boot.get('p'))}; Williams' test "
            f"p = {_fmt(williams.get('p'))}). {_verdict(delta, boot.get('p'), len(result['data']['bots']))}")


def _verdict(delta: float | None, p: float | None, bots: int) -> str:
    if delta is None or p is None:
        return "The difference is undefined."
    if delta > 0 and p < 0.05:
        return f"M_H beats the reply-length baseline significantly over {bots} bots."
    if delta > 0:
        return f"M_H is above the reply-length baseline, but not significantly with {bots} bots."
    return (f"M_H does NOT beat the reply-length baseline on ConvAI2 (the difference is not significant either "
            f"way with {bots} bots).")


USES = ("Scoring whole conversations on the 1-5 rating scale, to compare dialogue systems at bot level as the "
        "paper does: human-bot conversations, a bot's own turns (bot-only) or conversations a bot held with itself "
        "(self-play; `python -m training selfplay`). Not a reward to optimise (see Limitations and bias).")


def model_card(result: dict[str, Any], version: str) -> ModelCard:
    d = result["data"]
    return ModelCard(
        title=f"mh {version}: the hybrid conversation metric M_H",
        description=paragraphs(
            "What it is: the hybrid metric of Ghandeharioun et al. 2019. Eleven proxies are computed from a whole "
            "conversation (formulas in `service/scorers/mh/proxies.py`): user sentiment, sentiment transition, sentiment "
            "min-max slope, laughter, user-bot sentiment coherence, semantic similarity, average / extrema / greedy "
            "word coherence, the bot's question score and the user's number of words. M_H = sum_i lambda_i z_i + "
            "lambda_0, with z_i the proxy held to its range in the fitting data and standardised by the training mean "
            "and deviation (a proxy that cannot be computed, e.g. no user turn before a bot turn, takes the mean); "
            "the result is clipped to [1, 5].",
            f"Substitutes for the paper's models: {SUBSTITUTES}"),
        intended_uses=USES,
        inputs_and_outputs=paragraphs(
            "Inputs: `{\"turns\": [{\"speaker\": \"user\"|\"bot\", \"text\": \"...\"}]}`; options `variant` and "
            "`proxies` (true: every proxy value in `details`). Uses the `glove-50d` and `minilm-l6` components.",
            f"Variants: {VARIANT_TEXT}",
            f"Proxy rules: {PROXY_RULES}"),
        training_data_and_licence=paragraphs(
            f"Training data: {d['convai2_conversations']} ConvAI2 human-bot conversations rated 1-5 by the human "
            f"partner, with at least {d['min_pairs']} user-then-bot exchange(s), from {len(d['bots'])} bots "
            "(`data_intermediate.json`, `data_volunteers.json`; bot ids kept per round). The four `export_*` files "
            "name no bot and are not used. Licences: " + LICENCE,
            f"Training time: {result['seconds']:.0f} s on a {MACHINE} (proxies for "
            f"{d['convai2_conversations']} + iEval + ConTurE conversations, leave-bot-out folds, final fit)."),
        evaluation="\n".join([
            "### Measured correlations (Pearson r, Spearman rho)", "", *_headline(result), "",
            "### Coefficients (standardised proxies) and their stability across the leave-bot-out folds", "",
            *_stability_table(result), "",
            "### Each proxy alone (ConvAI2)", "", *_proxy_table(result)]),
        limitations_and_bias=LIMITATIONS,
        reproduce=code("python -m training train-mh"),
        citation=CITATION)
