"""`dialscore score FILE --models A [B ...] --output SCORES.jsonl`: a file through several models.

Each JSONL line (a /score item; a `references` list may stand for `reference`: references.py) or CSV
row is scored by every model as bulk reads a line. Output: a record a line, `{"line", "id"?, "system"?,
"scores": {model: score or null}, "versions": {model: version}, "options"?: {model: non-default
options}, "trained"?: [models], "references_left_out"?: n, "errors"?: {model: {code, message}}}`; then
each system's mean per model with its interval (intervals.py); on stderr, each model's training items. A line a model cannot score fails the run unless `--on-invalid skip`.
CSV columns: `context` and `references` (one a line), `response`, `reference`, optional `id` and
`system`. Dialogues are JSONL only."""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from service.artifacts.manifest import ManifestError
from service.bulk.cli import json_object, load_scorers
from service.bulk.errors import BulkError
from service.bulk.output import regular_output
from service.api.warnings import reply_warnings
from service.bulk.records import changed_options, read_object, score_batch
from service.cli import paired, references
from service.cli.intervals import DEFAULT_CONFIDENCE, METHOD, RESAMPLED, IntervalSettings, mean_interval
from service.cli.progress import Progress
from service.components.cache import EncodeCache
from service.config import MAX_SESSION_THREADS, load_settings
from service.csv_text import long_cells, problem
from service.json_body import jsonl_lines
from service.scorers.base import Call, Scorer
from service.observability.logs import configure_logging
from service.store.trained_items import TrainedItems
from service.store.trained_items import load as load_trained
from service.version import VERSION

ALL = "all"  # the row of every line, under the systems'
CSV_FIELDS = ("id", "system", "response", "reference")


def _parse_args(argv: list[str] | None, prog: str = "dialscore score") -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    try:
        settings = load_settings()
    except (ValueError, KeyError) as exc:  # a DIALSCORE_* variable that does not parse
        parser.error(str(exc))
    parser.add_argument("input", type=Path, help="JSONL (one /score item a line) or CSV (a .csv or .tsv name)")
    parser.add_argument("--models", nargs="+", required=True, help="model names (folders of the model store)")
    parser.add_argument("--output", required=True, type=Path, help="JSONL of per-line scores (replaced)")
    parser.add_argument("--system", default="system", help="the field or column naming each line's system "
                                                           "(default: system)")
    parser.add_argument("--options", type=json_object, default={},
                        help='options keyed by model, as /score with several models: \'{"ruber": {"blend": "max"}}\'')
    parser.add_argument("--json", action="store_true", help="print the means as JSON instead of a table")
    parser.add_argument("--keep", nargs="+", action="extend", default=[], metavar="FIELD",
                        help="input fields (CSV columns) copied into each record's `kept`, e.g. a human rating, for "
                             "`python -m service.analysis correlate OUTPUT --human FIELD`")
    parser.add_argument("--max-refs", type=int, default=references.DEFAULT_MAX_REFS, metavar="N",
                        help="a line's `references` list: a referenced model scores against the first N and keeps "
                             "the best, the rest left out and counted (default 4, as `training evaluate --max-refs` "
                             "and the models' cards)")
    parser.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE,
                        help="level of each mean's Student-t interval (default 0.95)")
    parser.add_argument("--resamples", type=int, default=None,
                        help="0: no intervals; any other value changes nothing (the Student-t interval resamples "
                             "nothing; kept for older command lines)")
    parser.add_argument("--seed", type=int, default=None,
                        help="changes nothing (the intervals draw nothing at random; kept for older command lines)")
    parser.add_argument("--paired-by", metavar="FIELD", default=None,
                        help="compare every two systems on the inputs both answered, lines matched by FIELD (an "
                             "input's id): mean difference, Student-t interval and paired t-test per model "
                             "(service/cli/paired.py)")
    parser.add_argument("--exclude-trained", action="store_true",
                        help="leave out every line that is a training item of one of --models (its last turn and reply, "
                             "in any spelling, are an item the model read: service/store/trained_items.py); without it "
                             "such lines are marked `trained` and counted")
    parser.add_argument("--progress-every", type=float, default=10.0, metavar="SECONDS",
                        help="seconds between progress lines on stderr (default 10; 0: after every batch)")
    parser.add_argument("--on-invalid", choices=("fail", "skip"), default="fail",
                        help="a line some model cannot score: fail (default) exits 1 and writes no output; skip "
                             "writes it as an error record and goes on (exit 0)")
    parser.add_argument("--batch-size", type=int, default=256, help="lines scored together (default 256)")
    parser.add_argument("--model-store", type=Path, default=settings.model_store)
    parser.add_argument("--threads", type=int, default=settings.intra_op_threads,
                        help="ONNX Runtime intra-op threads (0: all cores; default: $DIALSCORE_INTRA_OP_THREADS, else 0)")
    args = parser.parse_args(argv)
    if args.batch_size < 1:
        parser.error("--batch-size must be at least 1")
    if not 0 <= args.threads <= MAX_SESSION_THREADS:
        parser.error(f"--threads must be 0 (all cores) to {MAX_SESSION_THREADS}, as DIALSCORE_INTRA_OP_THREADS")
    if args.max_refs < 1:
        parser.error("--max-refs must be at least 1")
    if not 0 <= args.progress_every < float("inf"):  # NaN too
        parser.error("--progress-every must be a number of seconds, 0 or more")
    if not 0 < args.confidence < 1:
        parser.error("--confidence must lie strictly between 0 and 1")
    if args.resamples is not None and args.resamples < 0:
        parser.error("--resamples must not be negative")
    if len(set(args.models)) < len(args.models):
        parser.error("--models names a model twice")
    if unknown := sorted(set(args.options) - set(args.models)):
        parser.error(f"--options names {', '.join(unknown)}, not among --models (options are keyed by model)")
    if flat := sorted(name for name, value in args.options.items() if not isinstance(value, dict)):
        parser.error(f"--options gives {', '.join(flat)} a value that is not a JSON object (options are keyed by "
                     'model, each an object: \'{"ruber": {"blend": "max"}}\')')
    args.settings = settings
    return args


