"""`python -m service.analysis {correlate,human-eval} FILE`: the service's statistics on files.

Writes the JSON result, a Markdown report (also printed) and plots (PNG; --plot-format svg or pdf for
vector figures) into --out.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
from marshmallow import ValidationError

from service.analysis import importers, report
from service.analysis.inputs import CorrelateInput
from service.analysis.compare import compare_with_upstream, pairwise_rater_agreement
from service.analysis.plots import FORMATS, agreement_histogram, correlate_plots, human_eval_plots, missing, named
from service.api import limits
from service.api.schemas import CorrelateRequestSchema, HumanEvalRequestSchema, flatten_messages
from service.config import load_settings
from service.errors import FieldsError, TooLarge
from service.stats import DEFAULT_DESIGN, DEFAULT_ITEM_DESIGN, DESIGNS, ITEM_DESIGNS, METHODS, StatsInputError, correlate
from service.stats.human_eval import HumanEvalInputError, assess
from service.version import TOOL, VERSION


def finite_number(text: str) -> float:
    """An option's number: float() also reads "nan" and "inf", which no setting here takes."""
    value = float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def _plot_format_option(command: argparse.ArgumentParser) -> None:
    command.add_argument("--plot-format", nargs="+", choices=FORMATS, default=[FORMATS[0]], metavar="FORMAT",
                         help=f"the plots' file format(s), each its own suffix: {', '.join(FORMATS)} (default "
                              f"{FORMATS[0]}); svg and pdf are vector figures for papers (PDF fonts embedded as "
                              "TrueType)")


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    corr = commands.add_parser("correlate", help="metric scores against human ratings")
    corr.add_argument("file", type=Path)
    corr.add_argument("--format", default="auto", choices=["auto", "csv", "json", "dstc", "scores"],
                      help="csv: one item per row; json: a /correlate request body; dstc: DSTC-style evaluation JSON; "
                           "scores: `dialscore score --keep HUMAN_FIELD`'s output (.jsonl)")
    corr.add_argument("--human", nargs="+", help="CSV column(s), or kept fields of `scores`, holding human ratings "
                                                 "(default: those named human*)")
    corr.add_argument("--system", default="system",
                      help="CSV column labelling each row's system, for system-level results (default: system); "
                           "every other column but the human ones is read as a metric")
    corr.add_argument("--id-column", help="CSV column naming each row's item, never read as a metric (a column "
                                          "named id never is either)")
    corr.add_argument("--input-column", help="CSV column, or kept field of `scores`, naming each item's input (e.g. "
                                             "its context), where several replies to one input are rated: the "
                                             "system level then resamples whole inputs, and --item-resampling "
                                             "inputs the item level too")
    corr.add_argument("--aspect", help="DSTC annotation to use (default: overall, else the first)")
    # Defaults are None so that a /correlate body's own settings apply unless the command line says otherwise.
    corr.add_argument("--methods", nargs="+", default=None, choices=METHODS, help="default: all three")
    corr.add_argument("--confidence", type=finite_number, default=None, help="default 0.95")
    corr.add_argument("--resamples", type=int, default=None,
                      help="default 1000; bounded like the service (DIALSCORE_MAX_RESAMPLES, "
                           "DIALSCORE_MAX_BOOTSTRAP_WORK: items x resamples), for memory")
    corr.add_argument("--seed", type=int, default=None, help="default 0")
    corr.add_argument("--system-resampling", default=None, choices=DESIGNS,
                      help=f"what the system level's bootstrap resamples: the systems, the items within each system, "
                           f"or both (default: {DEFAULT_DESIGN}; docs/api.md shows why)")
    corr.add_argument("--item-resampling", default=None, choices=ITEM_DESIGNS,
                      help="what the item level's bootstrap resamples: the items (default), or whole inputs "
                           "(needs the inputs: --input-column, or a /correlate body's `inputs`)")
    corr.add_argument("--out", type=Path, default=Path("correlate-report"),
                      help="folder for correlate.json, correlate.md and the plots (default: ./correlate-report)")
    corr.add_argument("--no-plots", action="store_true")
    _plot_format_option(corr)
    corr.add_argument("--quiet", action="store_true",
                      help="write the files only: nothing on stdout on success (notes on the input still go to stderr)")

    human = commands.add_parser("human-eval", help="Ji et al. 2022 reliable human assessment")
    human.add_argument("files", type=Path, nargs="+", help="a file, or Ji et al.'s pass/fail JSON files or their folder")
    human.add_argument("--format", default="auto", choices=["auto", "csv", "json", "ji2022-csv", "ji2022-json"])
    human.add_argument("--reverse", nargs="*", help="negative criteria to reverse (default: the importer's)")
    human.add_argument("--scale", nargs=2, type=finite_number, metavar=("LOW", "HIGH"))
    human.add_argument("--qc-system", help="the degraded quality-control system (default: the importer's)")
    human.add_argument("--qc-criteria", nargs="+", help="criteria the quality-control test pools")
    human.add_argument("--alpha", type=finite_number, default=None, help="default: the file's (a /human-eval body), else 0.05")
    human.add_argument("--upstream", type=Path, nargs="+",
                       help="Ji et al. dialogue JSON (files or folder) to compare pass/fail and z-scores with")
    human.add_argument("--rater-pairs", action="store_true",
                       help="also correlate pairs of assignments that rated the same systems (Ji et al.'s "
                            "Figure 2); item ids must be 'assignment:k' as the Ji et al. importers write them")
    human.add_argument("--anonymise", action="store_true",
                       help="write rater ids as 'r-' + 8 hex digits of their SHA-256 (e.g. MTurk worker ids in docs)")
    human.add_argument("--out", type=Path, default=Path("human-eval-report"),
                       help="folder for the JSON and Markdown report and the plots (default: ./human-eval-report)")
    human.add_argument("--no-plots", action="store_true")
    _plot_format_option(human)
    human.add_argument("--quiet", action="store_true", help="write the files only; print nothing on success")
    return parser


