"""adem's card: the manifest's `card` and the README.md, read from the run's metrics.json."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from training.core.card import ModelCard, code
from training.encoders.hred.card import (ADEM_LIMITATIONS, CITE_ADEM, CORPUS_LICENCES, MACHINE, TRAINING_TIME_TABLE, head_card,
                                _dev_summary, _dev_table, _file_names, _gap, _licences, reproduce)


def adem_card(metrics: dict) -> dict[str, Any]:
    return head_card("ADEM: score = (c^T M r_hat + r^T N r_hat - alpha) / beta on PCA-reduced VHRED encodings of "
                     "context, reply and reference; trained on human ratings (1-5).",
                     f"train partitions of {', '.join(metrics['sets'])} (items with references)", metrics,
                     {"dev": _dev_summary(metrics["dev"], "adem"), "c-adem": _dev_summary(metrics["dev"], "c-adem"),
                      "r-adem": _dev_summary(metrics["dev"], "r-adem")},
                     details=adem_details(metrics["training"]["adem"]["alpha"], metrics["training"]["adem"]["beta"]),
                     citation=CITE_ADEM)


def adem_details(alpha: float, beta: float) -> str:
    """What /score's details hold, with the constants to rebuild the score from them: /models serves
    the card, not the manifest's config."""
    return ("s_unref = c^T M r_hat (the context term) and s_ref = r^T N r_hat (the reference term), in the PCA "
            f"space, before alpha and beta: before the soft bound, score = (s_unref + s_ref - alpha) / beta, "
            f"alpha = {float(alpha)!r}, beta = {float(beta)!r}")


ADEM_USES = ("Served as the paper's baseline: a reply scored against a human reference and its context on the 1-5 "
             "rating scale, beside the other metrics of the evaluation tables. To rank candidates use adem-minilm "
             "(see Limitations and bias).")


def adem_readme(folder: Path, metrics: dict, parity: dict[str, float], dim: int, turns: int) -> ModelCard:
    t = metrics["training"]["adem"]
    return ModelCard(
        title="adem: ADEM (Lowe et al. 2017) on the VHRED encoder",
        description=f"""score(c, r, r_hat) = (c^T M r_hat + r^T N r_hat - alpha) / beta, where c, r, r_hat are the
`hred-encoder` vectors of the context, the reference and the reply, reduced by PCA to n = {t['n']}.
M and N start at the identity; alpha = {t['alpha']:.4g} and beta = {t['beta']:.4g} are fixed so that
predictions at initialisation have the training ratings' mean and spread (the paper's "alpha, beta
initialise the predictions in the score range"). Scores are on the 1-5 rating scale: the service
keeps them inside it by compressing the outer 5% at each end, smoothly and in order (`soft_bound`,
service/scorers/base.py), and leaves every other score as the head computes it.""",
        intended_uses=ADEM_USES,
        inputs_and_outputs=f"""`context` (oldest first; the last {turns} turns are used), `response`, `reference` (required).
Files: {_file_names(folder)}; `adem_head.onnx` takes `c`, `r_hat`, `r` [batch, {dim}]
and holds the PCA projection, M, N, alpha and beta. It returns `score` and its two terms, `s_unref`
= c^T M r_hat and `s_ref` = r^T N r_hat (in the PCA space, before alpha and beta), which `/score`
gives in `details`: before the soft bound, score = (s_unref + s_ref - alpha) / beta.
ONNX vs torch max abs difference, in score units (the terms divided by beta): {parity}.""",
        training_data_and_licence=f"""- Data: the `train` partitions (training/data/judgements.py, split by context) of
  {', '.join(metrics['sets'])}; {metrics['train_items']} rated replies with references, ratings
  rescaled to 1-5 (DSTC7: mean of relevance and informativeness per judge, averaged over judges).
  r is the first reference.
- Licences: {_licences(metrics['sets'])}; encoder corpora: {CORPUS_LICENCES}.
- Loss: squared error + gamma * ||{{M, N}}||_1, gamma = {t['gamma']}; Adam lr {t['lr']}, batch {t['batch_size']}
  (the paper's best); early stopping on validation Pearson r over {t['valid_items']} items whose
  contexts never occur in the {t['fit_items']} fitting items; best epoch {t['best_epoch']} of {t['epochs_run']}.
- C-ADEM keeps only c^T M r_hat, R-ADEM only r^T N r_hat (paper Table 3), trained the same way:
  {_variant_epochs(metrics['training'])}
- {metrics['minutes']} minutes (encoding included) on a {MACHINE}; seed {metrics['seed']}.""",
        evaluation=f"""{_dev_table(metrics['dev'], '### Correlation with human ratings on the dev partitions (never trained on)')}

"vhred (init)" is ADEM at initialisation (M = N = I), the paper's "VHRED" row. p-values are in
the run's metrics.json. {TRAINING_TIME_TABLE}

### Gap to the paper
Paper (Twitter test set, Pearson): ADEM 0.436, C-ADEM 0.363, R-ADEM 0.360, VHRED -0.010, BLEU-4 0.073.
Here ADEM reaches {_gap(metrics['dev'], 'adem', 0.436)}. Why we think it falls short: the encoder is
small and briefly trained (context size 256 instead of 2000, about one pass over ~15k dialogues on
one CPU core instead of a large Twitter corpus); the rated sets are not the domain it was
pre-trained on (DSTC7: Reddit threads with grounding passages, cut to 40 BPE tokens per
utterance); and the ratings come from other protocols (relevance/informativeness, rescaled)
than the paper's single "overall quality" score on its own model outputs.""",
        limitations_and_bias=ADEM_LIMITATIONS,
        reproduce=code(reproduce(metrics.get('encoder_metrics'))),
        citation=CITE_ADEM)


def _variant_epochs(training: dict) -> str:
    """Best epoch of C-ADEM and R-ADEM; epoch 0 means validation never beat the identity start."""
    parts = []
    for variant in ("c-adem", "r-adem"):
        t = training.get(variant)
        if not t:
            continue
        note = " (validation never beat its start, M = N = I: the row below is the untrained head)" if (
            t["best_epoch"] == 0) else ""
        parts.append(f"{variant.upper()} best epoch {t['best_epoch']} of {t['epochs_run']}{note}")
    return "; ".join(parts) + "."
