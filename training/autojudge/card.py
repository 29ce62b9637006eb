"""autojudge's card: the manifest's `card` and the README.md, read from the run's metrics.json."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from training.core.card import ModelCard, code
from training.encoders.hred.card import (AUTOJUDGE_LIMITATIONS, CITE_ADEM, CITE_AUTOJUDGE, CORPUS_LICENCES, MACHINE, head_card,
                                _dev_summary, _dev_table, _diff, _file_names, _fmt, _licences, reproduce)


def autojudge_card(metrics: dict) -> dict[str, Any]:
    cv = metrics["cross_validation"]
    return head_card("AutoJudge: reference-free score = (c^T M r - alpha) / beta on the frozen VHRED encoder; only M "
                     "trained, on turn-level human ratings (1-5).",
                     f"train partitions of {', '.join(metrics['sets'])}", metrics,
                     {"dev": _dev_summary(metrics["dev"], "autojudge"),
                      "convo_split": {k: cv["convo_split"][k] for k in ("pearson", "spearman", "mae")},
                      "system_split": cv["system_split"] and {
                          k: cv["system_split"][k] for k in ("pearson", "spearman", "mae")}},
                     citation=CITE_AUTOJUDGE)


AUTOJUDGE_USES = ("Served as the paper's baseline: a reply scored in its context, with no reference, on the 1-5 "
                  "rating scale, beside the other metrics of the evaluation tables. To re-rank live candidates use "
                  "autojudge-minilm (see Limitations and bias).")


def autojudge_readme(folder: Path, metrics: dict, parity: dict[str, float], dim: int, turns: int) -> ModelCard:
    t = metrics["training"]
    cv = metrics["cross_validation"]
    convo, system = cv["convo_split"], cv["system_split"]
    system_row = (f"| SYSTEM SPLIT (leave one system out, {system['folds']} systems of {', '.join(system['sets'])}) "
                  f"| {_fmt(system['pearson'])} | {_fmt(system['spearman'])} | {_fmt(system['mae'])} | 0.544 / 0.53 / 0.984 |"
                  if system else "| SYSTEM SPLIT | – | – | – | 0.544 / 0.53 / 0.984 |")
    return ModelCard(
        title="autojudge: AutoJudge (Deriu & Cieliebak 2019) on the VHRED encoder",
        description=f"""score(c, r) = (c^T M r - alpha) / beta with c, r the frozen `hred-encoder` vectors of the context
and the reply ({dim}-d, no PCA, M is {dim} x {dim} and the only trained weight). No reference needed:
usable on deployed systems and for re-ranking candidates (`/rerank`). alpha = {t['alpha']:.4g},
beta = {t['beta']:.4g}, fixed so that predictions at M = I have the training ratings' mean and
spread (the paper reuses ADEM's 0.01 and 32, which fit only its own encoder's scale).""",
        intended_uses=AUTOJUDGE_USES,
        inputs_and_outputs=f"""`context` (oldest first; the last {turns} turns are used) and `response`. Files: {_file_names(folder)};
`autojudge_head.onnx` takes `c`, `r` [batch, {dim}]. ONNX vs torch max abs difference: {parity}.""",
        training_data_and_licence=f"""- Data: turn-level ratings without references, the `train` partitions of {', '.join(metrics['sets'])}
  ({metrics['train_items']} rated replies, rescaled to 1-5). The paper rates self-talk dialogues
  of its own five systems; no such ratings exist here, so human-rated system replies stand in
  (ConTurE is the closest: live human-bot conversations rated per turn). `python -m training
  selftalk` produces the self-talk dialogues of the data-generation phase for a future rating round.
- Licences: {_licences(metrics['sets'])}; encoder corpora: {CORPUS_LICENCES}.
- Mean squared error, Adam lr {t['lr']}, batch {t['batch_size']} (the paper's appendix); early stopping on
  validation Pearson r over {t['valid_items']} items whose contexts are not among the {t['fit_items']}
  fitting items; best epoch {t['best_epoch']} of {t['epochs_run']}. {metrics['minutes']} minutes (both
  cross-validations included) on a {MACHINE}; seed {metrics['seed']}.""",
        evaluation=f"""### Cross-validation as the paper's Table 1 (mean over folds)
| split | Pearson r | Spearman rho | MAE | paper (r / rho / MAE) |
|---|---|---|---|---|
| CONVO SPLIT ({convo['folds']} folds by context, the paper's conversation; train + dev of the training sets) | {_fmt(convo['pearson'])} | {_fmt(convo['spearman'])} | {_fmt(convo['mae'])} | 0.573 / 0.577 / 0.928 |
{system_row}

{_dev_table(metrics['dev'], '### Correlation with human ratings on the dev partitions (never trained on)')}

"init (M = I)" is the head before training: the encoder's dot product alone. This table is the
training run's, in torch, on the run's own tokenizer (curly quotes not mapped), before the service's
soft bound; the served model's figures are in the section `evaluate` writes below and in
docs/evaluation.md.

### Gap to the paper
CONVO SPLIT Pearson {_fmt(convo['pearson'])} vs the paper's 0.573 ({_diff(convo['pearson'], 0.573)}); SYSTEM
SPLIT {_fmt(system['pearson']) if system else '–'} vs 0.544 ({_diff(system['pearson'] if system else None, 0.544)}).
Why we think so: the paper's 5,000 ratings are of one kind (self-talk of its own five systems,
one protocol, MACE-aggregated), while ours pool six sets with different protocols, domains and
scales; the system split here leaves out DSTC7/Gupta systems whose replies differ in domain
from the rest; and the encoder is small and briefly pre-trained (see hred-encoder's card).""",
        limitations_and_bias=AUTOJUDGE_LIMITATIONS,
        reproduce=code(reproduce(metrics.get('encoder_metrics'))),
        citation=f"{CITE_AUTOJUDGE}\n{CITE_ADEM}")