SIGNIFICANT_DIGITS = 12  # of the JSON's floats: numpy's sums differ in the last bits from CPU to CPU


def _rounded(value: Any) -> Any:
    """`value` with every float at SIGNIFICANT_DIGITS, so that a rerun on another machine writes the same file."""
    if isinstance(value, float):
        return float(f"{value:.{SIGNIFICANT_DIGITS}g}")
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_rounded(item) for item in value]
    return value


def _write(out: Path, stem: str, result: dict, markdown: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(_rounded(result), indent=2, allow_nan=False) + "\n", encoding="utf-8")
    (out / f"{stem}.md").write_text(markdown, encoding="utf-8")


MAX_FIELD_LINES = 50  # field errors printed, one a line; a count for the rest

CORRELATE_DEFAULTS = {"methods": list(METHODS), "confidence": 0.95, "resamples": 1000, "seed": 0,
                      "system_resampling": DEFAULT_DESIGN, "item_resampling": DEFAULT_ITEM_DESIGN}


def _input_record(args: argparse.Namespace, data: CorrelateInput) -> dict[str, Any]:
    """What the report was computed from, for a reproducibility statement: the file (path, SHA-256), its
    format and the columns or fields named; and from `dialscore score`'s output, each model's version and
    options and how many items are its training items."""
    with open(args.file, "rb") as handle:  # in chunks: a scores file can be larger than memory should hold
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    record: dict[str, Any] = {"file": str(args.file), "sha256": digest, "format": data.format}
    named = {"human": args.human, "system": None if args.system == "system" else args.system,
             "input_column": args.input_column, "id_column": args.id_column, "aspect": args.aspect}
    record.update({key: value for key, value in named.items() if value is not None})
    if data.models:
        record["models"] = data.models
    if data.trained:
        record["trained"] = data.trained
    return record


def run_correlate(args: argparse.Namespace) -> int:
    data = importers.load_correlate(args.file, args.format, args.human, args.aspect, args.system, args.id_column,
                                    args.input_column)
    chosen = {key: getattr(args, key) if getattr(args, key) is not None else data.settings.get(key, default)
              for key, default in CORRELATE_DEFAULTS.items()}
    # Whatever the file's format, what reaches the statistics is what the HTTP schema admits, so a
    # word where a number goes is a message naming the field, as it is for /correlate.
    try:
        body = _validated(CorrelateRequestSchema(), {"human": data.human, "scores": data.scores,
                                                     "systems": data.systems, "inputs": data.inputs, **chosen},
                          StatsInputError)
        if body["item_resampling"] == "inputs" and body["inputs"] is None:
            raise importers.ImporterError(f"{args.file}: --item-resampling inputs needs each item's input: name "
                                          "its column or kept field with --input-column (a /correlate body gives "
                                          "`inputs`)")
        _check_bootstrap_budget(body["human"], body["resamples"])
        result = {TOOL: VERSION, **correlate(body["human"], body["scores"], body["systems"], body["methods"],
                                             body["confidence"], body["resamples"], body["seed"],
                                             body["system_resampling"], body["inputs"], body["item_resampling"])}
    except FieldsError as exc:
        raise on_lines(exc, data.places) from None
    result["input"] = _input_record(args, data)
    if data.notes:
        result["input_notes"] = data.notes
        print(f"note: {data.notes}", file=sys.stderr)
    markdown = report.correlate_markdown(result)
    _write(args.out, "correlate", result, markdown)
    ours = [path for fmt in FORMATS for path in args.out.glob(f"correlate_*.{fmt}")]
    if args.no_plots:
        _remove_not_drawn(ours, drawn=())
    else:
        _finish_plots(correlate_plots(result, args.out, _formats(args)), ours)
    if not args.quiet:
        print(markdown)
    return 0