def _csv_lines(path: Path, system: str, keep: list[str]) -> Iterator[tuple[int, bytes]]:
    """Each data row as the JSON line bulk reads: row 1 is the first row under the header. A row that is not
    UTF-8, not well-formed CSV (strict: an unclosed quote, text after a closing one) or not as wide as the
    header is a BulkError naming the row and the file line it begins on."""
    with long_cells(), open(path, encoding="utf-8-sig", errors="surrogateescape", newline="") as handle:
        reader = csv.DictReader(handle, dialect="excel-tab" if path.suffix.lower() == ".tsv" else "excel",
                                strict=True)
        rows = iter(reader)
        number, ended = 0, 0  # the row being read (0: the header), and the file line the one before ended on
        try:
            _utf8_or_raise(reader.fieldnames or [])
            if absent := [name for name in keep if name not in (reader.fieldnames or [])]:
                raise BulkError(f"{path}: --keep {' '.join(absent)}: no such column (the header has "
                                f"{', '.join(reader.fieldnames or [])})")
            ended = reader.line_num
            while (row := next(rows, None)) is not None:
                number += 1
                _as_wide_as_the_header(row, len(reader.fieldnames or []))
                _utf8_or_raise([*row.values()])
                ended = reader.line_num
                yield number, _item_line(row, system, keep)
        except (csv.Error, _NotUtf8, _Ragged) as exc:
            number += isinstance(exc, csv.Error)  # raised by reading the next row
            where = f"line {number}" if number else "the header"
            raise BulkError(f"{path}: {where} (file line {ended + 1}): {problem(exc)}") from None


class _NotUtf8(ValueError):
    """A cell holding a byte that is not UTF-8 (read as a lone surrogate under errors="surrogateescape")."""


class _Ragged(ValueError):
    """A row wider or narrower than the header: its cells would be read under other columns' names."""


def _as_wide_as_the_header(row: dict[Any, Any], columns: int) -> None:
    """csv.DictReader keeps a row's extra cells under None and fills missing ones with None, silently."""
    extra, short = len(row.get(None) or []), sum(value is None for key, value in row.items() if key is not None)
    if extra or short:
        fix = "quote a cell that holds the delimiter" if extra else "give every column a cell: an empty one is no value"
        raise _Ragged(f"{columns + extra - short} cell(s) where the header has {columns} ({fix})")


_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def _utf8_or_raise(cells: list[Any]) -> None:
    for cell in cells:
        found = _ESCAPED_BYTE.search(cell) if isinstance(cell, str) else None
        if found is not None:
            raise _NotUtf8(f"not UTF-8: byte 0x{ord(found.group()) - 0xDC00:02x}")


