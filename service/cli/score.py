"""`dialscore score FILE --models A [B ...] --output SCORES.jsonl`: a file through several models.

Each JSONL line (the /score item shape) or CSV row is scored by every model in this process with bulk's
reading of a line, so a line one model cannot score is an error record for that model, never a failed
run. Output: one JSON record a line, `{"line", "id"?, "system"?, "scores": {model: score or null},
"errors"?: {model: {code, message}}}`; then, as sacrebleu prints a corpus score, each system's mean score
per model (every line is in `all`), the models' versions under the table. CSV columns: `context` (one
turn a line), `response`, `reference` (may be empty), optional `id` and `system`. Dialogues are JSONL only."""
from __future__ import annotations

import argparse
import csv
import io
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from service.bulk.cli import json_object, load_scorers
from service.bulk.errors import BulkError
from service.bulk.records import score_batch
from service.components.cache import EncodeCache
from service.config import load_settings
from service.scorers.base import Scorer
from service.logs import configure_logging

log = logging.getLogger("service.cli")
ALL = "all"  # the row of every line, under the systems'
CSV_FIELDS = ("id", "system", "response", "reference")


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="dialscore score", description=__doc__.split("\n\n")[0])
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
    parser.add_argument("--batch-size", type=int, default=256, help="lines scored together (default 256)")
    parser.add_argument("--model-store", type=Path, default=settings.model_store)
    parser.add_argument("--threads", type=int, default=settings.intra_op_threads,
                        help="ONNX Runtime intra-op threads (0: all cores; default: $DIALSCORE_INTRA_OP_THREADS, else 0)")
    args = parser.parse_args(argv)
    if args.batch_size < 1:
        parser.error("--batch-size must be at least 1")
    if len(set(args.models)) < len(args.models):
        parser.error("--models names a model twice")
    if unknown := sorted(set(args.options) - set(args.models)):
        parser.error(f"--options names {', '.join(unknown)}, not among --models (options are keyed by model)")
    args.settings = settings
    return args


def _csv_lines(path: Path, system: str) -> Iterator[tuple[int, bytes]]:
    """Each data row as the JSON line bulk reads: row 1 is the first row under the header."""
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle, dialect="excel-tab" if path.suffix.lower() == ".tsv" else "excel")
        for number, row in enumerate(reader, 1):
            item: dict[str, Any] = {"context": [t for t in (row.get("context") or "").splitlines() if t.strip()]}
            for name in dict.fromkeys((*CSV_FIELDS, system)):
                if row.get(name):  # an empty cell is no value: no reference, no system
                    item[name] = row[name]
            yield number, json.dumps(item, ensure_ascii=False).encode("utf-8")


def _jsonl_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with open(path, "rb") as handle:
        yield from enumerate(handle, 1)


def _system_of(raw: bytes, key: str) -> str | None:
    """The line's system as text, or None (a line that is not a JSON object has none: it is an error record)."""
    try:
        value = json.loads(raw).get(key)
    except (ValueError, AttributeError, RecursionError):
        return None
    return None if value is None else str(value)


@dataclass
class Means:
    """Running sums of one row of the table (a system, or every line)."""

    lines: int = 0
    sums: dict[str, float] = field(default_factory=dict)
    scored: dict[str, int] = field(default_factory=dict)

    def add(self, scores: dict[str, float | None]) -> None:
        self.lines += 1
        for model, score in scores.items():
            if score is not None:
                self.sums[model] = self.sums.get(model, 0.0) + score
                self.scored[model] = self.scored.get(model, 0) + 1

    def mean(self, model: str) -> float | None:
        return self.sums[model] / self.scored[model] if self.scored.get(model) else None


@dataclass
class Summary:
    systems: dict[str, Means] = field(default_factory=dict)  # in the order first met
    every: Means = field(default_factory=Means)
    errors: dict[str, list[str]] = field(default_factory=dict)  # model: "line n: message", in line order


