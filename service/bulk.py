"""`python -m service.bulk`: score a JSONL corpus offline with one model; streaming, resumable, shardable.

Why a separate command and not a loop over POST /score: a corpus of millions of replies is
scored fastest in-process (no HTTP, no JSON round trip, no request limits), and a Kubernetes
indexed Job (k8s/bulk/) can split it over pods with `JOB_COMPLETION_INDEX`.

Contract of the output: exactly one line per input line of this shard, in input order,
`{"line": n, "model", "version", "score", "details"?, "id"?}` or, for a line that cannot be
scored, `{"line": n, "model", "version", "error": {"code", "message"}}`; nothing is dropped.
Each batch is appended and fsync'd before the next is read, so after a kill (OOM, eviction,
node loss) a restart truncates a torn last line, skips every line already in the output and
goes on: no line is written twice.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from marshmallow import EXCLUDE, ValidationError

from service.config import load_settings
from service.json_body import RepeatedKey, find_problem, loads
from service.runtime import Runtime, RuntimeSettings
from service.schemas import DIALOGUE, ITEM, flatten_messages
from service.scorers.base import Dialogue, EncodeCache, Item, Scorer, Turn
from service.store import ModelStore

log = logging.getLogger("service.bulk")


class BulkError(Exception):
    """A problem with the run's set-up (unknown model, unreadable input, foreign output): exit 2."""


class BadLine(ValueError):
    """One input line that cannot be scored; carries its `id` when that much could be read."""

    def __init__(self, message: str, item_id: Any = None) -> None:
        super().__init__(message)
        self.item_id = item_id


MAX_LINE_DEPTH = 32  # JSON nesting of one item (the item shapes need 4)


@dataclass
class Counts:
    """What one run did; printed as JSON at the end."""

    resumed_after: int = 0  # lines of this shard already in the output when the run started
    scored: int = 0
    errors: int = 0
    seconds: float = 0.0
    load_seconds: float = 0.0
    by_code: dict[str, int] = field(default_factory=dict)

    @property
    def written(self) -> int:
        return self.scored + self.errors


# --- input -----------------------------------------------------------------------------------------
def parse_line(raw: bytes, scorer: Scorer) -> tuple[Any, Any]:
    """(item, id) for one input line, or raise ValueError with a message a person can act on.

    Items use the HTTP contract's shapes (service/schemas.py); unknown keys are ignored so that a
    corpus may carry its own fields (ratings, systems) beside the item, and `id` is echoed back.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    if not text.strip():
        raise ValueError("empty line")
    try:
        obj = loads(text)
    except RepeatedKey as exc:
        raise ValueError(f"ambiguous JSON: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"a line must hold a JSON object, not {type(obj).__name__}")
    problem = find_problem(obj, raw, MAX_LINE_DEPTH)  # lone surrogates would break writing the output
    if problem is not None:
        raise ValueError(f"{problem[0]}: {problem[1]}")
    item_id = obj.get("id")
    try:
        if scorer.kind == "dialogue":
            data = DIALOGUE.load(obj, unknown=EXCLUDE)
            return Dialogue([Turn(t["speaker"], t["text"]) for t in data["turns"]]), item_id
        data = ITEM.load(obj, unknown=EXCLUDE)
    except ValidationError as exc:
        fields = flatten_messages(exc.messages)
        raise BadLine("; ".join(f"{k}: {v}" for k, v in fields.items()), item_id) from None
    if "reference" in scorer.manifest.requires and data.get("reference") is None:
        raise BadLine(f"reference: {scorer.name} is a referenced model and needs a reference.", item_id)
    return Item(list(data["context"]), data["response"], data.get("reference")), item_id


def shard_lines(source: BinaryIO, index: int, count: int, after: int) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, raw line) of this shard, skipping lines up to `after` (already done)."""
    for number, raw in enumerate(source, start=1):
        if (number - 1) % count == index and number > after:
            yield number, raw