def _item_line(row: dict[str, Any], system: str, keep: list[str]) -> bytes:
    """A CSV row as the /score item's JSON line: the context cell's lines are its turns."""
    item: dict[str, Any] = {"context": [t for t in (row.get("context") or "").splitlines() if t.strip()]}
    # a kept column is copied as is; `context` and `references` are read into lists below, kept as such
    for name in dict.fromkeys((*CSV_FIELDS, system, *(k for k in keep if k not in ("context", references.FIELD)))):
        if row.get(name):  # an empty cell is no value: no reference, no system
            item[name] = row[name]
    if row.get(references.FIELD):
        item[references.FIELD] = [r for r in row[references.FIELD].splitlines() if r.strip()]
    return json.dumps(item, ensure_ascii=False).encode("utf-8")



def _line_object(raw: bytes) -> dict[str, Any] | None:
    """The line's JSON object, or None (a line that is not one is an error record of every model)."""
    try:
        return read_object(raw)  # the scorer's own JSON reading: no mark comes from a reading it refused
    except ValueError:
        return None


def _system_of(obj: dict[str, Any] | None, key: str) -> str | None:
    value = None if obj is None else obj.get(key)
    return None if value is None else str(value)


def _trained_by(obj: dict[str, Any] | None, trained: list[TrainedItems]) -> list[str]:
    """The models among `trained` whose training items hold this line (a turn-level line only)."""
    context = None if obj is None else obj.get("context")
    response = None if obj is None else obj.get("response")
    if not isinstance(context, list) or not all(isinstance(t, str) for t in context) or not isinstance(response, str):
        return []
    return [t.model for t in trained if t.holds(context, response)]


@dataclass
class Means:
    """One row of the table (a system, or every line): its lines, and each model's scores of them."""

    lines: int = 0
    values: dict[str, list[float]] = field(default_factory=dict)

    def add(self, scores: dict[str, float | None]) -> None:
        self.lines += 1
        for model, score in scores.items():
            if score is not None:
                self.values.setdefault(model, []).append(score)

    def scored(self, model: str) -> int:
        return len(self.values.get(model, ()))

    def mean(self, model: str) -> float | None:
        return sum(self.values[model]) / len(self.values[model]) if self.scored(model) else None

    def interval(self, model: str, settings: IntervalSettings) -> list[float] | None:
        return mean_interval(self.values.get(model, []), settings)


@dataclass
class Summary:
    systems: dict[str, Means] = field(default_factory=dict)  # in the order first met
    every: Means = field(default_factory=Means)
    errors: dict[str, list[str]] = field(default_factory=dict)  # model: "line n: message", in line order
    written: int = 0  # records written
    failed_lines: int = 0  # lines at least one model could not score
    trained: dict[str, int] = field(default_factory=dict)  # model: lines that are its training items
    trained_scored: dict[str, int] = field(default_factory=dict)  # model: those of them it scored
    excluded: int = 0  # lines left out as a model's training items (--exclude-trained)
    max_refs: int = references.DEFAULT_MAX_REFS
    references_left_out: int = 0  # references past the first max_refs, over every line a referenced model read
    lines_with_references_left_out: int = 0
    warnings: dict[str, int] = field(default_factory=dict)  # code: lines written whose reply the models cannot read
    paired_by: str | None = None  # --paired-by: scores[model][system][input], each input's scores of that system
    paired: dict[str, dict[str, dict[str, list[float]]]] = field(default_factory=dict)


def _score_lines(batch: list[tuple[int, bytes]], scorer: Scorer, options: dict[str, Any],
                 cache: EncodeCache, max_refs: int = references.DEFAULT_MAX_REFS) -> list[dict[str, Any]]:
    """score_batch's records for `batch`, a line with a `references` list scored against each of its first
    `max_refs` (references.py)."""
    if not Call(scorer, options).reads_reference:
        return score_batch(batch, scorer, options, cache=cache)
    flat: list[tuple[int, bytes]] = []
    spans: list[tuple[int, int] | dict[str, Any]] = []
    for number, raw in batch:
        try:
            expanded = references.expand(raw, max_refs)
        except ValueError as exc:
            obj = _line_object(raw) or {}
            spans.append({"line": number, **({"id": obj["id"]} if "id" in obj else {}),
                          "error": {"code": "bad_line", "message": str(exc)}})
            continue
        spans.append((len(flat), len(flat) + len(expanded or [raw])))
        flat += [(number, line) for line in expanded or [raw]]
    records = score_batch(flat, scorer, options, cache=cache)
    return [span if isinstance(span, dict) else references.best(records[span[0]:span[1]]) for span in spans]


