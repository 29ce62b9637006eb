"""Batches of texts by length: length_buckets groups them so that padding stays small, shares deals the
batches to a request's threads. Every exported graph masks padding exactly, so no score depends on them."""
from __future__ import annotations

STEP_CUT_ROWS = 4
MAX_TOKENS = 8192  # padded word pieces in one encoder run: bounds a batch's memory whatever batch_size says


def length_buckets(lengths: list[int], max_batch: int, max_tokens: int = MAX_TOKENS, step: int | None = None) -> list[list[int]]:
    """Indices grouped by similar length, so that padding stays small.

    Items are sorted by length and cut into batches of at most `max_batch` items and about
    `max_tokens` padded tokens; with `step`, also wherever the length passes a multiple of `step`
    once a batch holds STEP_CUT_ROWS items (less padding for a mixed batch, at the cost of a run). Results must not depend on the grouping, which is
    why every graph we export masks padding exactly (and the sentence encoder pools outside its graph).
    """
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        longest = max(lengths[index], 1)
        # a step is cut only under a batch of STEP_CUT_ROWS or more: a few short texts pad less than a run costs
        past_step = (step is not None and len(current) >= STEP_CUT_ROWS
                     and (longest - 1) // step != (max(lengths[current[0]], 1) - 1) // step)
        if current and (len(current) >= max_batch or longest * (len(current) + 1) > max_tokens or past_step):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


def shares(lengths: list[int], runs: int, max_batch: int, max_tokens: int = MAX_TOKENS,
           step: int | None = None) -> list[list[list[int]]]:
    """The batches of length_buckets dealt, in order, into at most `runs` shares of about equal padded
    word pieces, one share a thread, so that the threads of a lone request finish together. Where a
    share's part ends inside a batch, that batch's rows are cut between two shares: a request gains
    one run at most, and no text is padded more than in its batch."""
    batches = length_buckets(lengths, max_batch, max_tokens, step)

    def padded(rows: list[int]) -> int:  # rows of a batch are in order of length
        return len(rows) * max(lengths[rows[-1]], 1) if rows else 0

    total = sum(padded(batch) for batch in batches)
    dealt: list[list[list[int]]] = [[]]
    done = 0
    for batch in batches:
        rest = batch
        while rest:
            target = total * len(dealt) / runs
            if len(dealt) >= runs or done + padded(rest) <= target:
                dealt[-1].append(rest)
                done += padded(rest)
                break
            # as many rows as bring this share nearest its part; an empty share takes one at least
            lowest = 1 if not dealt[-1] else 0
            take = min(range(lowest, len(rest) + 1), key=lambda k: abs(done + padded(rest[:k]) - target))
            if take:
                dealt[-1].append(rest[:take])
                done += padded(rest[:take])
                rest = rest[take:]
            if rest:
                dealt.append([])
    return [share for share in dealt if share]
