"""Reference recovery for evaluation: the DailyDialog continuation of a judged context, for the sets built
on DailyDialog that ship without one.

A reference is returned only where it is unambiguous (every place the context occurs in DailyDialog is
followed by the same turn); `load_set` is left as it is, so training never reads a recovered reference."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from training.data.corpora import DEFAULT_DATA_DIR, SPLITS, dailydialog
from training.data.judgements import JudgedItem
from training.data.keys import match_key

# Sets built on DailyDialog dialogues without references. Other sets are never matched: short
# chit-chat turns ("hi, how are you?") also occur in DailyDialog, and that is no reference.
DAILYDIALOG_SETS = ("predictive_engagement", "holistic_eval", "xdial_dailydialog_zhao", "xdial_dailydialog_gupta")


class DailyDialogIndex:
    """Every DailyDialog turn by its key, to look up the turn that follows a context."""

    def __init__(self, dialogues: list[list[str]]):
        self.dialogues = [[match_key(t) for t in d] for d in dialogues]
        self.raw = dialogues
        self.positions: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for d, turns in enumerate(self.dialogues):
            for p, key in enumerate(turns):
                self.positions[key].append((d, p))

    def next_turn(self, context: list[str]) -> str | None:
        """The turn after `context` (oldest first) in DailyDialog, or None if absent or ambiguous."""
        keys = [match_key(t) for t in context if match_key(t)]
        if not keys:
            return None
        found: dict[str, str] = {}
        for d, p in self.positions.get(keys[-1], ()):
            start = p - len(keys) + 1
            turns = self.dialogues[d]
            if start < 0 or turns[start: p + 1] != keys or p + 1 >= len(turns):
                continue
            found.setdefault(turns[p + 1], self.raw[d][p + 1])
        return next(iter(found.values())) if len(found) == 1 else None


@lru_cache(maxsize=2)
def dailydialog_index(data_dir: Path = DEFAULT_DATA_DIR) -> DailyDialogIndex:
    return DailyDialogIndex([d for split in SPLITS for d in dailydialog(split, Path(data_dir))])


def recover_reference(item: JudgedItem, index: DailyDialogIndex | None = None) -> str | None:
    """The human continuation of the item's context in DailyDialog, or None (not found, ambiguous,
    a set not built on DailyDialog, or the item already has references)."""
    if item.references or item.set not in DAILYDIALOG_SETS:
        return None
    return (index or dailydialog_index()).next_turn(item.context)


def with_recovered_references(items: list[JudgedItem], index: DailyDialogIndex | None = None
                              ) -> tuple[list[JudgedItem], int]:
    """Items with a recovered reference filled in where one is found; (new items, how many gained one)."""
    index = index or dailydialog_index()
    out, gained = [], 0
    for item in items:
        reference = recover_reference(item, index)
        if reference is None:
            out.append(item)
        else:
            out.append(replace(item, references=[reference]))
            gained += 1
    return out, gained


def is_reference_reply(item: JudgedItem) -> bool:
    """Whether the judged reply is (normalised) its own first reference: the human reply being judged."""
    return bool(item.references) and match_key(item.response) == match_key(item.references[0])


@dataclass(frozen=True)
class Recovery:
    """References recovered for one set's items: how many items gained one, of how many, and how
    many of those judge the recovered reply itself."""

    gained: int
    total: int
    identical: int


def recover(items: list[JudgedItem], data_dir: Path = DEFAULT_DATA_DIR) -> tuple[list[JudgedItem], Recovery | None]:
    """Items with DailyDialog references filled in where recoverable; None when none were."""
    if any(i.references for i in items):
        return items, None
    filled, gained = with_recovered_references(items, dailydialog_index(Path(data_dir)))
    if not gained:
        return items, None
    return filled, Recovery(gained, len(items), sum(is_reference_reply(i) for i in filled))