def score_file(lines: Iterator[tuple[int, bytes]], scorers: list[Scorer], options: list[dict[str, Any]],
               sink: io.TextIOBase, system_key: str, batch_size: int, trained: list[TrainedItems] | None = None,
               exclude_trained: bool = False, max_refs: int = references.DEFAULT_MAX_REFS,
               keep: list[str] | None = None, progress: Callable[[int], None] | None = None,
               not_english_confidence: float | None = None, paired_by: str | None = None) -> Summary:
    """Score every line with every model, write one record a line to `sink`, and return the means. A line
    that is a training item of a model in `trained` is marked (`"trained": [models]`), or with
    `exclude_trained` left out of the output and the means (of every model, so they compare on one set).
    A referenced model reads a `references` list's first `max_refs`; a record counts the rest
    (`references_left_out`), as does the summary. `keep`: fields copied into the record's `kept`.
    `progress` is called with the lines written after each batch. With `not_english_confidence`, a reply
    the models cannot read is marked `warning` (as /score's); with `paired_by`, each system's scores are
    also kept by the line's value of that field (paired.py)."""
    summary = Summary(max_refs=max_refs, paired_by=paired_by)
    # Each record names what scored it, so that a reader of the output alone (service.analysis) can say so.
    versions = {scorer.name: scorer.version for scorer in scorers}
    changed = {scorer.name: changed_options(scorer, opts) for scorer, opts in zip(scorers, options)}
    changed = {name: opts for name, opts in changed.items() if opts}
    reads_references = any(Call(scorer, opts).reads_reference for scorer, opts in zip(scorers, options))
    batch: list[tuple[int, bytes]] = []
    found: list[tuple[dict[str, Any] | None, list[str]]] = []

    def flush() -> None:
        cache = EncodeCache()  # the models share their encoders' work on these lines
        by_model = [_score_lines(batch, scorer, opts, cache, max_refs) for scorer, opts in zip(scorers, options)]
        for (number, _), (obj, marks), records in zip(batch, found, zip(*by_model)):
            out: dict[str, Any] = {"line": number}
            if "id" in records[0]:
                out["id"] = records[0]["id"]
            system = _system_of(obj, system_key)
            if system is not None:
                out["system"] = system
            out["scores"] = {scorer.name: r.get("score") for scorer, r in zip(scorers, records)}
            if details := {scorer.name: r["details"] for scorer, r in zip(scorers, records) if "details" in r}:
                out["details"] = details  # what options such as ruber's `components` ask for, as bulk writes it
            out["versions"] = versions
            if changed:
                out["options"] = changed
            if keep:
                out["kept"] = {name: obj[name] for name in keep if obj is not None and name in obj}
            if marks:
                out["trained"] = marks
            reply = None if obj is None else obj.get("response")
            if not_english_confidence is not None and isinstance(reply, str):
                for warning in reply_warnings([(0, reply)], not_english_confidence, "score", counted=False):
                    out["warning"] = {"code": warning["code"], "message": warning["message"]}
                    summary.warnings[warning["code"]] = summary.warnings.get(warning["code"], 0) + 1
            if left_out := references.left_out(obj, max_refs) if reads_references else 0:
                out["references_left_out"] = left_out
                summary.references_left_out += left_out
                summary.lines_with_references_left_out += 1
            errors = {scorer.name: r["error"] for scorer, r in zip(scorers, records) if "error" in r}
            if errors:
                out["errors"] = errors
                summary.failed_lines += 1
                for name, error in errors.items():
                    summary.errors.setdefault(name, []).append(f"line {number}: {error['message']}")
            for model in marks:  # a score it could not give adds nothing to its means
                if out["scores"].get(model) is not None:
                    summary.trained_scored[model] = summary.trained_scored.get(model, 0) + 1
            if paired_by is not None and system is not None and obj is not None and obj.get(paired_by) is not None:
                for model, value in out["scores"].items():
                    if value is not None:
                        by_input = summary.paired.setdefault(model, {}).setdefault(system, {})
                        by_input.setdefault(str(obj[paired_by]), []).append(value)
            sink.write(json.dumps(out, ensure_ascii=False, allow_nan=False) + "\n")
            summary.written += 1
            summary.every.add(out["scores"])
            if system is not None:
                summary.systems.setdefault(system, Means()).add(out["scores"])
        batch.clear()
        found.clear()
        if progress is not None:
            progress(summary.written)

    for number, raw in lines:
        obj = _line_object(raw)
        marks = _trained_by(obj, trained or [])
        for model in marks:
            summary.trained[model] = summary.trained.get(model, 0) + 1
        if marks and exclude_trained:
            summary.excluded += 1
            continue
        batch.append((number, raw))
        found.append((obj, marks))
        if len(batch) >= batch_size:
            flush()
    if batch:
        flush()
    return summary


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _trained_on(about: dict[str, Any]) -> str:
    """What a model's keys come from, in words: the rated sets' partition and the unrated pair streams."""
    parts = []
    if about.get("sets"):
        parts.append(f"its {about.get('split', 'train')} partition of {', '.join(about['sets'])}")
    pairs = about.get("pairs") or {}
    if pairs.get("sets"):
        parts.append(f"the judged sets' items that are (turn, reply) pairs of its training dialogues "
                     f"({', '.join(pairs.get('sources', []))}; their other pairs are not checked)")
    return "; ".join(parts) or "its training items"


