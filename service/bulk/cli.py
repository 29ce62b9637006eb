"""The command line of `python -m service.bulk`: arguments, loading the model, the summary and exit status."""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO, NoReturn

from service.bulk.errors import BulkError, TransientSetUpError, set_up_error
from service.bulk.output import shard_output
from service.bulk.records import MAX_LINE_DEPTH, LineChecks
from service.bulk.runner import run
from service.bulk.signals import Stop
from service.config import MAX_SESSION_THREADS, Settings, load_settings
from service.json_body import TooDeep, parse
from service.scorers.base import Scorer
from service.observability.logs import configure_logging
from service.store import trained_items
from service.store.model_store import ModelStore
from service.artifacts.runtime import Runtime, RuntimeSettings

DESCRIPTION = "Score a JSONL corpus offline with one model; streaming, resumable, shardable."
log = logging.getLogger("service.bulk")  # one logger for the whole command: its records name it
MAX_LINE_BYTES_CEILING = 1 << 40  # readline() takes a machine-sized integer; 2**63 overflowed it


def _env_int(name: str, default: int, parser: argparse.ArgumentParser) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        parser.error(f"${name}={raw!r} is not a whole number")
        raise  # unreachable: parser.error exits 2


class _Parser(argparse.ArgumentParser):
    """argparse whose errors are one JSON log record (exit 2), like every other line on stderr."""

    def error(self, message: str) -> NoReturn:
        log.error("%s: %s (see --help)", self.prog, message, extra={"exit_status": 2})
        sys.exit(2)


