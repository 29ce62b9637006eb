"""The training and development text of the -minilm models, and how a context becomes text.

Judged items come from `training.data.judgements` (B's fixed train/dev partition). RUBER's
unreferenced part learns from DailyDialog train dialogues and DailyDialog++ (its human
positives; the dev/test adversarial negatives only for contexts whose query falls in the
judgement *train* partition, so no development context is seen in training).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from service.scorers.minilm import MAX_TURNS, context_texts
from training.data import corpora, judgements

# Sets used for training and development; every one has context + response, two have references.
JUDGED_SETS = judgements.TRAINING_SETS



def judged(split: str, sets: tuple[str, ...] = JUDGED_SETS) -> dict[str, list[judgements.JudgedItem]]:
    return {name: judgements.load_set(name, split) for name in sets}


@dataclass(frozen=True)
class Pair:
    """A context, its human reply, and replies known to be bad for it (may be empty)."""

    context: list[str]
    reply: str
    negatives: tuple[str, ...] = ()


def dd_plusplus(name: str) -> list[dict]:
    path = corpora.DEFAULT_DATA_DIR / "corpora" / "dailydialog_plusplus" / name
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def in_train_partition(context: list[str]) -> bool:
    """Whether an unrated (context, reply) may be trained on: its query is in the judgement train
    partition, and no dev query under another spelling (training/data/holdout.py)."""
    return (judgements.split_of(judgements.query_key(context)) == "train"
            and not judgements.dev_holdout().holds_query(context))


# How much of each corpus the negative sampling reads. Embedding is the cost (~40 texts/s on
# a shared 2-core machine), so the corpora are cut to about 45k distinct texts in all (judged sets included).
DAILYDIALOG_DIALOGUES = 1200
DD_PLUSPLUS_POSITIVE_CONTEXTS = 1000
DD_PLUSPLUS_ADVERSARIAL_CONTEXTS = 800  # per file (dev.json, test.json)
DSTC7_REFERENCES = 4  # human replies per DSTC7 train context used as positives (Reddit, no scores read)


def ruber_pairs(include_reddit: bool = False) -> list[Pair]:
    """Positive (context, reply) pairs for negative sampling, with DailyDialog++ adversarial negatives.

    DailyDialog train: every turn after the first, context the turns before it, kept only when
    the query is in the judgement train partition (DailyDialog sentences recur across splits).
    """
    pairs: list[Pair] = []
    holdout = judgements.dev_holdout()
    dialogues, _ = holdout.unseen(corpora.dailydialog("train")[:DAILYDIALOG_DIALOGUES])
    for turns in dialogues:
        for i in range(1, len(turns)):
            context = turns[max(0, i - MAX_TURNS):i]
            if in_train_partition(context):
                pairs.append(Pair(context, turns[i]))
    for record in dd_plusplus("data_positives.json")[:DD_PLUSPLUS_POSITIVE_CONTEXTS]:
        context = [" ".join(t.split()) for t in record["context"]][-MAX_TURNS:]
        if in_train_partition(context) and not holdout.touches(context):
            for reply in record["positive_responses"]:
                pairs.append(Pair(context, " ".join(reply.split())))
    if include_reddit:
        # DSTC7's gold replies are human Reddit replies: positives from another domain. Only the
        # judgement train partition, and only the replies, never the ratings.
        seen: set[str] = set()
        for item in judgements.load_set("dstc7", "train"):
            if item.conversation in seen:
                continue
            seen.add(item.conversation or "")
            for reply in item.references[:DSTC7_REFERENCES]:
                pairs.append(Pair(list(item.context)[-MAX_TURNS:], reply))
    for name in ("dev.json", "test.json"):
        for record in dd_plusplus(name)[:DD_PLUSPLUS_ADVERSARIAL_CONTEXTS]:
            context = [" ".join(t.split()) for t in record["context"]][-MAX_TURNS:]
            if not in_train_partition(context) or holdout.touches(context):
                continue
            negatives = tuple(" ".join(n.split()) for n in record["adversarial_negative_responses"])
            for reply in record["positive_responses"]:
                pairs.append(Pair(context, " ".join(reply.split()), negatives))
    return pairs


def all_texts(encodings: tuple[str, ...] = ("turns", "joined2", "joined3")) -> list[str]:
    """Every text the experiments embed (for the one-off cache fill)."""
    texts: list[str] = []
    for split in ("train", "dev"):
        for items in judged(split).values():
            for item in items:
                texts.append(item.response)
                texts.extend(item.references[:1])  # models see one reference
                for encoding in encodings:
                    texts.extend(context_texts(item.context, encoding))
    for pair in ruber_pairs():
        texts.append(pair.reply)
        texts.extend(pair.negatives)
        texts.extend(context_texts(pair.context, "turns"))
    return list(dict.fromkeys(texts))


def main_fill(cache_dir: Path | None = None) -> None:
    from training.minilm.embed import DEFAULT_CACHE, EmbeddingCache

    texts = all_texts()
    print(f"{len(texts)} distinct texts (judged sets first)", flush=True)
    EmbeddingCache(cache_dir or DEFAULT_CACHE).add(texts, log=True)


if __name__ == "__main__":
    main_fill()
