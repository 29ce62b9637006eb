"""The training and development text of the heads on turn vectors: judged items, RUBER's negative-sampling pairs
(train-partition contexts only) and the negative samples built from them."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from service.scorers.heads import MAX_TURNS
from training.data import corpora, judgements
from training.data.degenerate import (SHUFFLED_KIND, TRAIN_GENERIC, TRAIN_NEAR_EMPTY, degenerate_replies,
                                      repetition_replies, shuffled_copy)
from training.data.references import recover

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


# How much of each corpus the negative sampling reads. Embedding is the cost, so the corpora are cut to about
# 45k distinct texts in all (judged sets included).
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


class NegativeOptions(Protocol):
    """What negative sampling reads of a training configuration (train.Config)."""

    reddit_positives: bool
    ruber_pairs: int
    ruber_degenerate: float
    negatives_contexts: int


@dataclass
class Ranked:
    """Negative samples: each row a context with a good reply (and reference) and a bad reply."""

    contexts: list[list[str]]
    good: list[str]
    bad: list[str]
    references: list[str]
    kinds: list[str] = field(default_factory=list)  # each bad reply's kind, where the source names them

    def joined(self, other: "Ranked", own_kind: str) -> "Ranked":
        """These samples and `other`'s, each kind named (these, which name none, as `own_kind`), so that the
        floor holds for each of `other`'s kinds apart and for these as one."""
        kinds = self.kinds or [own_kind] * len(self.bad)
        return Ranked(self.contexts + other.contexts, self.good + other.good, self.bad + other.bad,
                      self.references + other.references, kinds + other.kinds)


def negative_samples(config: NegativeOptions, rng: random.Random, for_ruber: bool) -> Ranked:
    """Contexts with human replies against random, adversarial and degenerate (training-list) replies."""
    pairs = ruber_pairs(include_reddit=config.reddit_positives and for_ruber)
    by_context: dict[tuple[str, ...], list[Pair]] = {}
    for pair in pairs:
        by_context.setdefault(tuple(pair.context), []).append(pair)
    replies = [p.reply for p in pairs]
    ranked = Ranked([], [], [], [])
    if for_ruber:
        chosen = rng.sample(pairs, min(config.ruber_pairs, len(pairs)))
        for pair in chosen:
            siblings = [p.reply for p in by_context[tuple(pair.context)] if p.reply != pair.reply]
            bad = [rng.choice(replies)] + list(pair.negatives[:2])
            if rng.random() < config.ruber_degenerate:  # degenerate kinds, from the training phrase lists
                kinds = degenerate_replies(pair.context, pair.reply, rng.choice(replies), rng,
                                           TRAIN_GENERIC, TRAIN_NEAR_EMPTY)
                bad.append(kinds[rng.choice(list(kinds))])
            for negative in bad:
                ranked.contexts.append(pair.context)
                ranked.good.append(pair.reply)
                ranked.bad.append(negative)
                ranked.references.append(siblings[0] if siblings else pair.reply)
        return ranked
    multi = [ps for ps in by_context.values() if len({p.reply for p in ps}) >= 2]
    for group in rng.sample(multi, min(config.negatives_contexts, len(multi))):
        human, reference = group[0].reply, next(p.reply for p in group if p.reply != group[0].reply)
        kinds = degenerate_replies(group[0].context, human, rng.choice(replies), rng, TRAIN_GENERIC, TRAIN_NEAR_EMPTY)
        for negative in list(kinds.values()) + list(group[0].negatives[:1]) + [rng.choice(replies)]:
            ranked.contexts.append(group[0].context)
            ranked.good.append(human)
            ranked.bad.append(negative)
            ranked.references.append(reference)
    return ranked


