"""RUBER's card: the manifest's `card` and the README.md, from the run's summary (training.json)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from training.core.card import ModelCard, code
from training.core.card import write_card as write_model_card
from training.ruber.word_weights import SIF_A


CITATION = ("Chongyang Tao, Lili Mou, Dongyan Zhao, Rui Yan. RUBER: An Unsupervised Method for Automatic "
            "Evaluation of Open-Domain Dialog Systems. AAAI 2018.")


def _fmt(value) -> str:
    return "–" if value is None else f"{value:.3f}"


def paper_comparison(corr: dict, summary: dict) -> str:
    """How far the measured correlations are from the paper's Table 1, and why we think so."""
    s_u = [v["ruber s_U only"]["pearson"] for v in corr.values()
           if v.get("ruber s_U only", {}).get("pearson") is not None]
    blended = {k: v["ruber"]["pearson"] for k, v in corr.items()
               if "ruber" in v and v["ruber"].get("pearson") is not None}
    if not s_u:
        return ""
    shown = ", ".join(f"{k} {v:.3f}" for k, v in blended.items())
    return (
        "**Against the paper.** Tao et al. report Pearson 0.43 / 0.41 for s_U (retrieval / seq2seq replies), "
        "0.44-0.46 for the min, geometric and arithmetic blends, and 0.33 / 0.39 for max, which they call "
        "too lenient (section 3.2; Table 1: Douban, Chinese, 1.45 M training pairs, one retrieval and one "
        f"seq2seq system, 0-2 ratings).{_max_note(summary)} Here s_U reaches {min(s_u):.3f}-{max(s_u):.3f} (mean {np.mean(s_u):.3f}) over the dev "
        f"sets and the blend {shown}: below the paper by about {0.43 - np.mean(s_u):.2f} for s_U. Why we "
        f"think so: (1) far less training ({summary['train']['minutes']:.0f} minutes on a shared 2-core CPU, "
        f"{summary['train']['steps']:,} steps of {summary['train_config']['batch_size']} pairs, about "
        f"{summary['train']['steps'] * summary['train_config']['batch_size'] / summary['data']['train_pairs']:.1f} "
        f"passes over {summary['data']['train_pairs'] / 1000:.0f} k pairs); (2) frozen "
        "50-d GloVe instead of embeddings trained on the same corpus; (3) domain shift: the judgement "
        "sets are Reddit threads grounded in documents (DSTC7), PersonaChat and human-bot chats, while "
        "training is DailyDialog and Chit-Chat; (4) pooled GloVe is a weak s_R on short English "
        "replies: GloVe does not pull common words to the origin as the paper's premise needs (the "
        "`frequency` word weights restore that in part), so blends gain less than in the paper; (5) each dev split holds a few hundred items, so differences of ±0.1 are within noise."
    )


def _max_note(summary: dict) -> str:
    """Say so where the development data chose the blend the paper found worst."""
    if summary["blend"]["chosen"] != "max":
        return ""
    return (" Here `max` did best on the development sets (above) and is the default: with a weak s_R "
            "(pooled GloVe), taking the higher of the two scores lets s_U decide most items.")


# What a user ranking candidates must know of what the served model reads.
LIMITATIONS = (
    "- s_U reads the first 128 known words of a reply and the last 128 of a query; words outside GloVe's "
    "400,000 are dropped before both parts, so emoji and most non-English words count for nothing. Two texts "
    "whose only known tokens are the same punctuation have s_R = 1 (\"ужасно!\" against \"прекрасно!\"), and "
    "the default `max` blend then gives 1.0; a text with no known token has s_R = 0 (an audit of the served "
    "model).\n"
    "- Punctuation counts as words (GloVe has vectors for it), and curly apostrophes are other tokens than "
    "straight ones: both can change the ranking of close candidates (same audit).")


def reproduce(command: str) -> str:
    """The card's reproduce command is `make train`'s, which lifts the wall-clock cap.

    A run that ended within the default 90-minute cap records a command without --minutes; following it
    on a slower machine would stop early and give another model, so the card adds --minutes 0 then."""
    if "--minutes" in command.split():
        return code(command)
    return (f"{code(command + ' --minutes 0')}\n\nAs `make train` runs it: no wall-clock cap, so the steps alone "
            f"decide; the recorded run, `{command}`, ended within the default 90-minute cap.")


def _threads(summary: dict) -> str:
    threads = summary["threads"]
    return "one thread" if threads == 1 else f"{threads} threads"