# A field path that names an item, rating or item's value: what `places` turns into the file's line.
ITEM_PATH = re.compile(r"(?:human|systems|inputs|ratings|scores\..+?)\.(\d+)(?:\..*)?")


def on_lines(error: FieldsError, places: list[str] | None) -> FieldsError:
    """`error` with each field that names an item also named by its file and line ('human.3' read from a CSV:
    'ratings.csv:5 (human.3)'): the paths are those of the request body the file was read into."""
    if not places:
        return error
    def placed(path: str) -> str:
        found = ITEM_PATH.fullmatch(path)
        at = int(found.group(1)) if found else len(places)
        return f"{places[at]} ({path})" if at < len(places) else path
    return type(error)({placed(path): text for path, text in error.fields.items()})


def _validated(schema, body: dict[str, Any], error: type[ValueError]) -> dict[str, Any]:
    try:
        return schema.load(body)
    except ValidationError as exc:
        raise error(flatten_messages(exc.messages)) from None


def _check_bootstrap_budget(human: list[Any], resamples: int) -> None:
    """The service's limits on resampling hold here too (DIALSCORE_* raises them): the resample indices
    alone take items x resamples x 8 bytes. `resamples` has passed the HTTP schema (a whole number, 0 or
    more)."""
    limits.check_correlate({"human": human, "resamples": resamples}, load_settings(check_providers=False))


def pseudonym(rater: str) -> str:
    """A stable stand-in for a rater id: 'r-' and the first 8 hex digits of its SHA-256."""
    return "r-" + hashlib.sha256(rater.encode("utf-8")).hexdigest()[:8]


