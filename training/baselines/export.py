"""`python -m training baselines`: manifests and cards for the untrained baselines.

They have no weights (or only the shared GloVe table), but are served like every model so
that every evaluation and every client sees them beside the learned metrics.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from service.manifest import write_manifest
from training.core.card import degenerate_section, evaluate_section, with_measured_fields

VERSION = "2026.11.0"
_GLOVE_LIMITATIONS = ("Words are lower-cased BERT-style tokens, punctuation included (GloVe has vectors for it); "
                      "tokens outside GloVe's 400,000 words (emoji, most non-English words) are dropped, so two "
                      "texts whose only known tokens are the same punctuation compare as equal (\"ужасно!\" "
                      "against \"прекрасно!\": 1.0), and a text with no known token scores 0 (an audit, "
                      "2026-11-26).")
BASELINES = {
    "bleu4": dict(kind="referenced", score_range=(0.0, 1.0), uses=[], card={
        "summary": "Sentence BLEU-4 of the reply against the reference (sacrebleu 2.6, exponential "
                   "smoothing = Chen & Cherry method 3, lower-cased, 13a tokenisation), divided by 100.",
        "licence": "Apache-2.0 (sacrebleu)",
        "citation": "Papineni et al. 2002; Post 2018 (sacrebleu)."}),
    "rouge-l": dict(kind="referenced", score_range=(0.0, 1.0), uses=[], card={
        "summary": "ROUGE-L F-measure of the reply against the reference (rouge-score 0.1.2's tokenizer and "
                   "F-measure, no stemming; the longest common subsequence from rapidfuzz, the same scores).",
        "licence": "Apache-2.0 (rouge-score), MIT (rapidfuzz)",
        "citation": "Lin 2004."}),
    "length": dict(kind="unreferenced", score_range=(0.0, 2000.0), uses=[], card={
        "summary": "The reply's length in words: a trivial reference point (people rate longer replies "
                   "higher on some sets, such as dstc7 here, and lower on others); every learned metric "
                   "here must beat it.",
        "licence": "MIT (this project)",
        "citation": "none (a reference point, not a published metric)",
        "limitations": "Counts the tokens that hold a letter or digit after BERT's pre-tokenisation, so each "
                       "CJK character is a word and a sentence of a script written without spaces (Thai) one "
                       "word."}),
    "emb-average": dict(kind="referenced", score_range=(-1.0, 1.0), uses=["glove-50d"], card={
        "summary": "Cosine of the mean GloVe-50d word vectors of reply and reference.",
        "licence": "Apache-2.0 / PDDL (GloVe)",
        "citation": "Liu et al. 2016, How NOT To Evaluate Your Dialogue System.",
        "limitations": _GLOVE_LIMITATIONS}),
    "emb-extrema": dict(kind="referenced", score_range=(-1.0, 1.0), uses=["glove-50d"], card={
        "summary": "Cosine of the vector-extrema GloVe-50d embeddings of reply and reference.",
        "licence": "Apache-2.0 / PDDL (GloVe)",
        "citation": "Forgues et al. 2014; Liu et al. 2016.",
        "limitations": _GLOVE_LIMITATIONS}),
    "emb-greedy": dict(kind="referenced", score_range=(-1.0, 1.0), uses=["glove-50d"], card={
        "summary": "Greedy matching of GloVe-50d word vectors between reply and reference, both directions.",
        "licence": "Apache-2.0 / PDDL (GloVe)",
        "citation": "Rus & Lintean 2012; Liu et al. 2016.",
        "limitations": _GLOVE_LIMITATIONS}),
}


def write_baselines(root: Path) -> None:
    for name, spec in BASELINES.items():
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        card = {**spec["card"], "training_data": "none (untrained baseline)"}
        full_card = with_measured_fields(card, folder)
        write_manifest(folder, name=name, version=VERSION, kind=spec["kind"], scorer=name,
                       score_range=spec["score_range"], uses=spec["uses"], card=full_card)
        lines = [f"# {name} (baseline)", ""] + [f"- **{k}**: {v}" for k, v in card.items()]
        lines += ["", "Measured correlations: see `docs/evaluation.md`.",
                  "Rebuild the manifest: `python -m training baselines`."]
        if "evaluate" in full_card:
            lines += ["", evaluate_section(full_card["evaluate"]).rstrip("\n")]
        if "degenerate" in full_card:
            lines += ["", degenerate_section(full_card["degenerate"]).rstrip("\n")]
        (folder / "README.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m training baselines", description=__doc__)
    parser.add_argument("--root", type=Path, default=Path("model_store"))
    write_baselines(parser.parse_args(argv).root)
    return 0