def trained_lines(summary: Summary, trained: list[TrainedItems], exclude: bool) -> list[str]:
    """How many lines were each model's training items (every model with shipped keys is named, 0
    included), and what became of them: the warning a reader must see before comparing with a paper."""
    lines = []
    for keys in trained:
        count, scored = summary.trained.get(keys.model, 0), summary.trained_scored.get(keys.model, 0)
        where = _trained_on(keys.about)
        unscored = f" ({count - scored} more it could not score)" if count > scored else ""
        if count and exclude:
            lines.append(f"left out: {count} lines are {keys.model}'s training items ({where})")
        elif scored:
            lines.append(f"warning: {scored} of the {summary.every.scored(keys.model)} lines {keys.model} scored are "
                         f"its training items{unscored} ({where}): "
                         "its scores there are no held-out figures; --exclude-trained leaves them out")
        elif count:
            lines.append(f"{keys.model}: {count} {'line is' if count == 1 else 'lines are'} its training items "
                         f"({where}), none of them scored")
        else:
            lines.append(f"{keys.model}: no line matched its training keys ({where}; matched by the last context "
                         "turn and the reply, a leading speaker tag aside: a context joined into one turn is not)")
    if exclude:
        noun = "line" if summary.excluded == 1 else "lines"
        lines.append(f"--exclude-trained: {summary.excluded} {noun} left out, {summary.every.lines} scored (what no model "
                     "here was trained on, which is not a set's dev split: `python -m training dev-items` writes "
                     "the items docs/evaluation.md measures)")
    return lines


def _inert_options(args: argparse.Namespace) -> str | None:
    """A line naming `--resamples N` (N > 0) and `--seed` where given: accepted, but they change nothing."""
    given = ([f"--resamples {args.resamples}"] if args.resamples else []) + (
        [f"--seed {args.seed}"] if args.seed is not None else [])
    if not given:
        return None
    return (f"{' and '.join(given)} {'changes' if len(given) == 1 else 'change'} nothing: the intervals are "
            "Student-t intervals, which resample nothing (--resamples 0 turns them off)")


def _cell(means: Means, model: str, settings: IntervalSettings) -> str:
    """A table cell: the mean, and its interval where it has one."""
    interval = means.interval(model, settings)
    return _number(means.mean(model)) + ("" if interval is None else f" [{interval[0]:.4f}, {interval[1]:.4f}]")


def _references_line(summary: Summary) -> str | None:
    if not summary.references_left_out:
        return None
    lines = summary.lines_with_references_left_out
    return (f"references: a referenced model read the first {summary.max_refs} of each list (--max-refs); "
            f"{summary.references_left_out} more on {lines} {'line' if lines == 1 else 'lines'} left out")