def dstc7_copies(contexts: int, rng: random.Random, repetitions: bool = False, shuffled: bool = False) -> Ranked:
    """DSTC7's train-partition contexts (Reddit, O-UDA v1.0; no score read), a human reference reply against a
    copy of one of the last MAX_TURNS context turns: negatives of text whose terms allow commercial use, for the
    one fault a cosine with the context cannot see (it scores a copy 1). With `repetitions`, the same reference
    also against each repetition kind of the last turn (the turn said two and three times, a random content
    word of it said five times), which a cosine rewards as much as a copy; with `shuffled`, also against the
    words of one sentence of the last turn in another order (SHUFFLED_KIND)."""
    by_context: dict[str, judgements.JudgedItem] = {}
    for item in judgements.load_set("dstc7", "train"):
        if item.references:
            by_context.setdefault(item.conversation or "\x1e".join(item.context), item)
    ranked = Ranked([], [], [], [])
    for key in rng.sample(sorted(by_context), min(contexts, len(by_context))):
        item = by_context[key]
        context, reply = list(item.context)[-MAX_TURNS:], item.references[0]
        copies = [turn for turn in context if turn != reply]
        if not copies:
            continue
        bad = {"copy": rng.choice(copies)}
        if repetitions:
            bad.update({k: r for k, r in repetition_replies(context, rng).items() if r != reply})
        if shuffled and (reordered := shuffled_copy(context, rng)) != reply:
            bad[SHUFFLED_KIND] = reordered
        for kind, negative in bad.items():
            ranked.contexts.append(context)
            ranked.good.append(reply)
            ranked.bad.append(negative)
            ranked.references.append(reply)
            ranked.kinds.append(kind)
    return ranked


def judged_rows(split: str, referenced: bool, limit: int | None = None, recover_references: bool = False,
                ) -> dict[str, tuple[list[list[str]], list[str], list[str] | None, np.ndarray]]:
    """Per set: contexts, responses, first references (referenced models: sets with references), scores.

    `recover_references` fills in the DailyDialog reference of the DailyDialog-based sets that ship
    without one, as `training evaluate` does (development figures only; training never reads them).
    """
    out = {}
    for name, items in judged(split).items():  # recovered as `evaluate` recovers, so both measure alike
        if recover_references:
            items, _ = recover(items)
        if referenced:
            items = [i for i in items if i.references]
        items = items[:limit]
        if len(items) < (2 if limit else 10):
            continue
        out[name] = ([i.context for i in items], [i.response for i in items],
                     [i.references[0] for i in items] if referenced else None,
                     np.array([i.score for i in items], np.float32))
    return out


# The unrated dialogues the next-turn pre-training of M reads (training/core/next_turn.py); and by name,
# (last turn, reply) of RUBER's negative-sampling pairs (ruber_pairs), ~10k: the next turns a slower
# encoder's heads pre-train on, whose texts are embedded for them anyway.
NEXT_TURN_SOURCES = ("dailydialog", "chitchat")
NEGATIVE_SAMPLING = "negative-sampling"


def corpus_pairs(sources: tuple[str, ...] = NEXT_TURN_SOURCES, max_pairs: int | None = None) -> tuple[list[str], list[str]]:
    """(last turn, next turn) of every train dialogue that holds no dev text, deduplicated, in a fixed order."""
    unknown = set(sources) - {*NEXT_TURN_SOURCES, NEGATIVE_SAMPLING}
    if unknown:
        raise ValueError(f"unknown next-turn source(s) {sorted(unknown)}; known: {(*NEXT_TURN_SOURCES, NEGATIVE_SAMPLING)}")
    seen: set[tuple[str, str]] = set()
    queries: list[str] = []
    replies: list[str] = []
    for pair in (pair for source in sources for pair in _pairs(source)):
        if pair in seen:
            continue
        seen.add(pair)
        queries.append(pair[0])
        replies.append(pair[1])
        if max_pairs is not None and len(queries) >= max_pairs:
            break
    return queries, replies


def _pairs(source: str):
    """One source's (last turn, next turn) pairs, in the corpus's order."""
    if source == NEGATIVE_SAMPLING:  # contexts in the judgement train partition already (ruber_pairs)
        yield from ((pair.context[-1], pair.reply) for pair in ruber_pairs())
        return
    dialogues, _ = judgements.dev_holdout().unseen(corpora.dailydialog("train") if source == "dailydialog"
                                                   else corpora.chitchat("train"))
    for turns in dialogues:
        for i in range(1, len(turns)):
            if source != "dailydialog" or in_train_partition([turns[i - 1]]):
                yield turns[i - 1], turns[i]
