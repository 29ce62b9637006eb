"""What each stacked reference-free model combines: its signals (in the served config's form, without
the fitted statistics and weights) and where each head graph comes from."""
from __future__ import annotations

from dataclasses import dataclass

from training.data.judgements import COMMERCIAL_SETS, TRAINING_SETS

MINILM = "minilm-l6"
MPNET = "mpnet-base"
AUTOJUDGE_HEAD = "autojudge_head.onnx"
RUBER_HEAD = "ruber_head.onnx"
COPY_THRESHOLD = 0.75  # the copy penalty's threshold in the -minilm heads (training/core/turn_heads.py: CopyPenalty)


@dataclass(frozen=True)
class HeadSource:
    """A head graph of the folder. `served`: a copy of that -minilm model's head.onnx (its out-of-fold
    heads trained with that model's own recipe, from its card's config); otherwise trained here on
    `encoder`'s vectors with that recipe, next-turn pre-training on RUBER's negative-sampling pairs
    (the 168k next-turn texts are hours of a slow encoder on a CPU)."""

    model: str  # autojudge-minilm (the AutoJudge form, fitted to ratings) or ruber-minilm (RUBER's s_U)
    encoder: str
    served: bool

    @property
    def rated(self) -> bool:
        """Whether the head reads ratings, so that stacking needs its out-of-fold scores."""
        return self.model == "autojudge-minilm"


def autojudge(encoder: str) -> dict:
    return {"name": "autojudge", "source": "head", "head": AUTOJUDGE_HEAD, "encoder": encoder, "output": "score",
            "context_encoding": "last"}


def ruber_logit(encoder: str) -> dict:
    return {"name": "ruber_s_unref_logit", "source": "head", "head": RUBER_HEAD, "encoder": encoder,
            "output": "s_unref", "transform": "logit", "context_encoding": "last"}


def cos_mean(encoder: str, turns: int) -> dict:
    return {"name": "cos_last" if turns == 1 else f"cos_mean{turns}", "source": "cos_mean", "encoder": encoder,
            "turns": turns}


def copy_excess(encoder: str) -> dict:
    return {"name": "copy_excess", "source": "copy_excess", "encoder": encoder, "turns": 5,
            "threshold": COPY_THRESHOLD}


TEXT = ({"name": "distinct_ratio", "source": "distinct_ratio"}, {"name": "log_length", "source": "log_length"})
# The word signals' hinges, above what a reply shares with a turn or repeats of itself by chance: copied,
# half both ways (set, not searched); repeated, .2 (95% of the rated train replies repeat under .12 of
# their bigrams; .2 above .1 by leave-one-set-out). The degenerate-repetition note in docs/notes has the runs.
COPIED_THRESHOLD = 0.5
REPEATED_THRESHOLD = 0.2
DEGENERATE_AND_SHUFFLED = "dstc7-degenerate+shuffled"  # dstc7-degenerate's kinds and the last turn's words shuffled
SAMPLES_DEGENERATE_AND_SHUFFLED = f"samples+{DEGENERATE_AND_SHUFFLED}"
SHUFFLED_FIX = "2026.11.2"  # the copy signal counted on words, and shuffled negatives
COMMERCIAL_TEMPLATE = "unref-commercial"  # the card that says a business may ship the model
# Negatives built from DSTC7 train contexts only (O-UDA v1.0); "samples" reads DailyDialog++ (terms not stated).
COMMERCIAL_NEGATIVES = frozenset({"none", "dstc7-copies", "dstc7-degenerate", DEGENERATE_AND_SHUFFLED})


def copied_bigrams() -> dict:
    return {"name": "copied_bigrams", "source": "copied_bigrams", "turns": 5, "threshold": COPIED_THRESHOLD}


def copied_words() -> dict:
    return {"name": "copied_words", "source": "copied_words", "turns": 5, "threshold": COPIED_THRESHOLD}


def repeated_bigrams() -> dict:
    return {"name": "repeated_bigrams", "source": "repeated_bigrams", "threshold": REPEATED_THRESHOLD}


WORDS_ANY_ORDER = (copied_words(), repeated_bigrams())