def table(summary: Summary, scorers: list[Scorer], options: list[dict[str, Any]],
          settings: IntervalSettings = IntervalSettings()) -> str:
    """The means (with their intervals) as aligned text: a row per system, then `all`; below, the models'
    versions, errors, what the intervals resample, references left out and the tool's version."""
    names = [s.name for s in scorers]
    rows = [[system, str(m.lines), *(_cell(m, n, settings) for n in names)] for system, m in summary.systems.items()]
    rows.append([ALL, str(summary.every.lines), *(_cell(summary.every, n, settings) for n in names)])
    header = ["system", "lines", *names]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    text = [" ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
            for r in [header, *rows]]
    versions = []
    for scorer, resolved in zip(scorers, options):
        changed = changed_options(scorer, resolved)
        versions.append(f"{scorer.name} {scorer.version}" + (f" {json.dumps(changed)}" if changed else ""))
    text.append("models: " + ", ".join(versions))
    for name, errors in summary.errors.items():
        noun = "line" if len(errors) == 1 else "lines"
        text.append(f"not scored by {name}: {len(errors)} {noun} ({'' if len(errors) == 1 else 'first: '}{errors[0]})")
    if settings.enabled:
        text.append(f"intervals: {100 * settings.confidence:.12g}% {METHOD}; resampled {RESAMPLED}")
    if (line := _references_line(summary)) is not None:
        text.append(line)
    text += _paired_lines(summary, settings)
    text.append(f"dialscore {VERSION}")
    return "\n".join(text)


def _paired_lines(summary: Summary, settings: IntervalSettings) -> list[str]:
    """The table's section for --paired-by: a line per model and pair of systems."""
    if summary.paired_by is None:
        return []
    text = [f"paired by {summary.paired_by}: {paired.METHOD}"]
    for model, rows in paired.compare_systems(summary.paired, list(summary.systems), settings).items():
        for row in rows:
            ci = "" if row["ci"] is None else f" [{row['ci'][0]:.4f}, {row['ci'][1]:.4f}]"
            tested = (f", p {row['p']:.3g}, p_holm {row['p_holm']:.3g}" if row["p"] is not None else
                      f" ({row['reason']})")
            text.append(f"  {model}: {row['a']} - {row['b']} = {_number(row['delta'])}{ci} over {row['n']} inputs"
                        f"{tested}")
    return text


def as_json(summary: Summary, scorers: list[Scorer], settings: IntervalSettings = IntervalSettings()) -> dict[str, Any]:
    def row(means: Means) -> dict[str, Any]:
        return {"lines": means.lines, "means": {s.name: means.mean(s.name) for s in scorers},
                "ci": {s.name: means.interval(s.name, settings) for s in scorers},
                "scored": {s.name: means.scored(s.name) for s in scorers}}

    return {"dialscore": VERSION, "models": {s.name: s.version for s in scorers},
            "systems": {name: row(m) for name, m in summary.systems.items()}, ALL: row(summary.every),
            "intervals": settings.describe(),
            "errors": {name: len(errors) for name, errors in summary.errors.items()},
            "failed_lines": summary.failed_lines, "trained": summary.trained,
            "trained_scored": summary.trained_scored, "excluded": summary.excluded, "warnings": summary.warnings,
            "references_left_out": {"max_refs": summary.max_refs, "references": summary.references_left_out,
                                    "lines": summary.lines_with_references_left_out},
            "paired": None if summary.paired_by is None else {
                "by": summary.paired_by, "method": paired.METHOD, "confidence": settings.confidence,
                "pairs": paired.compare_systems(summary.paired, list(summary.systems), settings)}}