def json_object(text: str) -> dict[str, Any]:
    """--options: a JSON object, strictly (options are copied into every output record), nested within
    a line's depth: a bound of its own, where the parser's recursion limit differs by Python (about
    1,000 levels on 3.11, more from 3.12)."""
    try:  # surrogateescape: the argument's bytes as the command line gave them
        value = parse(text.encode("utf-8", "surrogateescape"), max_depth=MAX_LINE_DEPTH, finite=True)
    except TooDeep:
        raise argparse.ArgumentTypeError("nested too deeply") from None
    except ValueError as exc:  # JsonTextError, or a lone surrogate that no bytes were
        raise argparse.ArgumentTypeError(f"not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def _parse_args(argv: list[str] | None, prog: str = "python -m service.bulk") -> argparse.Namespace:
    parser = _Parser(prog=prog, description=DESCRIPTION)
    try:
        settings = load_settings()
    except (ValueError, KeyError) as exc:  # a DIALSCORE_* variable that does not parse
        parser.error(str(exc))
    parser.add_argument("--model", required=True, help="model name (a folder of the model store)")
    parser.add_argument("--input", required=True, type=Path, help="JSONL, one item a line (the /score item shape)")
    parser.add_argument("--output", required=True, type=Path,
                        help="JSONL to append to; with several shards `{index}` in the name, or a suffix, "
                             "gives one file per shard")
    parser.add_argument("--batch-size", type=int, default=256, help="lines scored and fsync'd together (default 256)")
    parser.add_argument("--options", type=json_object, default={}, help="model options as a JSON object")
    parser.add_argument("--shard-index", type=int, default=_env_int("JOB_COMPLETION_INDEX", 0, parser),
                        help="this worker's shard (default: $JOB_COMPLETION_INDEX, else 0)")
    parser.add_argument("--shard-count", type=int, default=_env_int("DIALSCORE_SHARD_COUNT", 1, parser),
                        help="number of shards; line n goes to shard (n-1) mod count (default: "
                             "$DIALSCORE_SHARD_COUNT, else 1)")
    parser.add_argument("--model-store", type=Path, default=settings.model_store)
    parser.add_argument("--threads", type=int, default=settings.intra_op_threads,
                        help="ONNX Runtime intra-op threads (0: all cores; default: $DIALSCORE_INTRA_OP_THREADS, else 0)")
    parser.add_argument("--progress-every", type=float, default=10.0, help="seconds between progress lines (default 10)")
    parser.add_argument("--max-line-bytes", type=int, default=settings.max_body_bytes,
                        help="a longer input line is a too_large error record, never read whole (default: "
                             "$DIALSCORE_MAX_BODY_BYTES, the largest request body the API takes, else 1 MiB)")
    parser.add_argument("--lock-wait", type=float, default=0.0,
                        help="seconds to wait for another run writing the same output to end before refusing "
                             "(exit 2); default 0")
    args = parser.parse_args(argv)
    if args.batch_size < 1:
        parser.error("--batch-size must be at least 1")
    if args.shard_count < 1:
        parser.error(f"--shard-count (or $DIALSCORE_SHARD_COUNT) must be at least 1, not {args.shard_count}")
    if not 0 <= args.shard_index < args.shard_count:
        parser.error(f"--shard-index {args.shard_index} is not in 0..{args.shard_count - 1}")
    if not 1 <= args.max_line_bytes <= MAX_LINE_BYTES_CEILING:
        parser.error(f"--max-line-bytes (default: $DIALSCORE_MAX_BODY_BYTES) is {args.max_line_bytes}; it must be "
                     f"1 to {MAX_LINE_BYTES_CEILING} (1 TiB, as good as no limit)")
    if not 0 <= args.progress_every < math.inf:  # NaN too; 0: after every batch
        parser.error("--progress-every must be a number of seconds, 0 or more")
    if not 0 <= args.threads <= MAX_SESSION_THREADS:
        parser.error(f"--threads must be 0 (every core) to {MAX_SESSION_THREADS}, as DIALSCORE_INTRA_OP_THREADS")
    if not args.lock_wait >= 0:  # NaN too: it would never reach its deadline
        parser.error("--lock-wait must be a number of seconds, not negative")
    args.settings = settings
    return args


def _kind(manifest: Path) -> str | None:
    try:
        return json.loads(manifest.read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError):
        return None


def _why_not(root: Path, name: str, store: ModelStore) -> str:
    """Why `name` is not served, and the models the store at `root` holds (a misspelt name is the usual cause)."""
    if _kind(root / name / "manifest.json") == "component":
        why = "it is a component that models share, not a model"
    else:
        why = store.failures.get(name, "not loaded")
    models = sorted(m.parent.name for m in root.glob("*/manifest.json") if _kind(m) not in (None, "component"))
    return f"{why}; the store's models: {', '.join(models) or 'none'}"


def load_scorers(root: Path, names: list[str], settings: Settings, threads: int) -> list[Scorer]:
    """The named models of the store at `root`, loaded in this process on one ONNX Runtime; BulkError
    naming the first that is not available and why (TransientSetUpError where a retry may read it)."""
    runtime = Runtime(RuntimeSettings.from_settings(settings, intra_op_threads=threads, workers=1))
    store = ModelStore(root, runtime, tuple(names))
    try:
        store.load()
    except OSError as exc:
        raise set_up_error(f"cannot read the model store {root}", exc) from None
    scorers = [store.get(name) for name in names]
    for name, scorer in zip(names, scorers):
        if scorer is None:
            raise BulkError(f"model {name} is not available: {_why_not(root, name, store)}")
    return scorers


def _open_input(path: Path) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise set_up_error(f"cannot read the input {path}", exc) from None


def main(argv: list[str] | None = None, prog: str = "python -m service.bulk") -> int:
    """Run the command (`prog`: the command line its usage and errors name); k8s/bulk/job.yaml's podFailurePolicy acts on the exit status.

      0    done; lines that cannot be scored are error records in the output
      1    failed after set-up (an I/O error), on a transient set-up error (TransientSetUpError) or on a
           bug: the Job retries this shard alone, and the retry resumes
      2    set-up error before any line was scored (arguments, environment, model, options, input, an
           output that is not this run's to extend, is held by another run or was scored from another
           input): retrying the same command cannot help
      143  stopped by SIGTERM (130: Ctrl-C): reading ends, the lines in hand are written; a rerun resumes"""
    configure_logging()  # before the arguments are checked: their errors are JSON records too
    args = _parse_args(argv, prog)
    configure_logging(args.settings.log_level)
    Stop.install()
    started = time.perf_counter()
    output = shard_output(args.output, args.shard_index, args.shard_count)
    try:
        [scorer] = load_scorers(args.model_store, [args.model], args.settings, args.threads)
        load_seconds = time.perf_counter() - started
        with _open_input(args.input) as source:
            counts = run(scorer, source, output, options=args.options, batch_size=args.batch_size,
                         shard_index=args.shard_index, shard_count=args.shard_count,
                         progress_every=args.progress_every, lock_wait=args.lock_wait,
                         max_line_bytes=args.max_line_bytes,
                         checks=LineChecks(trained_items.of_manifest(scorer.manifest),
                                           args.settings.not_english_confidence))
    except TransientSetUpError as exc:
        log.error("set-up failed on an I/O error that a retry may get past, nothing scored: %s", exc,
                  extra={"exit_status": 1})
        return 1
    except BulkError as exc:
        log.error("set-up error, nothing scored: %s", exc, extra={"exit_status": 2})
        return 2
    except Exception as exc:  # noqa: BLE001 - exit 1: the Job retries this shard alone, and it resumes
        log.error("failed after set-up; a rerun resumes: %s: %s", type(exc).__name__, exc,
                  exc_info=not isinstance(exc, OSError), extra={"exit_status": 1})
        return 1
    counts.load_seconds = load_seconds
    summary = {
        "model": scorer.name, "version": scorer.version, "providers": scorer.providers(),
        "input": str(args.input), "output": str(output), "shard": [args.shard_index, args.shard_count],
        "already_done": counts.resumed_after, "scored": counts.scored, "errors": counts.errors,
        "errors_by_code": counts.by_code, "trained": counts.trained, "warnings_by_code": counts.warnings,
        "load_seconds": round(load_seconds, 3),
        "seconds": round(counts.seconds, 3),
        "items_per_second": round(counts.written / counts.seconds, 1) if counts.seconds > 0 else None,
        "stopped_early": Stop.requested,
    }
    print(json.dumps(summary), flush=True)
    return 128 + Stop.signal_number if Stop.requested else 0
