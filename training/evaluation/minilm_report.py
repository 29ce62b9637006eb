"""`python -m training minilm-report`: the -minilm models against their bars (the classic counterpart,
`length`, the untrained `minilm-cosine`) on every dev set, into docs/evaluation.md and their cards."""
from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from service.scorers.base import EncodeCache, Item
from training.core import docs_section
from training.core.cli import SetupError, check_output_file, input_file
from training.data.judgements import SETS, counted_once, load_set
from training.core.command_line import with_environment
from training.evaluation.evaluate import RUN_ENVIRONMENT, correlate, evaluate_model, load_store, recover
from training.core.turn_cards import update_card

PAIRS = {"adem-minilm": "adem", "ruber-minilm": "ruber", "autojudge-minilm": "autojudge"}
BARS = ("length", "minilm-cosine")
CONTEXT_COSINE = "minilm-cosine (context part)"
BEGIN, END = "<!-- minilm:begin -->", "<!-- minilm:end -->"
# The record of every train-minilm configuration tried (`train-minilm --results`), committed so
# that rerunning the report keeps the table of what was tried.
TRIED = Path("docs/minilm-tried.jsonl")


def context_cosine(scorer, items) -> tuple[float | None, float | None]:
    """Pearson and Spearman of cos(last turn, reply) (minilm-cosine's s_context) with the humans."""
    values = []
    for start in range(0, len(items), 256):
        chunk = [Item(list(i.context), i.response, "") for i in items[start:start + 256]]
        values.extend(d["s_context"] for d in scorer.score(chunk, None, EncodeCache()).details)
    r, _, rho, _ = correlate(np.asarray([i.score for i in items]), np.asarray(values))
    return r, rho


def run(store_root: Path, sets: list[str], recover_references: bool = True) -> dict[str, dict[str, dict]]:
    models = list(PAIRS) + list(PAIRS.values()) + list(BARS)
    store = load_store(store_root, models)
    if not store.scorers:  # a report of 0/0 comparisons would read as a pass
        raise SetupError(f"none of the report's models ({', '.join(models)}) is served from {store_root}: "
                         "nothing to report")
    table: dict[str, dict[str, dict]] = {}
    for set_name in sets:
        items = load_set(set_name, "dev")
        if recover_references:
            items, _ = recover(items)
        table[set_name] = {}
        for name in models:
            if name not in store.scorers:
                continue
            # dstc7 alone is minutes for the classic models: a line per model, not silence until the set ends
            print(f"{set_name}: scoring {len(items)} items with {name}", file=sys.stderr, flush=True)
            result = evaluate_model(store.scorers[name], name, set_name, items)
            table[set_name][name] = {"pearson": result.pearson, "spearman": result.spearman, "n": result.n,
                                     "skipped": result.skipped}
        if "minilm-cosine" in store.scorers:
            r, rho = context_cosine(store.scorers["minilm-cosine"], items)
            table[set_name][CONTEXT_COSINE] = {"pearson": r, "spearman": rho, "n": len(items), "skipped": None}
        print(f"{set_name}: " + ", ".join(f"{k} {v['pearson']}" for k, v in table[set_name].items()), flush=True)
    return table


def _r(row: dict | None) -> float | None:
    return None if not row or row.get("skipped") else row.get("pearson")


def verdicts(table: dict[str, dict[str, dict]]) -> dict[str, dict[str, tuple[int, int]]]:
    """Per -minilm model and bar: (sets where the model's Pearson is higher, sets where both were measured),
    each distinct set of items counted once (judgements.counted_once)."""
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for model, classic in PAIRS.items():
        out[model] = {}
        for bar in (classic, *BARS, CONTEXT_COSINE):
            if bar == CONTEXT_COSINE and model != "autojudge-minilm":
                continue
            measured = counted_once(name for name, rows in table.items()
                                    if _r(rows.get(model)) is not None and _r(rows.get(bar)) is not None)
            wins = sum(_r(table[name][model]) > _r(table[name][bar]) for name in measured)
            out[model][bar] = (wins, len(measured))
    return out


def markdown(table, command: str, seconds: float, recovered: bool = True) -> str:
    columns = [c for c in (*PAIRS, *PAIRS.values(), *BARS, CONTEXT_COSINE)
               if any(c in rows for rows in table.values())]
    lines = [BEGIN, "Pearson r with the human scores on each development split (Spearman in the card "
             "files). n/a: a referenced model on a set without references. Written by "
             f"`{command}` in {seconds:.0f} s."
             + (" Referenced models also run on the DailyDialog-based sets, against the references `evaluate` "
                "recovers from DailyDialog (training/data/references.py), best of the first four references."
                if recovered else ""), "",
             "| set | n | " + " | ".join(columns) + " |", "|---|---|" + "---|" * len(columns)]
    for set_name, rows in table.items():
        n = max((r["n"] for r in rows.values()), default=0)
        cells = []
        for column in columns:
            row = rows.get(column)
            value = _r(row)
            cells.append("n/a" if value is None else f"{value:.3f}")
        lines.append(f"| {set_name} | {n} | " + " | ".join(cells) + " |")
    lines += ["", "Sets on which each -minilm model's Pearson is higher than the bar's (of the distinct sets where "
              "both are measured):", ""]
    for model, bars in verdicts(table).items():
        lines.append(f"- **{model}**: " + "; ".join(f"above {bar} on {w}/{t}" for bar, (w, t) in bars.items()))
    lines.append(END)
    return "\n".join(lines)