def convergence(train: dict) -> str:
    """Whether a longer run is worth it, read from the validation history rather than asserted."""
    history, best = train["history"], train["best"]
    if not history:
        return ""
    halfway = [h["loss"] for h in history if h["step"] <= train["steps"] / 2]
    last = history[-1]
    if best["step"] < last["step"] * 0.8:
        return (f"Validation loss stopped improving after step {best['step']:,}; a longer run would not help "
                "this recipe.")
    if best["step"] < last["step"]:
        return (f"Validation loss levelled off near the end (best {best['loss']:.4f} at step {best['step']:,}, "
                f"{last['loss']:.4f} at the last evaluation, step {last['step']:,}): a longer run would gain "
                "little, if anything.")
    gained = f" (it was {min(halfway):.4f} by step {train['steps'] // 2:,})" if halfway else ""
    return (f"Validation loss was still falling late in the run{gained}: a longer run might gain a little "
            "more.")


USES = ("Scoring a reply against a human reference and its context in [0, 1], and ranking candidates that share a "
        "reference: the blend of a reference match (s_R) and a match with the context learned without human labels "
        "(s_U). `options.components: true` gives both parts (see Inputs and outputs).")


def ruber_card(summary: dict) -> ModelCard:
    """README.md: what it is, inputs, data and licences, training time and machine, correlations, citation."""
    corr = summary["correlations"]
    models = sorted({m for row in corr.values() for m in row}, key=lambda m: (not m.startswith("ruber"), m))
    rows = []
    for set_name, row in corr.items():
        cells = []
        for m in models:
            v = row.get(m)
            cells.append("n/a" if v is None or "n/a" in v else f"{_fmt(v['pearson'])} / {_fmt(v['spearman'])}")
        rows.append(f"| {set_name} | " + " | ".join(cells) + " |")
    return ModelCard(
        title="ruber",
        description=(
            "RUBER (Tao et al. 2018) as the paper describes it: a referenced score s_R, the cosine of the "
            "[max-pool; min-pool] GloVe vectors of reply and reference, and an unreferenced score s_U from two "
            "BiGRU encoders (query and reply, GloVe 6B 50-d inputs, frozen) and an MLP (tanh hidden layer, "
            "sigmoid output) on [q; r; qᵀMr], trained by negative sampling with the margin loss (Δ = "
            f"{summary['config']['margin']}). No human labels are used in training. Both scores are min-max "
            "normalised with constants from a calibration set and blended."
            + (" By default the word vectors are first scaled down for common words (`options.word_weights`, "
               "below); the paper's exact pooling is `\"none\"`." if summary["blend"]["word_weights"] == "frequency"
               else "")),
        intended_uses=USES,
        inputs_and_outputs="\n".join([
            (f"- `context` (the query is the last {summary['config']['query_turns']} turn(s), at most "
             f"{summary['config']['max_words']} words kept), `response`, `reference` (required)."),
            ("- score in [0, 1]; `options.blend`: `min` | `max` | `geometric` | `arithmetic` (default "
             f"`{summary['blend']['chosen']}`, chosen on development data); `options.components: true` adds "
             "`{\"s_ref\", \"s_unref\"}` (normalised) to `details`; `options.word_weights`: "
             f"{' | '.join(f'`{w}`' for w in summary['blend']['by_word_weights'])} (default "
             f"`{summary['blend']['word_weights']}`): `frequency` scales each word vector by a / (a + p(w)) "
             f"(Arora et al. 2017, a = {SIF_A:g}, p from the training corpora) before s_R's pooling; `none` is the "
             "paper's formula. Why: the paper pools by max and min because embedding training pulls common words "
             "to the origin; GloVe does not (the vector of \"the\" is as long as a rare word's), so unweighted "
             "pooling is led by common words."),
            ("- Files: `query_encoder.onnx`, `reply_encoder.onnx` (embedded words [batch, time, 50] + lengths -> "
             f"[batch, {2 * summary['config']['hidden']}]), `head.onnx` (query, reply -> s_U); word vectors from the "
             "`glove-50d` component; `word_weights.npy` (one weight per `glove-50d` row, for "
             "`options.word_weights: \"frequency\"`); `training.json` (this run's measurements).")]),
        training_data_and_licence="\n".join([
            (f"- Data: {summary['data']['train_pairs']:,} (previous turn, reply) pairs from the train splits of "
             "DailyDialog (CC BY-NC-SA 4.0) and the BYU Chit-Chat dataset (MIT, `chitchat-dataset` 0.9.0); "
             f"validation on {summary['data']['valid_pairs']:,} pairs of their validation splits "
             f"(fingerprints {summary['data']['train_fingerprint']}, {summary['data']['valid_fingerprint']}). "
             + (f"{summary['data']['dev_text_dialogues_left_out']:,} train dialogues that hold a development context or "
                "(query, reply) pair were left out (training/data/holdout.py). "
                if "dev_text_dialogues_left_out" in summary["data"] else "")
             + "Negatives: for each query, the reply of another pair of the same training batch (the paper, its "
             "eq. 7, draws a random training reply). Batches are cut from length-sorted windows to keep padding "
             "small, so a negative is close in length to the true reply (their lengths correlate at r = 0.55 "
             "over the training pairs, against 0.01 for a uniform draw): length alone cannot tell them apart."),
            ("- Calibration (min-max constants): DailyDialog++ dev (Sai et al. 2020), "
             f"{summary['calibration']['items']:,} candidates (good, random and adversarial) against a human "
             f"reference: s_R in {summary['normalisation']['s_ref']}"
             + (f" (with frequency word weights {summary['normalisation']['s_ref_frequency']})"
                if "s_ref_frequency" in summary["normalisation"] else "")
             + f", s_U in {summary['normalisation']['s_unref']}."),
            (f"- {summary['train']['steps']:,} Adam steps (batch {summary['train_config']['batch_size']}, lr "
             f"{summary['train_config']['learning_rate']}), best validation step {summary['train']['best']['step']} "
             f"(ranking loss {summary['train']['best']['loss']:.4f}, true reply above a random one "
             f"{100 * summary['train']['best']['accuracy']:.1f}% of the time); "
             f"{summary['train']['minutes']:.1f} min on a 2-core x86_64 CPU, no GPU ({_threads(summary)}, torch "
             f"{torch.__version__}). {convergence(summary['train'])}"),
            "- ONNX parity with torch (max abs difference, several shapes incl. batch 1 and 300 words): "
            + ", ".join(f"{k} {v:.1e}" for k, v in summary["parity"].items()) + ".",
            "- Licence of the weights: trained on DailyDialog, so CC BY-NC-SA 4.0 terms apply; GloVe PDDL 1.0."]),
        evaluation="\n".join([
            "### Measured choices (dev splits of the judgement sets)", "",
            "Query length (mean dev Pearson of s_U over all sets): "
            + ", ".join(f"{t} turn(s) {v:.3f}" for t, v in summary["query_turns"]["mean_pearson"].items())
            + f" -> {summary['query_turns']['chosen']}.", "",
            "Blend and word weights (mean dev Pearson over the sets with references): "
            + "; ".join(f"`{w}`: " + ", ".join(f"{b} {v:.3f}" for b, v in means.items())
                        for w, means in summary["blend"]["by_word_weights"].items())
            + f" -> `{summary['blend']['word_weights']}` with `{summary['blend']['chosen']}`.", "",
            "### Correlation with human judgements at training time (dev splits; Pearson / Spearman, item level)", "",
            ("Measured by the training run through the exported ONNX graphs (the served scorer), on the sets with their "
             "own references (n/a: a set without one), with its baselines on the same items. The served model's "
             "figures, with references recovered from DailyDialog too, are in the section `evaluate` writes below and "
             "in docs/evaluation.md."), "",
            "| set | " + " | ".join(models) + " |", "|---|" + "---|" * len(models), *rows,
            "", paper_comparison(corr, summary), "",
            ("Sets and splits: `training/data/judgements.py`; the full table of every served model is in "
             "`docs/evaluation.md`.")]),
        limitations_and_bias=LIMITATIONS,
        reproduce=reproduce(summary["command"]),
        citation=CITATION)


