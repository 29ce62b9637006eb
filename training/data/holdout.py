"""What of the development text no training stream may hold: `DevHoldout`, the dev items' text by the
loose `keys.match_key`.

Training streams drop a dialogue or item that holds, as consecutive turns, a dev item's last two context
turns or its query and reply; query-keyed sets also drop a dev query. Pairs shorter than
`MIN_WINDOW_CHARS` letters and digits (greetings) are not matched. The partitions themselves are not re-keyed."""
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
