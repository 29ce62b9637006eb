"""Cards of hred-encoder and of the heads served on it (adem, autojudge): what they share, and the encoder's.

Everything in a card is read from the runs' metrics.json files, so the numbers are the ones
measured, never typed in.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from training.core.card import ModelCard, code
from training.data.judgements import SETS

MACHINE = "2-core x86_64 CPU, no GPU (one core used, shared with other jobs)"
CORPUS_LICENCES = "DailyDialog: CC BY-NC-SA 4.0 (non-commercial, share-alike); chitchat-dataset: MIT"
CITE_VHRED = ("Serban, Sordoni, Lowe, Charlin, Pineau, Courville, Bengio (2017). A Hierarchical Latent "
              "Variable Encoder-Decoder Model for Generating Dialogues. AAAI.")
CITE_ADEM = ("Lowe, Noseworthy, Serban, Angelard-Gontier, Bengio, Pineau (2017). Towards an Automatic "
             "Turing Test: Learning to Evaluate Dialogue Responses. ACL.")
CITE_AUTOJUDGE = ("Deriu, Cieliebak (2019). Towards a Metric for Automated Conversational Dialogue System "
                  "Evaluation and Improvement. INLG.")
REPRODUCE_HEADS = ("python -m training train adem --encoder runs/vhred --out runs/adem --seed 0\n"
                   "python -m training train autojudge --encoder runs/vhred --out runs/autojudge --seed 0\n"
                   "python -m training export --vhred runs/vhred --adem runs/adem --autojudge runs/autojudge "
                   "--store model_store")


HRED_USES = ("The encoder that adem and autojudge read: a component, not a model to score with. A head is a "
             "matrix over this encoder's vectors, so it is served only on the encoder it was trained on "
             "(`export` and the service refuse another).")
HRED_LIMITATIONS = ("- Reads the first 39 BPE pieces of each utterance (40 ids with the end marker) and the last {turns} "
                    "utterances of a context: text past that changes no vector.\n"
                    "- English, on a tokenizer learned from DailyDialog and Chit-Chat: emoji and scripts it never saw "
                    "become [UNK].\n"
                    "- Small and briefly trained (see Training data and licence): its vectors carry less than the "
                    "paper's, which bounds what the heads on it can learn.")


# Why a card's training-run table and its `evaluate` section differ in the third decimal.
TRAINING_TIME_TABLE = ("This table is the training run's, in torch, on the run's own tokenizer (curly "
                       "quotes not mapped), before the service's soft bound, "
                       "with the first reference where one is used, and its baselines on the same "
                       "items; the served model's figures, each set's references (the best of the "
                       "first four) and those recovered from DailyDialog included, are in the section "
                       "`evaluate` writes below and in docs/evaluation.md.")


def pretrain_command(steps: int | None = None, kl_anneal_steps: int | None = None) -> str:
    """The pre-training command line of a run (defaults: the committed encoder's run)."""
    return (f"python -m training pretrain --out runs/vhred --steps {steps or 1300} "
            f"--kl-anneal-steps {kl_anneal_steps or 400} --seed 0")


def reproduce(encoder_metrics: dict | None = None) -> str:
    m = encoder_metrics or {}
    return pretrain_command(m.get("steps"), m.get("kl_anneal_steps")) + "\n" + REPRODUCE_HEADS


def context_turns(encoder_folder: Path) -> int:
    """How many context turns the exported encoder keeps (from its manifest; 7 if not exported here)."""
    path = Path(encoder_folder) / "manifest.json"
    return int(json.loads(path.read_text())["config"]["max_context_turns"]) if path.is_file() else 7


def _licences(sets: list[str]) -> str:
    parts = [f"{s}: {SETS[s].licence.split('; ')[0]}" for s in sets if s in SETS]
    if any("DailyDialog" in SETS[s].licence for s in sets if s in SETS):
        parts.append("DailyDialog-derived sets also: CC BY-NC-SA 4.0")
    return "; ".join(parts)


def head_card(summary: str, training_data: str, metrics: dict, correlations: dict, **rest: Any) -> dict[str, Any]:
    """The manifest `card` of a head on hred-encoder: what every one has, then `rest` in its order."""
    return {"summary": summary, "training_data": training_data,
            "licence": _licences(metrics["sets"]) + "; encoder: " + CORPUS_LICENCES,
            "training_time_minutes": metrics["minutes"], "machine": MACHINE, "correlations": correlations, **rest}


def _fmt(x: Any) -> str:
    return "–" if x is None else f"{x:.3f}" if isinstance(x, float) else str(x)


def _diff(value: float | None, paper: float) -> str:
    return "–" if value is None else f"{value - paper:+.3f}"


def _gap(dev: dict, model: str, paper: float) -> str:
    parts = [f"{rows[model]['item']['pearson']:.3f} on {name} ({_diff(rows[model]['item']['pearson'], paper)})"
             for name, rows in dev.items() if rows[model]['item']['pearson'] is not None]
    return ", ".join(parts) or "no defined correlation"


def _dev_summary(dev: dict, model: str) -> dict[str, dict[str, Any]]:
    return {name: {"pearson": rows[model]["item"]["pearson"], "spearman": rows[model]["item"]["spearman"],
                   "n": rows[model]["item"]["n"]} for name, rows in dev.items()}


def _dev_table(dev: dict, title: str) -> str:
    lines = [title, "", "| set | metric | n | Pearson r | Spearman rho | system-level Pearson (systems) |",
             "|---|---|---|---|---|---|"]
    for name, rows in dev.items():
        for metric, row in rows.items():
            system = row.get("system")
            sys_text = f"{_fmt(system['pearson'])} ({system['systems']})" if system else "–"
            lines.append(f"| {name} | {metric} | {row['item']['n']} | {_fmt(row['item']['pearson'])} | "
                         f"{_fmt(row['item']['spearman'])} | {sys_text} |")
    return "\n".join(lines)


def _file_names(folder: Path) -> str:
    return ", ".join(f"`{p.name}`" for p in sorted(Path(folder).iterdir())
                     if p.suffix in (".onnx", ".json", ".npy") and p.name != "manifest.json")


def _files(folder: Path) -> str:
    return "\n".join(f"- `{p.name}` ({p.stat().st_size / 1024:.0f} KiB)" for p in sorted(Path(folder).iterdir())
                     if p.suffix in (".onnx", ".json", ".npy") and p.name != "manifest.json")


def _hred_reads(model: str) -> str:
    """What both classic heads read through hred-encoder: the opening of their Limitations and bias sections."""
    return f"""- Reads the first 39 BPE pieces of each utterance (40 ids with the end marker) and the last
  context turns given above: text past that changes no score.
- English, on a tokenizer learned from DailyDialog and Chit-Chat: emoji and scripts it never saw
  become [UNK], so replies that differ only in them tie. Curly quotes (’ ‘ “ ”) are read as straight
  ones since {model} 2026.11.3 (hred-encoder 2026.11.2's tokenizer.json maps them): before, curly
"""


ADEM_LIMITATIONS = _hred_reads("adem") + """  apostrophes in the context in place of straight ones moved nine replies by up to 0.3 points (an
  audit of the served model). Other punctuation is read as typed.
- The reference term r^T N r_hat is learned, not a similarity: a reply identical to its reference
  is not rewarded (2.86 of 5 on average over ten hand-written contexts, same audit), and empty or
  copied replies score above the human one more often than not (the degenerate-reply table
  above). Served as the paper's baseline; to rank candidates use adem-minilm.
"""
AUTOJUDGE_LIMITATIONS = _hred_reads("autojudge") + """  apostrophes in the context in place of straight ones moved the same reply from 3.26 to 1.05, and
  nine replies down by 1.68 points on average (0.80 to 2.35; an audit of the served model). Other
  punctuation still moves scores a lot: dropping a reply's final full stop moved it by 0.52 at the
  median (same audit).
- It rewards replies people do not: an empty reply to a blank context scores 4.99, and copies of
  the last turn, generic and empty replies score above the human one in many cases (the
  degenerate-reply table above), the reward failure the paper itself reports. Served as the paper's baseline; to re-rank live
  candidates use autojudge-minilm.
"""


# --- hred-encoder ------------------------------------------------------------------------------------
def hred_card(metrics: dict) -> dict[str, Any]:
    held = metrics["held_out_dailydialog_validation"]
    return {"summary": "ADEM's hierarchical encoder (utterance BiGRU + context GRU), pre-trained as VHRED; "
                       "shared by adem and autojudge.",
            "training_data": f"train splits of {', '.join(metrics['sources'])} ({metrics['train_dialogues']} "
                             "dialogues, after leaving out "
                             f"{metrics.get('dev_text_dialogues_left_out', 'those')} that hold development text: "
                             "training/data/holdout.py); validation and test splits held out",
            "licence": CORPUS_LICENCES, "training_time_minutes": metrics["minutes"], "machine": MACHINE,
            "held_out_perplexity": {"dailydialog_validation_bound": round(held["ppl_bound"], 2),
                                    "dailydialog_validation_nll_only": round(held["ppl_nll"], 2)},
            "citation": CITE_VHRED}


def _held_out_text(metrics: dict) -> str:
    left_out = metrics.get("dev_text_dialogues_left_out")
    if left_out is None:
        return "Dialogues holding development text were not left out (a run before training/data/holdout.py)."
    return (f"{left_out} train dialogues that hold a development context or (query, reply) pair were left "
            "out (training/data/holdout.py: the overlap audit of docs/evaluation.md).")


def _valid_text(metrics: dict) -> str:
    repeats = metrics.get("validation_repeats_left_out")
    if repeats is None:
        return ("122 of DailyDialog's 1,000 validation dialogues are verbatim copies of train dialogues, so "
                "part of this figure is on text the model was trained on (docs/evaluation.md, the overlap audit).")
    return (f"The {repeats} validation dialogues that repeat a train dialogue, up to spelling and punctuation "
            "(DailyDialog's official splits overlap), are left out, so no dialogue measured here was trained on.")


def hred_readme(folder: Path, metrics: dict, config: dict) -> ModelCard:
    held = metrics["held_out_dailydialog_validation"]
    u, c, turns = 2 * config["utterance"], config["context"], config["max_turns"] - 1
    return ModelCard(
        title="hred-encoder: the VHRED-pre-trained hierarchical encoder of ADEM and AutoJudge",
        description=f"""A component (not a model you score with): the utterance-level bidirectional GRU and the
context-level GRU of a VHRED dialogue model (Serban et al. 2017), pre-trained with what ADEM's
section 5.1 lists: BPE vocabulary, a Gaussian latent variable per turn, KL annealing (linear 0 -> 1
over the first {metrics['kl_anneal_steps']} batches; the paper's 60,000 scaled to this run's {metrics['steps']})
and 25% decoder word drop. Where it differs from the papers: GRUs throughout (ADEM's section 3.1
and AutoJudge's appendix use LSTMs; a GRU has fewer weights to train on one CPU core); layer
normalisation sits on the encoders' outputs, not inside the recurrence as in section 5.1; and the
decoder sees [context; z] through its initial state only, where ADEM's appendix C also feeds it at
every step. Only the two encoders are exported; the decoder is used by `python -m training selftalk`.""",
        intended_uses=HRED_USES,
        inputs_and_outputs=f"""{_files(folder)}

- `tokenizer.json`: the pre-training run's BPE tokenizer (BERT normaliser: lower case, accents
  kept) with ’ ‘ mapped to ' and “ ” to " in front of it, since hred-encoder 2026.11.2. The encoder
  was trained without that mapping: DailyDialog spells apostrophes both ways, ’ is a token of its
  own, and a curly apostrophe moved the heads' scores (AutoJudge's by 1.68 points on average in an
  audit); mapped at export, the run, the encoder and the heads are unchanged (training/hred/tokenizer.py).
- `utterance_encoder.onnx`: `tokens` int64 [batch, time] (BPE ids of `tokenizer.json`, 0-padded,
  each utterance ends in [EOS], at most {config['max_tokens']} ids), `lengths` int64 [batch] -> `vectors` [batch, {u}].
- `context_encoder.onnx`: `vectors` float [batch, turns, {u}] (padded turns last), `turns` int64
  [batch] -> `state` [batch, {c}]: the last hidden state of the context GRU. A context uses its last
  {turns} utterances; a reply or reference is encoded as a one-utterance context (ADEM section 4).
- Padding is masked exactly (the backward GRU reads each utterance reversed within its length),
  so a vector does not depend on the batch. ONNX Runtime vs torch max abs difference is in
  `manifest.json` (`config.parity_max_abs_diff`), checked below 1e-4 at several shapes.""",
        training_data_and_licence=f"""- Data: the train splits of DailyDialog (official split) and the Chit-Chat dataset (seeded 90/5/5
  split by conversation, duplicates and single-speaker conversations dropped):
  {metrics['train_dialogues']} dialogues, {metrics['train_windows']} windows of up to 8 turns
  (fingerprint `{metrics['train_fingerprint']}`). {_held_out_text(metrics)}
- Licences: {CORPUS_LICENCES}. Models trained on DailyDialog inherit its non-commercial terms.
- Sizes: BPE vocabulary {config['vocab_size']}, embeddings {config['embedding']}, utterance BiGRU
  2 x {config['utterance']}, context GRU {c}, latent {config['latent']}, decoder GRU {config['decoder']}
  (output tied to the embeddings through a projection), word drop {config['word_drop']}.
- {metrics['steps']} Adam steps (lr {metrics['lr']}, batch {metrics['batch_size']} windows,
  {metrics['epochs']} pass(es) started), seed {metrics['seed']}, {metrics['minutes']} minutes on a {MACHINE}.
  The paper's encoder is far larger (context size 2000, Twitter corpus); this one is sized to
  train on one CPU core in well under an hour.""",
        evaluation=f"""### Held-out perplexity (DailyDialog validation, {int(held['tokens'])} tokens)
{_valid_text(metrics)}

| measure | value |
|---|---|
| per-token perplexity bound, exp((NLL + KL) / tokens) | {held['ppl_bound']:.2f} |
| per-token perplexity of the reconstruction term alone | {held['ppl_nll']:.2f} |
| KL per token | {held['kl_per_token']:.3f} |""",
        limitations_and_bias=HRED_LIMITATIONS.format(turns=turns),
        reproduce=f"""{code(pretrain_command(metrics['steps'], metrics['kl_anneal_steps']) + chr(10) + REPRODUCE_HEADS)}
The heads are exported with the encoder they were trained on: `export` refuses an encoder that
would leave adem or autojudge in the store on another one.""",
        citation=f"{CITE_VHRED}\n{CITE_ADEM}")