def anonymise(result: dict) -> dict:
    """`result` with every rater id replaced by its pseudonym (lists, dict keys, 'rater' fields)."""

    def walk(value, key=None):
        if isinstance(value, dict):
            rename = key in ("p", "reasons")
            return {(pseudonym(k) if rename else k): walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            if key in ("passed", "failed", "constant", "missing"):
                return [pseudonym(v) for v in value]
            return [walk(v, key) for v in value]
        if key == "rater" and isinstance(value, str):
            return pseudonym(value)
        return value

    return walk(result)


def _hide_ids(text: str) -> str:
    """Pseudonyms for the assignment and worker ids in an importer's 'skipped' note."""
    return re.sub(r"assignment (\S+) of worker (\S+):",
                  lambda m: f"assignment {pseudonym(m.group(1))} of worker {pseudonym(m.group(2))}:", text)


def run_human_eval(args: argparse.Namespace) -> int:
    data = importers.load_human_eval(args.files, args.format)
    if args.rater_pairs and any(":" not in str(r.get("item", "")) for r in data.ratings):
        raise HumanEvalInputError({"rater_pairs": "item ids must be 'assignment:k' (as the Ji et al. importers "
                                                  "write them) to know which ratings one assignment made"})
    if args.reverse is not None:
        data.reverse = list(args.reverse)
    if args.scale is not None:
        data.scale = (args.scale[0], args.scale[1])
    if args.qc_system is not None:
        data.qc_system = args.qc_system
    if args.qc_criteria is not None:
        data.qc_criteria = list(args.qc_criteria)
    alpha = args.alpha if args.alpha is not None else (data.alpha if data.alpha is not None else 0.05)
    try:
        body = _validated(HumanEvalRequestSchema(), {
            "ratings": data.ratings, "reverse": data.reverse, "scale": list(data.scale), "qc_system": data.qc_system,
            "alpha": alpha, "qc_criteria": data.qc_criteria}, HumanEvalInputError)
        result = {TOOL: VERSION, **assess(body["ratings"], body["reverse"], tuple(body["scale"]), body["qc_system"],
                                          body["alpha"], body["qc_criteria"])}
    except FieldsError as exc:
        raise on_lines(exc, data.places) from None
    upstream = importers.load_upstream(args.upstream) if args.upstream else data.upstream
    if upstream:
        result["upstream"] = compare_with_upstream(data, result, upstream)
    pairs = pairwise_rater_agreement(data, result) if args.rater_pairs else None
    if pairs is not None:
        result["rater_pairs"] = {label: {"pairs": len(v), "median_r": float(np.median(v)) if v else None,
                                         "r": v} for label, v in pairs.items()}
    skipped = data.skipped
    if args.anonymise:
        result, skipped = anonymise(result), [_hide_ids(s) for s in skipped]
    for warning in result.get("warnings", []):
        print(f"warning: {warning}", file=sys.stderr)
    markdown = report.human_eval_markdown(result)
    if skipped:
        markdown += "\nSkipped by the importer:\n" + "".join(f"- {s}\n" for s in skipped)
    if upstream:
        markdown += "\n### Agreement with upstream\n\n" + report.upstream_markdown(result["upstream"])
    if pairs is not None:
        markdown += "\n### Agreement between raters of the same systems\n\n" + report.pairs_markdown(pairs)
    _write(args.out, "human_eval", result, markdown)
    ours = [path for stem in HUMAN_EVAL_PICTURES for path in named(args.out, stem, FORMATS)]
    if not args.no_plots:
        plots = human_eval_plots(result, args.out, _formats(args))
        histograms = named(args.out, HUMAN_EVAL_PICTURES[-1], _formats(args))
        if pairs is not None and not any(pairs.get(label) for label in ("passed", "failed")):
            plots.skip(histograms, "no pair of raters of the same systems, both passed or both failed, has a "
                                   "defined r")
        elif pairs is not None:
            plots.extend(agreement_histogram(pairs, path) for path in histograms)
        _finish_plots(plots, ours)
    else:
        _remove_not_drawn(ours, drawn=())
    if not args.quiet:
        print(markdown)
    return 0


HUMAN_EVAL_PICTURES = ("ranking", "significance", "significance_holm", "rater_agreement")  # stems: a file a format


def _formats(args: argparse.Namespace) -> list[str]:
    """The formats asked for, each once, in the order given."""
    return list(dict.fromkeys(args.plot_format))


def _finish_plots(plots, ours) -> None:
    """Say which plots were left out, and remove the pictures of ours that this run did not draw."""
    for line in plots.skipped:
        print(line, file=sys.stderr)
    _remove_not_drawn(ours, plots)


def _remove_not_drawn(ours, drawn) -> None:
    """Remove the pictures of ours that this run did not draw (an earlier run's into the same --out,
    of a level, method or option this run has not, or any with --no-plots), so that every picture
    beside the report is this run's."""
    kept = {Path(p).resolve() for p in drawn}
    for path in list(ours):
        if path.resolve() not in kept:
            path.unlink(missing_ok=True)


def main(argv: list[str] | None = None, prog: str = "python -m service.analysis") -> int:
    """`prog`: the command line its usage names (the subcommand follows it)."""
    args = _parser(prog).parse_args(argv)
    try:  # the limits and the JSON reader's depth are the service's settings: a bad one is said once, here
        load_settings(check_providers=False)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.out.exists() and not args.out.is_dir():
        print(f"error: --out {args.out} is a file; name a folder for the report (it is made if missing)",
              file=sys.stderr)
        return 2
    if not args.no_plots:
        if reason := missing():
            print(f"error: {reason}", file=sys.stderr)
            return 2
    try:
        if args.command == "correlate":
            return run_correlate(args)
        return run_human_eval(args)
    except FieldsError as exc:  # every field, one a line: a command line has no details to show
        fields = list(exc.fields.items())
        lines = [f"  {path}: {text}" for path, text in fields[:MAX_FIELD_LINES]]
        if len(fields) > MAX_FIELD_LINES:
            lines.append(f"  ... and {len(fields) - MAX_FIELD_LINES} more")
        noun = "field" if len(fields) == 1 else "fields"
        print("\n".join([f"error: {len(fields)} invalid {noun}:", *lines]), file=sys.stderr)
        return 2
    except BrokenPipeError:  # `... | head`: the report files are written; the reader wanted no more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush is quiet
        return 0
    except (importers.ImporterError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except TooLarge as exc:  # the service's message points at GET /models, which a command line has not
        print(f"error: over the configured limits: {'; '.join(exc.details.values())} (DIALSCORE_MAX_* settings "
              "raise them)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