def write_card(folder: Path, summary: dict) -> Path:
    """The run's README.md (ruber_card)."""
    return write_model_card(folder, ruber_card(summary))


def card_fields(summary: dict, correlations: dict) -> dict:
    """The manifest's `card`: what /models serves of this run."""
    return {
        "summary": "RUBER: blended referenced (pooled GloVe cosine"
                   + (", common words down-weighted by default" if summary["blend"]["word_weights"] == "frequency"
                      else "")
                   + ") and unreferenced (BiGRU + MLP trained by negative sampling) scores, min-max normalised.",
        "training_data": "DailyDialog train (CC BY-NC-SA 4.0) and BYU Chit-Chat train (MIT), "
                         f"{summary['data']['train_pairs']} pairs; no human labels. Calibration: DailyDialog++ dev.",
        "licence": ("weights: CC BY-NC-SA 4.0 (trained on DailyDialog, non-commercial, share-alike; also "
                    "BYU Chit-Chat: MIT); normalisation constants from DailyDialog++ dev (licence not "
                    "stated upstream); code MIT; GloVe PDDL 1.0"),
        "training_time": f"{summary['train']['minutes']:.1f} min, {summary['machine']}",
        "blend": summary["blend"]["chosen"], "word_weights": summary["blend"]["word_weights"],
        "query_turns": summary["query_turns"]["chosen"],
        "correlations": correlations, "citation": CITATION,
    }
