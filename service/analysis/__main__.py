"""`python -m service.analysis {correlate,human-eval} FILE`: the service's statistics on files.

Writes the JSON result, a Markdown report (also printed) and PNG plots into --out.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from service.analysis import importers, report
from service.analysis.compare import compare_with_upstream
from service.human_eval import HumanEvalInputError, assess
from service.stats import METHODS, StatsInputError, correlate


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m service.analysis", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    corr = commands.add_parser("correlate", help="metric scores against human ratings")
    corr.add_argument("file", type=Path)
    corr.add_argument("--format", default="auto", choices=["auto", "csv", "json", "dstc"],
                      help="csv: one item per row; json: a /correlate request body; dstc: DSTC-style evaluation JSON")
    corr.add_argument("--human", nargs="+", help="CSV column(s) holding human ratings (default: columns named human*)")
    corr.add_argument("--aspect", help="DSTC annotation to use (default: overall, else the first)")
    corr.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    corr.add_argument("--confidence", type=float, default=0.95)
    corr.add_argument("--resamples", type=int, default=1000)
    corr.add_argument("--seed", type=int, default=0)
    corr.add_argument("--out", type=Path, default=Path("correlate-report"))
    corr.add_argument("--no-plots", action="store_true")

    human = commands.add_parser("human-eval", help="Ji et al. 2022 reliable human assessment")
    human.add_argument("files", type=Path, nargs="+", help="a file, or Ji et al.'s pass/fail JSON files or their folder")
    human.add_argument("--format", default="auto", choices=["auto", "csv", "json", "ji2022-csv", "ji2022-json"])
    human.add_argument("--reverse", nargs="*", help="negative criteria to reverse (default: the importer's)")
    human.add_argument("--scale", nargs=2, type=float, metavar=("LOW", "HIGH"))
    human.add_argument("--qc-system", help="the degraded quality-control system (default: the importer's)")
    human.add_argument("--qc-criteria", nargs="+", help="criteria the quality-control test pools")
    human.add_argument("--alpha", type=float, default=0.05)
    human.add_argument("--upstream", type=Path, nargs="+",
                       help="Ji et al. dialogue JSON (files or folder) to compare pass/fail and z-scores with")
    human.add_argument("--out", type=Path, default=Path("human-eval-report"))
    human.add_argument("--no-plots", action="store_true")
    return parser


def _write(out: Path, stem: str, result: dict, markdown: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (out / f"{stem}.md").write_text(markdown, encoding="utf-8")


def run_correlate(args: argparse.Namespace) -> int:
    data = importers.load_correlate(args.file, args.format, args.human, args.aspect)
    result = correlate(data.human, data.scores, data.systems, args.methods, args.confidence, args.resamples, args.seed)
    markdown = report.correlate_markdown(result)
    _write(args.out, "correlate", result, markdown)
    if not args.no_plots:
        from service.analysis.plots import correlate_plots

        correlate_plots(result, args.out)
    print(markdown)
    return 0


def run_human_eval(args: argparse.Namespace) -> int:
    data = importers.load_human_eval(args.files, args.format)
    if args.reverse is not None:
        data.reverse = list(args.reverse)
    if args.scale is not None:
        data.scale = (args.scale[0], args.scale[1])
    if args.qc_system is not None:
        data.qc_system = args.qc_system
    if args.qc_criteria is not None:
        data.qc_criteria = list(args.qc_criteria)
    result = assess(data.ratings, data.reverse, data.scale, data.qc_system, args.alpha, data.qc_criteria)
    markdown = report.human_eval_markdown(result)
    if data.skipped:
        markdown += "\nSkipped by the importer:\n" + "".join(f"- {s}\n" for s in data.skipped)
    upstream = importers.ji2022_json(args.upstream).upstream if args.upstream else data.upstream
    if upstream:
        comparison = compare_with_upstream(data, result, upstream)
        result["upstream"] = comparison
        markdown += "\n### Agreement with upstream\n\n" + report.upstream_markdown(comparison)
    _write(args.out, "human_eval", result, markdown)
    if not args.no_plots:
        from service.analysis.plots import human_eval_plots

        human_eval_plots(result, args.out)
    print(markdown)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "correlate":
            return run_correlate(args)
        return run_human_eval(args)
    except (importers.ImporterError, StatsInputError, HumanEvalInputError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