@dataclass(frozen=True)
class Recipe:
    name: str
    uses: tuple[str, ...]
    signals: tuple[dict, ...]
    heads: dict[str, HeadSource]
    rated_sets: tuple[str, ...] = TRAINING_SETS  # the judged sets whose train partitions the fit reads
    negatives: str = "samples"  # the stacker's margin term: "samples" (DailyDialog++ and degenerate negative
    # samples), "dstc7-copies" (DSTC7 references against copies of their context), "dstc7-degenerate" (those
    # and the repetition kinds of their last turn, each kind held to the floor), DEGENERATE_AND_SHUFFLED (those
    # and a sentence of the last turn shuffled), SAMPLES_DEGENERATE_AND_SHUFFLED (the first and fourth, each
    # dstc7 kind and the samples as one held to the floor) or "none" (train.Rows)
    template: str = "unref"  # its card's templates (training/unref/cards)
    version: str = "2026.11.0"  # the served folder's; raised when the recipe changes what it scores

    def __post_init__(self) -> None:
        """A recipe whose card says a business may ship it reads only data whose terms allow that (ValueError):
        the card's licence is a template, so the recipe's data must be held to it here."""
        if self.template != COMMERCIAL_TEMPLATE:
            return
        other = sorted(set(self.rated_sets) - set(COMMERCIAL_SETS))
        if other or self.negatives not in COMMERCIAL_NEGATIVES or self.heads:
            raise ValueError(f"{self.name}: a commercial card over data of other terms (sets {other}, negatives "
                             f"{self.negatives!r}, heads {sorted(self.heads)})")


def commercial(name: str, encoder: str) -> Recipe:
    """The last-turn cosine less penalties for a reply that says a context turn's words again, in any order,
    or repeats its own on `encoder`, fitted only on commercially usable data: the signals `python -m training
    unref-scan --negatives dstc7-degenerate+shuffled` chose on that encoder (on mpnet also copy_excess)."""
    vector_copy = (copy_excess(encoder),) if encoder == MPNET else ()
    return Recipe(name, (encoder,), (cos_mean(encoder, 1), *vector_copy, *WORDS_ANY_ORDER), {},
                  rated_sets=COMMERCIAL_SETS, negatives=DEGENERATE_AND_SHUFFLED, template=COMMERCIAL_TEMPLATE,
                  version=SHUFFLED_FIX)


RECIPES = {
    "unref-minilm": Recipe(
        "unref-minilm", (MINILM,),
        (autojudge(MINILM), ruber_logit(MINILM), cos_mean(MINILM, 2), copy_excess(MINILM), *TEXT, *WORDS_ANY_ORDER),
        {AUTOJUDGE_HEAD: HeadSource("autojudge-minilm", MINILM, served=True),
         RUBER_HEAD: HeadSource("ruber-minilm", MINILM, served=True)},
        negatives=SAMPLES_DEGENERATE_AND_SHUFFLED, version=SHUFFLED_FIX),
    "unref-mpnet": Recipe(
        "unref-mpnet", (MPNET,),
        (autojudge(MPNET), ruber_logit(MPNET), cos_mean(MPNET, 1), cos_mean(MPNET, 2), copy_excess(MPNET), *TEXT,
         *WORDS_ANY_ORDER),
        {AUTOJUDGE_HEAD: HeadSource("autojudge-minilm", MPNET, served=False),
         RUBER_HEAD: HeadSource("ruber-minilm", MPNET, served=False)},
        negatives=SAMPLES_DEGENERATE_AND_SHUFFLED, version=SHUFFLED_FIX),
    "unref-mpnet-minilm": Recipe(
        "unref-mpnet-minilm", (MPNET, MINILM),
        (autojudge(MPNET), ruber_logit(MINILM), cos_mean(MPNET, 2), copy_excess(MPNET), *TEXT, *WORDS_ANY_ORDER),
        {AUTOJUDGE_HEAD: HeadSource("autojudge-minilm", MPNET, served=False),
         RUBER_HEAD: HeadSource("ruber-minilm", MINILM, served=True)},
        negatives=SAMPLES_DEGENERATE_AND_SHUFFLED, version=SHUFFLED_FIX),
    "unref-minilm-commercial": commercial("unref-minilm-commercial", MINILM),
    "unref-mpnet-commercial": commercial("unref-mpnet-commercial", MPNET),
}
