"""The text training streams hold, by the loose key, and whether a check case's answer is among it: what the
degenerate-reply check and the synthetic check leave out, so that neither measures a reply a model was fitted to."""
from __future__ import annotations

from training.core import next_turn
from training.data import corpora
from training.data import negatives as data
from training.data.holdout import DevHoldout, MIN_WINDOW_CHARS
from training.data.keys import match_key


def trained_text() -> DevHoldout:
    """Every (query, reply) and (turn, next turn) the -minilm models train on, by the loose key, as a
    DevHoldout (training/data/holdout.py, the same matching rules read the other way round): the
    next-turn pairs, RUBER's negative-sampling pairs (DSTC7 positives included) and the judged train
    items. The split key keeps the check set's queries out of training, but a dialogue spelled
    another way ("didn ’ t" / "didn't") falls on the other side of it."""
    queries, replies = next_turn.corpus_pairs()
    sequences = [([q], r) for q, r in zip(queries, replies)]
    sequences += [(pair.context, pair.reply) for pair in data.ruber_pairs(include_reddit=True)]
    sequences += [(item.context, item.response) for items in data.judged("train").values() for item in items]
    return DevHoldout.of((context, reply, True) for context, reply in sequences)


def read_whole(trained: DevHoldout) -> DevHoldout:
    """`trained` and every (turn, next turn) of the corpora's train splits as queries and replies, all of
    them: VHRED's and RUBER's pre-training read those dialogues whole, dev-partition queries included."""
    sequences = [([turns[i - 1]], turns[i]) for source in corpora.SOURCES
                 for turns in corpora.load_dialogues("train", (source,)) for i in range(1, len(turns))]
    whole = DevHoldout.of((context, reply, True) for context, reply in sequences)
    return DevHoldout(trained.windows | whole.windows, trained.queries | whole.queries)


def seen_in_training(trained: DevHoldout, context: list[str], replies: list[str]) -> bool:
    """Whether training held the answer to this check case: its query followed by one of its human
    replies as consecutive turns, or its query as a query, where that is long enough to be specific
    (a short "Yes." or "What about you?" opens thousands of unrelated exchanges). The context's
    earlier turns may have been read (DailyDialog++ draws its contexts from DailyDialog, whose train
    split repeats some of them): that says which turn follows them, which the check does not ask."""
    query = match_key(context[-1]) if context else ""
    return (any(trained.touches([context[-1], reply]) for reply in replies)
            or (len(query) >= MIN_WINDOW_CHARS and query in trained.queries))
