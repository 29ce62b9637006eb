"""What of the development text no training stream may hold.

The judgement partitions are keyed on the query's split key (`judgements.normalise`), which keeps
spelling variants apart, and the unlabelled corpora know nothing of the partitions at all: the
overlap audit (docs/evaluation.md) found xdial_dailydialog_zhao's contexts in DailyDialog *train*,
and DailyDialog's test and validation splits repeating train dialogues, so VHRED and RUBER had
read the human reply of some dev items. `DevHoldout` holds the dev items' text by the loose
`keys.match_key`, and every training stream drops what touches it:

* unlabelled dialogues (VHRED, RUBER, next-turn pre-training) that contain, as consecutive
  turns, a dev item's last two context turns or its query followed by its judged reply: a dev
  context whose continuation (the reference, often the judged reply) was read;
* judged train items whose query is a dev query (query-keyed sets), or whose context and reply
  hold a dev context or dev pair as consecutive turns (a later turn of a dev dialogue; ConTurE
  bots repeat turns across dialogues);
* the -minilm heads' unrated pairs (next-turn pre-training, RUBER's negative sampling) by both rules.

The partitions themselves are not re-keyed: the dev items stay exactly those measured before, so
the development tables stay comparable, and only training streams lose what repeated them.

A single turn alone is not matched, nor a pair shorter than `MIN_WINDOW_CHARS` letters and
digits: "hi" / "hello, how are you?" opens hundreds of Chit-Chat and ConTurE dialogues and says
nothing of a dev item (with greetings matched, 47 Chit-Chat train dialogues went for nothing).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from training.data.keys import match_key

MIN_WINDOW_CHARS = 24


@dataclass(frozen=True)
class DevHoldout:
    """Dev text by match key: consecutive-turn pairs and (for query-keyed sets) queries."""

    windows: frozenset[tuple[str, str]] = field(default_factory=frozenset)
    queries: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, dev: Iterable[tuple[Sequence[str], str, bool]]) -> "DevHoldout":
        """From (context, reply, keyed by query) of every dev item."""
        windows: set[tuple[str, str]] = set()
        queries: set[str] = set()
        for context, reply, by_query in dev:
            turns = [match_key(t) for t in context]
            turns = [t for t in turns if t]
            if not turns:
                continue
            pairs = [(turns[-1], match_key(reply))] + ([(turns[-2], turns[-1])] if len(turns) >= 2 else [])
            windows.update(p for p in pairs if p[1] and len(p[0]) + len(p[1]) >= MIN_WINDOW_CHARS)
            if by_query:
                queries.add(turns[-1])
        return cls(frozenset(windows), frozenset(queries))

    def touches(self, turns: Sequence[str]) -> bool:
        """Whether two consecutive turns of `turns` are dev text (a dev context or dev pair)."""
        keys = [k for k in (match_key(t) for t in turns) if k]
        return any((a, b) in self.windows for a, b in zip(keys, keys[1:]))

    def holds_query(self, context: Sequence[str]) -> bool:
        """Whether the context's last turn is the query of a query-keyed dev item."""
        return bool(context) and match_key(context[-1]) in self.queries

    def unseen(self, dialogues: list[list[str]]) -> tuple[list[list[str]], int]:
        """The dialogues that touch no dev text, in order; and how many were dropped."""
        kept = [d for d in dialogues if not self.touches(d)]
        return kept, len(dialogues) - len(kept)
