"""Input lines to items, and scores to output records.

The output holds exactly one line per input line of the shard, in input order: `{"line": n, "model",
"version", "score", "details"?, "id"?, "trained"?, "warning"?}` (LineChecks), or for a line that cannot be
scored `{"line": n, "model",
"version", "error": {"code", "message"}}` (`bad_line`; `too_large`, a line over --max-line-bytes,
streamed past and never held whole; `scoring_failed`). Nothing is dropped and every line is strict
JSON (no NaN or infinity). Batches are appended and fsync'd one at a time, so a restart after a kill
truncates a torn last line and resumes after the lines written (output.py, checkpoint.py).
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from marshmallow import EXCLUDE, ValidationError

from service.api.schemas import flatten_messages, parse_item
from service.api.warnings import reply_warnings
from service.artifacts import batch_bounds
from service.bulk.checkpoint import OversizedLine
from service.components.cache import EncodeCache
from service.json_body import (BadText, JsonTextError, NotAnObject, NotFinite, NotJson, RepeatedKey, TooDeep,
                               parse_object)
from service.scorers.base import Call, Item, Scorer, lacks_reference
from service.store.trained_items import TrainedItems

log = logging.getLogger("service.bulk")  # one logger for the whole command: its records name it


class BadLine(ValueError):
    """One input line that cannot be scored; carries its `id` when that much could be read."""

    def __init__(self, message: str, item_id: Any = None) -> None:
        super().__init__(message)
        self.item_id = item_id


MAX_LINE_DEPTH = 32  # JSON nesting of one item (the item shapes need 4)


def read_object(raw: bytes) -> dict[str, Any]:
    """json_body's reading of one line, finite numbers only (`id` is copied to the output, which must stay
    JSON), its refusals as ValueErrors: each is one bad line, never a failed run."""
    try:
        return parse_object(raw, max_depth=MAX_LINE_DEPTH, finite=True)
    except RepeatedKey as exc:
        raise ValueError(f"ambiguous JSON{f' at {exc.path}' if exc.path else ''}: {exc}") from None
    except (NotJson, NotFinite) as exc:
        cr_ended = b"\r" in raw.rstrip(b"\r\n")  # JSON's whitespace, so such a file parses as far as its first CR
        raise ValueError(f"not JSON ({f'{exc.path}: ' if exc.path else ''}{exc})" + (
            "; the line holds a bare CR: JSONL lines end in LF or CRLF, and a file whose lines end in CR alone "
            "(save it with LF endings) is read as one line" if cr_ended else "")) from None
    except TooDeep:
        raise ValueError(f"nested deeper than {MAX_LINE_DEPTH} levels") from None
    except NotAnObject as exc:
        raise ValueError(f"a line must hold a JSON object, not {exc.found}") from None
    except BadText as exc:  # a lone surrogate would break writing the output
        raise ValueError(f"{exc.path}: {exc}") from None
    except JsonTextError as exc:  # NotUtf8
        raise ValueError(str(exc)) from None


def parse_line(raw: bytes, scorer: Scorer | Call) -> tuple[Any, Any]:
    """(item, id) for one input line, or raise ValueError with a message a person can act on.

    Items use the HTTP contract's shapes (service/api/schemas.py); unknown keys are ignored so that a
    corpus may carry its own fields (ratings, systems) beside the item, and `id` is echoed back.
    """
    if not raw.removeprefix(b"\xef\xbb\xbf").strip():
        raise ValueError("empty line")
    obj = read_object(raw)
    item_id = obj.get("id")
    try:
        item = parse_item(obj, scorer.kind, unknown=EXCLUDE)
    except ValidationError as exc:
        fields = flatten_messages(exc.messages)
        raise BadLine("; ".join(f"{k}: {v}" for k, v in fields.items()), item_id) from None
    if scorer.reads_reference and isinstance(item, Item) and lacks_reference(item.reference):
        several = (" This command reads one `reference`; `dialscore score` reads a `references` list, scores "
                   "against each and keeps the best." if "references" in obj else "")
        raise BadLine(f"reference: {scorer.name} is a referenced model and needs a reference (not blank).{several}",
                      item_id)
    call = scorer if isinstance(scorer, Call) else Call(scorer, scorer.resolve_options({}))
    if problem := call.item_problem(item):
        raise BadLine(f"{problem[0]}: {problem[1]}", item_id)
    return item, item_id


@dataclass(frozen=True)
class LineChecks:
    """What a record says of its line beside the score: one of the model's training items (`trained`,
    service/store/trained_items.py), a reply the models cannot read (`warning`, service/api/warnings.py)."""

    trained: TrainedItems | None = None
    not_english_confidence: float | None = None  # None: replies are not read for warnings

    def of(self, item: Any) -> dict[str, Any]:
        if not isinstance(item, Item):  # a whole dialogue (mh): no turn and reply to check
            return {}
        found: dict[str, Any] = {}
        if self.trained is not None and self.trained.holds(item.context, item.response):
            found["trained"] = True
        if self.not_english_confidence is not None:
            for warning in reply_warnings([(0, item.response)], self.not_english_confidence, "bulk", counted=False):
                found["warning"] = {"code": warning["code"], "message": warning["message"]}
        return found


def _record(line: int, scorer: Scorer, item_id: Any, extra: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {"line": line, "model": scorer.name, "version": scorer.version, **extra}
    if item_id is not None:
        record["id"] = item_id
    return record


def changed_options(scorer: Scorer, options: dict[str, Any]) -> dict[str, Any]:
    """The resolved `options` that differ from the model's defaults."""
    defaults = scorer.resolve_options({})
    return {k: v for k, v in options.items() if defaults.get(k) != v}