# --- output and resumption ----------------------------------------------------------------------
def shard_output(output: Path, index: int, count: int) -> Path:
    """One output file per shard: `{index}`/`{count}` in the name are filled, else a suffix is added."""
    name = str(output)
    if "{index}" in name or "{count}" in name:
        return Path(name.replace("{index}", f"{index:05d}").replace("{count}", f"{count:05d}"))
    if count == 1:
        return output
    return Path(f"{name}.{index:05d}-of-{count:05d}")


_RECORD_START = b'{"line": '


def resume_point(path: Path, model: str, version: str, fields: dict[str, Any] | None = None) -> tuple[int, int]:
    """(last input line already written, lines written) for an existing output; (0, 0) if none.

    A process killed mid-write can leave a torn last line: it is cut off here (it was never
    counted as done, so its item is scored again, once), but only once the file is known to be
    a bulk output, so a foreign file without a final newline is refused, never cut. Output
    written by another model or version, shard split or options is refused rather than extended.
    """
    if not path.exists():
        return 0, 0
    fields = fields or {}
    with open(path, "rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        end = size
        # Walk back to the last newline: everything after it is a torn line.
        while end > 0:
            step = min(1 << 16, end)
            handle.seek(end - step)
            chunk = handle.read(step)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                end = end - step + cut + 1
                break
            end -= step
        if end != size:
            handle.seek(end)
            torn = handle.read(min(size - end, len(_RECORD_START)))
            if not (torn.startswith(_RECORD_START) or _RECORD_START.startswith(torn)):
                raise BulkError(f"{path} does not end with a newline and its last line is not a bulk output "
                                "record; refusing to cut or extend it")
            if end:
                _check_record(path, _last_line(handle, end), model, version, fields)
            log.warning("%s: cutting a torn last line (%d bytes) left by an interrupted run", path, size - end)
            handle.truncate(end)
            handle.flush()
            os.fsync(handle.fileno())
        if end == 0:
            return 0, 0
        line = _check_record(path, _last_line(handle, end), model, version, fields)
        handle.seek(0)
        written = sum(block.count(b"\n") for block in iter(lambda: handle.read(1 << 20), b""))
    return line, written


def _last_line(handle: BinaryIO, end: int) -> bytes:
    start = max(0, end - (1 << 20))
    handle.seek(start)
    return handle.read(end - start).rstrip(b"\n").rsplit(b"\n", 1)[-1]


def _check_record(path: Path, raw: bytes, model: str, version: str, fields: dict[str, Any]) -> int:
    """The input line number of an output record written by this very run set-up, else BulkError."""
    try:
        last = json.loads(raw)
        line = int(last["line"])
    except (ValueError, KeyError, TypeError) as exc:
        raise BulkError(f"{path}: the last line is not a bulk output record ({exc}); refusing to extend it") from None
    if (last.get("model"), last.get("version")) != (model, version):
        raise BulkError(f"{path} was written by {last.get('model')} {last.get('version')}, not {model} {version}; "
                        "use another --output")
    for key in ("shard", "options"):
        if last.get(key) != fields.get(key):
            raise BulkError(f"{path} was written with {key} {last.get(key) or '(default)'}, this run has "
                            f"{fields.get(key) or '(default)'}; resume with the same {key} or use another --output")
    return line


def _record(line: int, scorer: Scorer, item_id: Any, extra: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {"line": line, "model": scorer.name, "version": scorer.version, **extra}
    if item_id is not None:
        record["id"] = item_id
    return record


def run_fields(scorer: Scorer, options: dict[str, Any], shard_index: int, shard_count: int) -> dict[str, Any]:
    """What else a resumed run must share with the output it extends, as fields of every record:
    the shard when there are several (another count would give the same file other lines) and
    the options where they differ from the model's defaults (a resume without them would score
    the rest differently). Default runs add nothing, so their records stay as they were."""
    fields: dict[str, Any] = {}
    if shard_count > 1:
        fields["shard"] = f"{shard_index}/{shard_count}"
    defaults = scorer.resolve_options({})
    changed = {k: v for k, v in options.items() if defaults.get(k) != v}
    if changed:
        fields["options"] = changed
    return fields


def score_batch(batch: list[tuple[int, bytes]], scorer: Scorer, options: dict[str, Any],
                extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Output records for a batch, in input order: scores, or an error per line that cannot be scored."""
    extra = extra or {}
    records: list[dict[str, Any] | None] = [None] * len(batch)
    good: list[int] = []
    items: list[Any] = []
    for i, (line, raw) in enumerate(batch):
        try:
            item, item_id = parse_line(raw, scorer)
        except ValueError as exc:
            records[i] = {**_record(line, scorer, getattr(exc, "item_id", None), extra),
                          "error": {"code": "bad_line", "message": str(exc)}}
            continue
        records[i] = _record(line, scorer, item_id, extra)
        good.append(i)
        items.append(item)
    if items:
        try:
            results = [scorer.score(items, options, EncodeCache())]
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


# --- the run ------------------------------------------------------------------------------------
class _Stop:
    """SIGTERM (Kubernetes eviction, `kubectl delete`) or Ctrl-C finishes the batch in hand, then
    stops with the summary and 128 + the signal's number (143, 130)."""

    requested = False
    signal_number = 0

    @classmethod
    def install(cls) -> None:
        def handler(signum: int, frame: Any) -> None:
            cls.requested = True
            cls.signal_number = signum

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)


def run(scorer: Scorer, source: BinaryIO, output: Path, *, options: dict[str, Any] | None = None,
        batch_size: int = 256, shard_index: int = 0, shard_count: int = 1,
        progress_every: float = 10.0, progress: Any = None) -> Counts:
    """Score this shard of `source` into `output` (appending, resuming); returns the counts."""
    options = scorer.resolve_options(options)  # a bad option fails the run before any line is read
    fields = run_fields(scorer, options, shard_index, shard_count)
    counts = Counts()
    after, written = resume_point(output, scorer.name, scorer.version, fields)
    counts.resumed_after = written
    if after:
        log.info("%s: resuming after input line %d (%d lines already written)", output, after, written)
    total_bytes = os.fstat(source.fileno()).st_size if hasattr(source, "fileno") else 0
    started = last_report = time.perf_counter()
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "ab") as sink:
        batch: list[tuple[int, bytes]] = []

        def flush() -> None:
            records = score_batch(batch, scorer, options, fields)
            sink.write(b"".join(json.dumps(r, ensure_ascii=False).encode("utf-8") + b"\n" for r in records))
            sink.flush()
            os.fsync(sink.fileno())
            for r in records:
                if "error" in r:
                    counts.errors += 1
                    code = r["error"]["code"]
                    counts.by_code[code] = counts.by_code.get(code, 0) + 1
                    log.warning("line %d skipped: %s", r["line"], r["error"]["message"])
                else:
                    counts.scored += 1
            batch.clear()

        for number, raw in shard_lines(source, shard_index, shard_count, after):
            batch.append((number, raw))
            if len(batch) >= batch_size:
                flush()
                now = time.perf_counter()
                if progress is not None and now - last_report >= progress_every:
                    last_report = now
                    _report(progress, counts, now - started, source, total_bytes)
                if _Stop.requested:
                    break
        if batch and not _Stop.requested:
            flush()
    counts.seconds = time.perf_counter() - started
    return counts


def _report(stream: Any, counts: Counts, seconds: float, source: BinaryIO, total_bytes: int) -> None:
    done = ""
    if total_bytes:
        try:
            done = f" ({100.0 * source.tell() / total_bytes:.1f}% of the input)"
        except OSError:
            done = ""
    rate = counts.written / seconds if seconds > 0 else 0.0
    print(f"bulk: {counts.written} lines written, {counts.errors} errors, {rate:.0f} lines/s{done}",
          file=stream, flush=True)


def _env_int(name: str, default: int, parser: argparse.ArgumentParser) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        parser.error(f"${name}={raw!r} is not a whole number")
        raise  # unreachable: parser.error exits 2


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m service.bulk", description=__doc__.split("\n\n")[0])
    try:
        settings = load_settings()
    except (ValueError, KeyError) as exc:  # a DIALSCORE_* variable that does not parse
        parser.error(str(exc))
    parser.add_argument("--model", required=True, help="model name (a folder of the model store)")
    parser.add_argument("--input", required=True, type=Path, help="JSONL, one item a line (the /score item shape)")
    parser.add_argument("--output", required=True, type=Path,
                        help="JSONL to append to; with several shards `{index}` in the name, or a suffix, "
                             "gives one file per shard")
    parser.add_argument("--batch-size", type=int, default=256, help="lines scored and fsync'd together")
    parser.add_argument("--options", type=json.loads, default={}, help="model options as a JSON object")
    parser.add_argument("--shard-index", type=int, default=_env_int("JOB_COMPLETION_INDEX", 0, parser),
                        help="this worker's shard (default: $JOB_COMPLETION_INDEX, else 0)")
    parser.add_argument("--shard-count", type=int, default=_env_int("DIALSCORE_SHARD_COUNT", 1, parser),
                        help="number of shards; line n goes to shard (n-1) mod count (default: "
                             "$DIALSCORE_SHARD_COUNT, else 1)")
    parser.add_argument("--model-store", type=Path, default=settings.model_store)
    parser.add_argument("--threads", type=int, default=settings.intra_op_threads,
                        help="ONNX Runtime intra-op threads (0: all cores)")
    parser.add_argument("--progress-every", type=float, default=10.0, help="seconds between progress lines")
    args = parser.parse_args(argv)
    if args.batch_size < 1:
        parser.error("--batch-size must be at least 1")
    if args.shard_count < 1 or not 0 <= args.shard_index < args.shard_count:
        parser.error(f"--shard-index {args.shard_index} is not in 0..{args.shard_count - 1}")
    if not isinstance(args.options, dict):
        parser.error("--options must be a JSON object")
    args.providers = settings.providers
    args.cuda_options = settings.cuda_options
    args.log_level = settings.log_level
    return args


def _why_not(root: Path, name: str, store: ModelStore) -> str:
    manifest = root / name / "manifest.json"
    try:
        kind = json.loads(manifest.read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError):
        kind = None
    if kind == "component":
        return "it is a component that models share, not a model"
    return store.failures.get(name, "not loaded")


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    from service.logging_setup import configure_logging

    configure_logging(args.log_level)
    _Stop.install()
    started = time.perf_counter()
    runtime = Runtime(RuntimeSettings(providers=tuple(args.providers), intra_op_threads=args.threads, workers=1,
                                      cuda_options=tuple(args.cuda_options)))
    store = ModelStore(args.model_store, runtime, (args.model,))
    store.load()
    scorer = store.get(args.model)
    if scorer is None:
        print(f"bulk: model {args.model} is not available: {_why_not(args.model_store, args.model, store)}",
              file=sys.stderr)
        return 2
    load_seconds = time.perf_counter() - started
    output = shard_output(args.output, args.shard_index, args.shard_count)
    try:
        with open(args.input, "rb") as source:
            counts = run(scorer, source, output, options=args.options, batch_size=args.batch_size,
                         shard_index=args.shard_index, shard_count=args.shard_count,
                         progress_every=args.progress_every, progress=sys.stderr)
    except (BulkError, OSError) as exc:
        print(f"bulk: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - e.g. a bad option: say so in one line, not a traceback
        print(f"bulk: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    counts.load_seconds = load_seconds
    summary = {
        "model": scorer.name, "version": scorer.version, "providers": scorer.providers(),
        "input": str(args.input), "output": str(output), "shard": [args.shard_index, args.shard_count],
        "already_done": counts.resumed_after, "scored": counts.scored, "errors": counts.errors,
        "errors_by_code": counts.by_code, "load_seconds": round(load_seconds, 3),
        "seconds": round(counts.seconds, 3),
        "items_per_second": round(counts.written / counts.seconds, 1) if counts.seconds > 0 else None,
        "stopped_early": _Stop.requested,
    }
    print(json.dumps(summary), flush=True)
    return 128 + _Stop.signal_number if _Stop.requested else 0


if __name__ == "__main__":
    sys.exit(main())