def score_file(lines: Iterator[tuple[int, bytes]], scorers: list[Scorer], options: list[dict[str, Any]],
               sink: io.TextIOBase, system_key: str, batch_size: int) -> Summary:
    """Score every line with every model, write one record a line to `sink`, and return the means."""
    summary = Summary()
    batch: list[tuple[int, bytes]] = []

    def flush() -> None:
        cache = EncodeCache()  # the models share their encoders' work on these lines
        by_model = [score_batch(batch, scorer, opts, cache=cache) for scorer, opts in zip(scorers, options)]
        for (number, raw), records in zip(batch, zip(*by_model)):
            out: dict[str, Any] = {"line": number}
            if "id" in records[0]:
                out["id"] = records[0]["id"]
            system = _system_of(raw, system_key)
            if system is not None:
                out["system"] = system
            out["scores"] = {scorer.name: r.get("score") for scorer, r in zip(scorers, records)}
            errors = {scorer.name: r["error"] for scorer, r in zip(scorers, records) if "error" in r}
            if errors:
                out["errors"] = errors
                for name, error in errors.items():
                    summary.errors.setdefault(name, []).append(f"line {number}: {error['message']}")
            sink.write(json.dumps(out, ensure_ascii=False, allow_nan=False) + "\n")
            summary.every.add(out["scores"])
            if system is not None:
                summary.systems.setdefault(system, Means()).add(out["scores"])
        batch.clear()

    for number, raw in lines:
        batch.append((number, raw))
        if len(batch) >= batch_size:
            flush()
    if batch:
        flush()
    return summary


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def table(summary: Summary, scorers: list[Scorer], options: list[dict[str, Any]]) -> str:
    """The means as aligned text: a row per system, then `all`; the models' versions and errors below."""
    names = [s.name for s in scorers]
    rows = [[system, str(m.lines), *(_number(m.mean(n)) for n in names)] for system, m in summary.systems.items()]
    rows.append([ALL, str(summary.every.lines), *(_number(summary.every.mean(n)) for n in names)])
    header = ["system", "lines", *names]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    text = [" ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
            for r in [header, *rows]]
    versions = []
    for scorer, resolved in zip(scorers, options):
        changed = {k: v for k, v in resolved.items() if scorer.resolve_options({}).get(k) != v}
        versions.append(f"{scorer.name} {scorer.version}" + (f" {json.dumps(changed)}" if changed else ""))
    text.append("models: " + ", ".join(versions))
    for name, errors in summary.errors.items():
        noun = "line" if len(errors) == 1 else "lines"
        text.append(f"not scored by {name}: {len(errors)} {noun} ({'' if len(errors) == 1 else 'first: '}{errors[0]})")
    return "\n".join(text)


def as_json(summary: Summary, scorers: list[Scorer]) -> dict[str, Any]:
    def row(means: Means) -> dict[str, Any]:
        return {"lines": means.lines, "means": {s.name: means.mean(s.name) for s in scorers},
                "scored": {s.name: means.scored.get(s.name, 0) for s in scorers}}

    return {"models": {s.name: s.version for s in scorers},
            "systems": {name: row(m) for name, m in summary.systems.items()}, ALL: row(summary.every),
            "errors": {name: len(errors) for name, errors in summary.errors.items()}}


def main(argv: list[str] | None = None) -> int:
    """0 done (lines a model could not score are error records); 2 a set-up or I/O error: the output is
    replaced only once whole, so it is then left as it was."""
    configure_logging()
    args = _parse_args(argv)
    # The table is what a person reads: the store's loading lines only when DIALSCORE_LOG_LEVEL asks.
    configure_logging(args.settings.log_level if os.environ.get("DIALSCORE_LOG_LEVEL") else "WARNING")
    try:
        scorers = load_scorers(args.model_store, args.models, args.settings, args.threads)
        options = []
        for scorer in scorers:
            try:
                options.append(scorer.resolve_options(args.options.get(scorer.name)))
            except ValueError as exc:
                raise BulkError(f"bad --options for {scorer.name}: {exc}") from None
        csv_input = args.input.suffix.lower() in (".csv", ".tsv")
        lines = _csv_lines(args.input, args.system) if csv_input else _jsonl_lines(args.input)
        partial = args.output.with_name(args.output.name + ".partial")
        try:
            with open(partial, "w", encoding="utf-8") as sink:
                summary = score_file(lines, scorers, options, sink, args.system, args.batch_size)
            os.replace(partial, args.output)
        finally:
            partial.unlink(missing_ok=True)
    except (BulkError, OSError, csv.Error, UnicodeDecodeError) as exc:
        log.error("dialscore score: %s", exc, extra={"exit_status": 2})
        return 2
    print(json.dumps(as_json(summary, scorers)) if args.json else table(summary, scorers, options), flush=True)
    return 0