def run_fields(scorer: Scorer, options: dict[str, Any], shard_index: int, shard_count: int) -> dict[str, Any]:
    """What else a resumed run must share with the output it extends, as fields of every record:
    the shard when there are several (another count would give the same file other lines) and
    the options where they differ from the model's defaults (a resume without them would score
    the rest differently), and where scores are not bit-exact across batches the provider and compute
    the encoders run on (a resume on another would join two kinds of scores in one output). Default
    runs on the CPU EP add nothing, so their records stay as they were."""
    fields: dict[str, Any] = {}
    if shard_count > 1:
        fields["shard"] = f"{shard_index}/{shard_count}"
    if changed := changed_options(scorer, options):
        fields["options"] = changed
    if not scorer.bit_exact_across_batches():
        fields["compute"] = batch_bounds.key([c.describe() for c in scorer.components.values()]) or "not batch-exact"
    return fields


def score_batch(batch: list[tuple[int, bytes | OversizedLine]], scorer: Scorer, options: dict[str, Any],
                extra: dict[str, Any] | None = None, cache: EncodeCache | None = None,
                checks: LineChecks | None = None) -> list[dict[str, Any]]:
    """Output records for a batch, in input order: scores, or an error per line that cannot be scored.
    `cache`: one shared by several models scoring the same lines encodes each text once; `checks`: what each
    record says of its line beside the score."""
    extra = extra or {}
    records: list[dict[str, Any] | None] = [None] * len(batch)
    good: list[int] = []
    items: list[Any] = []
    call = Call(scorer, options)  # whether a line needs a reference follows from the options too
    for i, (line, raw) in enumerate(batch):
        if isinstance(raw, OversizedLine):  # not read, so no id to copy
            records[i] = {**_record(line, scorer, None, extra),
                          "error": {"code": "too_large", "message": raw.describe()}}
            continue
        try:
            item, item_id = parse_line(raw, call)
        except ValueError as exc:
            records[i] = {**_record(line, scorer, getattr(exc, "item_id", None), extra),
                          "error": {"code": "bad_line", "message": str(exc)}}
            continue
        records[i] = {**_record(line, scorer, item_id, extra), **(checks.of(item) if checks else {})}
        good.append(i)
        items.append(item)
    if items:
        try:
            results = [scorer.score(items, options, cache if cache is not None else EncodeCache())]
            groups = [good]
        except Exception:  # noqa: BLE001 - find the item that breaks the batch, score the rest
            log.exception("a batch of %d failed; scoring its items one by one", len(items))
            results, groups = [], []
            for i, item in zip(good, items):
                try:
                    results.append(scorer.score([item], options, EncodeCache()))
                    groups.append([i])
                except Exception as exc:  # noqa: BLE001 - an item the model cannot score is reported
                    records[i]["error"] = {"code": "scoring_failed", "message": f"{type(exc).__name__}: {exc}"}
        for result, indices in zip(results, groups):
            for j, i in enumerate(indices):
                records[i]["score"] = result.scores[j]
                if result.details:
                    records[i]["details"] = result.details[j]
    return [r for r in records if r is not None]


def encode_records(records: list[dict[str, Any]]) -> bytes:
    """The output lines of a batch, strict JSON. A record that holds NaN or infinity (a model fault;
    input lines holding them are bad lines) becomes a `scoring_failed` error: one value must neither
    make the output unreadable nor stop the run, since a retry would meet it again."""
    lines = []
    for record in records:
        try:
            line = json.dumps(record, ensure_ascii=False, allow_nan=False)
        except ValueError:
            record.pop("score", None)
            record.pop("details", None)
            record["error"] = {"code": "scoring_failed", "message": "the model gave a score that is not a finite number"}
            line = json.dumps(record, ensure_ascii=False, allow_nan=False)
        try:
            lines.append(line.encode("utf-8"))
        except UnicodeEncodeError:  # a lone surrogate that reached a message: escaped, never a failed run
            lines.append(json.dumps(record, ensure_ascii=True, allow_nan=False).encode("ascii"))
    return b"".join(line + b"\n" for line in lines)