def tried_table(paths: list[Path]) -> str:
    """Every configuration `train-minilm --results` logged: the record of how the context encoding
    and the loss weights were chosen (dev Pearson with the first reference, train-minilm's measure)."""
    import json

    rows = []
    for path in paths:
        for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise SetupError(f"{path}:{number}: not JSON ({exc.msg})") from None
            if not isinstance(row, dict) or not isinstance(row.get("dev_pearson"), dict):
                raise SetupError(f"{path}:{number}: not a train-minilm --results line (no dev_pearson object)")
            rows.append(row)
    if not rows:
        return ""
    sets = list(dict.fromkeys(k for row in rows for k in row["dev_pearson"]))
    lines = ["", "### What was tried", "",
             "Each row one `python -m training train-minilm` run (12 epochs unless noted; targets raw 1-5 scores "
             "unless noted; l1: pull of M, N towards the identity; rank: weight of the negative-sample margin "
             "term). Dev Pearson here uses the first reference only; rows with a `seed` also "
             "cover the DailyDialog-based sets with recovered references, as `evaluate` does. The context encodings: `last` (last turn), "
             "`joinedK` (last K turns as one text), `turns` + `gru` (GRU over the last 5 turn vectors, added to "
             "the last turn) or + `attn` (reply-aware attention over them).", "",
             "| model | encoding | pooling | targets | l1 | rank | epochs | " + " | ".join(sets) + " | mean | note |",
             "|---|---|---|---|---|---|---|" + "---|" * (len(sets) + 2)]
    for row in rows:
        cells = [f"{row['dev_pearson'][k]:.3f}" if k in row["dev_pearson"] else "" for k in sets]
        lines.append(f"| {row['model']} | {row['encoding']} | {row['pooling']} | {row.get('targets', 'raw')} | "
                     f"{row.get('l1', 1.0)} | {'—' if row['model'] == 'ruber-minilm' else row.get('rank_weight', 1.0)}"
                     f" | {row.get('epochs', 12)} | " + " | ".join(cells) + f" | {row['mean']:.3f} | {row.get('note', '')} |")
    return "\n".join(lines)


def write_section(path: Path, section: str) -> None:
    """Replace this command's marked section of `path`; the rest of the file is kept."""
    docs_section.write_section(path, section, BEGIN, END)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training minilm-report", description=__doc__.split("\n")[0])
    parser.add_argument("--store", type=Path, default=Path("model_store"))
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    parser.add_argument("--out", type=Path, default=None,
                        help="Markdown file whose minilm section is rewritten (default: docs/evaluation.md for a "
                             "run over every set; with --sets the section is printed instead)")
    parser.add_argument("--no-cards", action="store_true", help="do not write the correlations into the cards")
    parser.add_argument("--tried", type=input_file, nargs="*", default=[TRIED],
                        help="JSON-lines files written by train-minilm --results, tabled in the section")
    parser.add_argument("--no-recover-references", dest="recover_references", action="store_false",
                        help="referenced models only on the sets that ship references")
    args = parser.parse_args(argv)
    # A card and the docs report every development set: a run over some of them writes neither.
    full_run = set(args.sets) == set(SETS)
    out = args.out or (Path("docs/evaluation.md") if full_run else None)
    check_output_file(parser, "--out", out)  # written after the report (minutes)
    tried = tried_table(args.tried)  # read now, so that a bad line stops the command before the report's minutes
    started = time.time()
    table = run(args.store, args.sets, args.recover_references)
    command = with_environment("python -m training minilm-report " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[2:])), RUN_ENVIRONMENT, os.environ)
    section = markdown(table, command.strip(), time.time() - started, args.recover_references)
    chosen = []
    for name in PAIRS:
        path = args.store / name / "manifest.json"
        if path.is_file():
            import json

            config = json.loads(path.read_text())["config"]
            chosen.append(f"- {name}: context `{config['context_encoding']}`, pooling `{config['pooling']}` "
                          "(highest mean dev Pearson of its search)")
    if chosen:
        section = section.replace(END, "\nServed configurations:\n\n" + "\n".join(chosen) + "\n" + END)
    section = section.replace(END, tried + "\n" + END)
    if out is None:
        print(section)
    else:
        write_section(out, section)
    if args.no_cards or not full_run:
        return 0
    for name in (*PAIRS, "minilm-cosine"):
        if (args.store / name / "manifest.json").is_file():
            correlations = {s: {k: (None if v is None else round(v, 6)) for k, v in rows[name].items()
                                if k in ("pearson", "spearman", "n")}
                            for s, rows in table.items() if name in rows and not rows[name]["skipped"]}
            update_card(args.store / name, correlations=correlations,
                        correlations_command="python -m training minilm-report (training.evaluation.evaluate: "
                                             "best of the first 4 references)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