class Stopped(BaseException):
    """SIGTERM or SIGINT (Ctrl-C) during a run: a BaseException, as KeyboardInterrupt, so that no handler of
    errors takes it for one."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _stops_raised() -> Iterator[None]:
    """Within: SIGTERM and SIGINT raise Stopped, which also ends a read blocked on a pipe (PEP 475 retries
    only a read whose handler returns); the previous handlers afterwards. Off the main thread, which cannot
    set handlers, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise Stopped(signum)

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _run(args: argparse.Namespace) -> tuple[Summary, list[Scorer], list[dict[str, Any]], list[TrainedItems]]:
    """Load the models, score the input into the output (replaced only once whole), and return the summary."""
    scorers = load_scorers(args.model_store, args.models, args.settings, args.threads)
    trained = [keys for keys in (load_trained(args.model_store / s.name) for s in scorers) if keys is not None]
    options = []
    for scorer in scorers:
        try:
            options.append(scorer.resolve_options(args.options.get(scorer.name)))
        except ValueError as exc:
            raise BulkError(f"bad --options for {scorer.name}: {exc}") from None
    csv_input = args.input.suffix.lower() in (".csv", ".tsv")
    read = [*args.keep, *([args.paired_by] if args.paired_by and args.paired_by not in args.keep else [])]
    lines = _csv_lines(args.input, args.system, read) if csv_input else jsonl_lines(args.input)
    output = regular_output(args.output, "to write the scores to")
    if output.exists() and output.samefile(args.input):
        raise BulkError(f"--output {args.output} is the input; name another file")
    if not output.parent.is_dir():
        raise BulkError(f"{output.parent} (the folder of --output) does not exist")
    # A name of this run's own: two runs writing one output each replace it whole, never each other's lines.
    partial = output.with_name(f"{output.name}.{os.getpid()}.partial")
    try:
        with open(partial, "w", encoding="utf-8") as sink:
            summary = score_file(lines, scorers, options, sink, args.system, args.batch_size, trained,
                                 args.exclude_trained, args.max_refs, args.keep, Progress(args.progress_every),
                                 args.settings.not_english_confidence, args.paired_by)
        if not summary.failed_lines or args.on_invalid == "skip":
            os.replace(partial, output)
    finally:
        partial.unlink(missing_ok=True)
    return summary, scorers, options, trained


def main(argv: list[str] | None = None, prog: str = "dialscore score") -> int:
    """0 done; 1 lines a model could not score, with `--on-invalid fail` (the default: the output is then
    left as it was, as /score answers a 422 and scores nothing); 2 a set-up or I/O error (the output is
    replaced only once whole, so it is then left as it was too). With `--on-invalid skip` such lines are
    error records of the output and the run is done (0); 143 SIGTERM, 130 Ctrl-C (the partial output removed,
    the output left as it was)."""
    configure_logging()
    args = _parse_args(argv, prog)
    # The table is what a person reads: the store's loading lines only when DIALSCORE_LOG_LEVEL asks.
    configure_logging(args.settings.log_level if os.environ.get("DIALSCORE_LOG_LEVEL") else "WARNING")
    try:
        with _stops_raised():
            summary, scorers, options, trained = _run(args)
    except Stopped as stop:
        print(f"dialscore score: stopped by {signal.Signals(stop.signum).name}; {args.output} not written",
              file=sys.stderr)
        return 128 + stop.signum
    except (BulkError, ManifestError, OSError, csv.Error, UnicodeDecodeError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)  # plain, as argparse's and the run's other lines
        return 2
    settings = IntervalSettings(args.confidence, enabled=args.resamples != 0)
    if (line := _inert_options(args)) is not None:
        print(f"dialscore score: {line}", file=sys.stderr)
    print(json.dumps(as_json(summary, scorers, settings)) if args.json else table(summary, scorers, options, settings),
          flush=True)
    for line in trained_lines(summary, trained, args.exclude_trained):
        print(f"dialscore score: {line}", file=sys.stderr)
    if summary.warnings:
        counted = ", ".join(f"{code} {count}" for code, count in sorted(summary.warnings.items()))
        print(f"dialscore score: warning: {sum(summary.warnings.values())} lines have replies the models cannot "
              f"read ({counted}): their scores say little about a reply, and they are in the means; each record's "
              "`warning` names it (docs/api.md, \"Replies the models cannot read\")", file=sys.stderr)
    if args.paired_by is not None and not summary.paired:
        print(f"dialscore score: no scored line of a system has the field --paired-by {args.paired_by}: nothing "
              "compared", file=sys.stderr)
    if not summary.systems and args.system != "system":
        print(f"dialscore score: no line has the field --system {args.system}: no per-system rows", file=sys.stderr)
    if summary.failed_lines:
        noun = "line" if summary.failed_lines == 1 else "lines"
        if args.on_invalid == "skip":
            print(f"dialscore score: {summary.failed_lines} {noun} not scored by every model: error records in "
                  f"{args.output} (--on-invalid skip)", file=sys.stderr)
        else:
            print(f"dialscore score: {summary.failed_lines} {noun} could not be scored, {args.output} not written "
                  "(the lines are under the table; --on-invalid skip writes the rest with error records)",
                  file=sys.stderr)
            return 1
    return 0
