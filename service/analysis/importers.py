"""Readers for the formats people have: plain CSV/JSON, Ji et al.'s MTurk CSV and dialogue JSON, DSTC JSON.

Every reader returns a `CorrelateInput` or a `HumanEvalInput`; nothing here computes statistics.
"""
from __future__ import annotations

import csv
import io
import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from service.analysis.inputs import CorrelateInput, HumanEvalInput
from service.config import load_settings
from service.csv_text import long_cells, problem
from service.json_body import BadText, JsonTextError, TooDeep, jsonl_lines, parse, parse_object

# Facts about the Ji et al. (2022) release the readers rely on, checked against ../shared/data/human_eval/
# ji2022 (all 304 assignments present in both files agree): the CSV's `scoreK` holds seven '#'-separated
# 0-100 ratings in JI_CSV_ORDER (not the order the shared data README gives), as the worker entered them,
# so robotic and repetitive are not yet reversed; `taskK` names the model, which the JSON calls by the
# letters of JI_MODELS (and QualityControl); `seedK` below 500 ran the model with a persona (the JSON's
# `_p` suffix), 501 and above without (500 never occurs); the JSON's `raw scores` are already reversed.
JI_CSV_ORDER = ("robotic", "interesting", "fun", "consistent", "fluent", "repetitive", "topic")
JI_REVERSED = ("robotic", "repetitive")
JI_MODELS = {"biencoder": "A", "polyencoder": "B", "kvmemnn": "C", "seq2seq": "D", "lan_model": "E"}
JI_QC = "QualityControl"
# Upstream's quality control pools the five positive criteria only (it reproduces all 248 decisions).
JI_QC_CRITERIA = ("interesting", "fun", "consistent", "fluent", "topic")
JI_PERSONA_SEEDS = 500  # seeds below this ran the model with a persona


class ImporterError(ValueError):
    """A file that cannot be read as the requested format; the message says where and why."""


# --- Ji et al. 2022 ------------------------------------------------------------------------------
def ji2022_model(task: str, seed: int) -> str:
    """Upstream's system name for a CSV task name and persona seed, e.g. ('kvmemnn', 452) -> 'C_p'."""
    if task == "qc":
        return JI_QC
    try:
        letter = JI_MODELS[task]
    except KeyError:
        raise ImporterError(f"unknown Ji et al. task name {task!r}") from None
    return letter + ("_p" if seed < JI_PERSONA_SEEDS else "")


def ji2022_csv(path: Path) -> HumanEvalInput:
    """Ratings from the raw MTurk batch CSV (one row per assignment, six dialogues each).

    Assignments submitted without answers are listed in `skipped` (free run 1 has one).
    """
    ratings: list[dict[str, Any]] = []
    skipped: list[str] = []
    depth = load_settings(check_providers=False).max_json_depth
    with open(path, newline="", encoding="utf-8-sig") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            try:  # the same reader as a body: a repeated scoreK must not keep its last value silently
                answers = parse(row["Answer.taskAnswers"].encode("utf-8"), max_depth=depth)[0]
            except (KeyError, IndexError, TypeError, JsonTextError) as exc:
                raise ImporterError(f"{path}:{line}: no readable Answer.taskAnswers ({exc})") from None
            if "task0" not in answers:
                skipped.append(f"assignment {row['AssignmentId']} of worker {row['WorkerId']}: empty answer")
                continue
            k = 0
            while f"task{k}" in answers:
                values = [v for v in str(answers[f"score{k}"]).split("#") if v != ""]
                if len(values) != len(JI_CSV_ORDER):
                    raise ImporterError(f"{path}:{line}: score{k} has {len(values)} values, expected 7")
                ratings.append({
                    "rater": row["WorkerId"],
                    "system": ji2022_model(answers[f"task{k}"], int(answers[f"seed{k}"])),
                    "item": f"{row['AssignmentId']}:{k}",
                    "scores": dict(zip(JI_CSV_ORDER, (_finite(f"{path}:{line}: score{k}", v) for v in values))),
                })
                k += 1
    if not ratings:
        raise ImporterError(f"{path}: no ratings found")
    return HumanEvalInput(ratings, reverse=list(JI_REVERSED), scale=(0.0, 100.0), qc_system=JI_QC,
                          qc_criteria=list(JI_QC_CRITERIA), skipped=skipped)


def _finite(where: str, value: Any) -> float:
    """A score's finite number: float() reads "NaN" and "inf" too, which are no score."""
    number = float(value)
    if not math.isfinite(number):
        raise ImporterError(f"{where}: {value!r} is not a finite number")
    return number


def _finite_or_none(value: Any) -> float | None:
    number = None if value is None else float(value)
    return number if number is not None and math.isfinite(number) else None


def _ji2022_json_files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        path = Path(path)
        files.extend(sorted(path.glob("*.json")) if path.is_dir() else [path])
    return files


def ji2022_json(paths: Iterable[Path]) -> HumanEvalInput:
    """Ratings from upstream's dialogue JSON (pass_*.json / fail_*.json, or the folder holding them).

    Raw scores there are already reversed, so `reverse` is empty (and the quality-control criteria
    are named explicitly). The files' pass/fail split and z-scores go into `upstream`.
    """
    ratings: list[dict[str, Any]] = []
    passed: set[str] = set()
    failed: set[str] = set()
    z_scores: dict[str, dict[str, float]] = {}
    files = _ji2022_json_files(paths)
    if not files:
        raise ImporterError("no JSON files given")
    for path in files:
        verdict = passed if path.name.startswith("pass") else failed if path.name.startswith("fail") else None
        assignments = _read_json(path)
        for assignment in assignments:
            worker = assignment["WorkerId"]
            if verdict is not None:
                verdict.add(worker)
            for k, dialogue in enumerate(assignment["data"]):
                item = f"{assignment['AssignmentId']}:{k}"
                ratings.append({"rater": worker, "system": dialogue["model"], "item": item,
                                "scores": {c: _finite(f"{path}: {item} raw scores {c}", v)
                                           for c, v in dialogue["raw scores"].items()}})
                if "z scores" in dialogue:  # a z-score that is no finite number is missing, as a null one
                    z_scores[item] = {c: _finite_or_none(v) for c, v in dialogue["z scores"].items()}
    upstream = {"passed": sorted(passed), "failed": sorted(failed), "z": z_scores}
    return HumanEvalInput(ratings, reverse=[], scale=(0.0, 100.0), qc_system=JI_QC,
                          qc_criteria=list(JI_QC_CRITERIA), upstream=upstream)


def _unique_columns(path: Path, names: Any) -> list[str]:
    """The header's column names, refused where one repeats: csv.DictReader keeps the last of the same name,
    so a repeated metric column would be counted twice."""
    columns = list(names or [])
    repeated = sorted({c for c in columns if columns.count(c) > 1})
    if repeated:
        raise ImporterError(f"{path}: column {', '.join(map(repr, repeated))} appears more than once in the header")
    return columns


_EXTRA = "\x00extra"  # DictReader's key for the fields a row has past the header's


def read_csv_rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]], str]:
    """The header and (line, row) pairs of a CSV or TSV file, every row as wide as the header.

    csv.DictReader drops a row's extra fields silently and fills missing ones with None, so a ragged
    row is refused here with its line; an empty file, and one separated by semicolons (a spreadsheet's
    CSV where the decimal mark is a comma), are read for what they are.
    """
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise ImporterError(f"{path}:{line}: not UTF-8 (byte 0x{raw[exc.start]:02x}); save the file as UTF-8") from None
    if not text.strip():
        raise ImporterError(f"{path}: the file is empty")
    rows, ended = [], 0
    try:
        with long_cells():
            delimiter = _delimiter(path, text)
            # A StringIO with newline="": rows end at \r and \n only, as the file read; str.splitlines would
            # also split cells holding U+2028 or NEL, which csv.writer leaves unquoted. Strict: a stray quote
            # would otherwise swallow the next rows into one cell without a word.
            reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter, restkey=_EXTRA, strict=True)
            columns = _unique_columns(path, reader.fieldnames)
            ended = reader.line_num
            for row in reader:
                extra = row.pop(_EXTRA, None) or []
                short = sum(value is None for value in row.values())
                if extra or short:
                    raise ImporterError(f"{path}:{ended + 1}: {len(columns) + len(extra) - short} field(s), "
                                        f"the header has {len(columns)}")
                rows.append((ended + 1, row))
                ended = reader.line_num
    except csv.Error as exc:
        raise ImporterError(f"{path}:{ended + 1}: not well-formed CSV ({problem(exc)}; a quote in a cell is "
                            "written twice, and the cell quoted)") from None
    if not rows:
        raise ImporterError(f"{path}: a header ({', '.join(columns)}) and no rows under it")
    return columns, rows, delimiter


# --- generic human-eval files ------------------------------------------------------------------------
def human_eval_csv(path: Path) -> HumanEvalInput:
    """One rating per row: columns rater, system, item, then one numeric column per criterion (reverse, scale and
    qc_system keep HumanEvalInput's defaults; the command line sets them)."""
    ratings: list[dict[str, Any]] = []
    columns, rows, delimiter = read_csv_rows(path)
    comma = decimal_comma(delimiter)
    missing = {"rater", "system", "item"} - set(columns)
    if missing:
        raise ImporterError(f"{path}: missing column(s) {', '.join(sorted(missing))}")
    criteria = [c for c in columns if c not in ("rater", "system", "item")]
    for line, row in rows:
        blank = [c for c in ("rater", "system", "item") if not row[c].strip()]
        if blank:
            raise ImporterError(f"{path}:{line}: no {blank[0]} in column {blank[0]!r} (every row names its rater, "
                                "system and item)")
        scores = {c: _number(path, line, c, row[c], "a criterion's score", comma) for c in criteria}
        ratings.append({"rater": row["rater"], "system": row["system"], "item": row["item"], "scores": scores})
    return HumanEvalInput(ratings, places=[f"{path}:{line}" for line, _ in rows])


def human_eval_json(path: Path) -> HumanEvalInput:
    """A /human-eval request body saved to a file."""
    body = _read_json(path)
    if not isinstance(body, dict) or "ratings" not in body:
        raise ImporterError(f"{path}: expected a /human-eval request object with 'ratings'")
    scale = body.get("scale", [0, 100])
    if not isinstance(body["ratings"], list) or not all(isinstance(r, dict) for r in body["ratings"]):
        raise ImporterError(f"{path}: 'ratings' must be a list of rating objects")
    if not isinstance(scale, list) or len(scale) != 2:
        raise ImporterError(f"{path}: 'scale' must be [low, high]")
    return HumanEvalInput(body["ratings"], reverse=body.get("reverse", []),  # checked by the HTTP schema, uncoerced
                          scale=(float(scale[0]), float(scale[1])), qc_system=body.get("qc_system"),
                          qc_criteria=body.get("qc_criteria"), alpha=body.get("alpha"))


# --- correlate files ------------------------------------------------------------------------------
def correlate_json(path: Path) -> CorrelateInput:
    """A /correlate request body saved to a file."""
    body = _read_json(path)
    if not isinstance(body, dict) or "human" not in body or "scores" not in body:
        raise ImporterError(f"{path}: expected a /correlate request object with 'human' and 'scores'")
    if not isinstance(body["scores"], dict):
        raise ImporterError(f"{path}: 'scores' must map metric names to lists of scores")
    settings = {k: body[k] for k in ("methods", "confidence", "resamples", "seed", "system_resampling",
                                     "item_resampling") if k in body}
    return CorrelateInput(body["human"], body["scores"], body.get("systems"), settings, body.get("inputs"))


DECIMAL_COMMA = re.compile(r"[-+]?[0-9]+,[0-9]+")


def _number(path: Path, line: int, column: str, value: str, what: str, comma: bool = False,
            hint: bool = True) -> float:
    """A cell's finite number, or an error naming the line, the column and the rule; with `comma`, a
    decimal comma is read as a point (decimal_comma), and with `hint` a refused one says where it is read."""
    try:
        number = float(value.replace(",", ".") if comma and "." not in value else value)
    except (TypeError, ValueError):
        hint = ("; a decimal comma is read in semicolon-separated files only"
                if hint and not comma and DECIMAL_COMMA.fullmatch(value.strip()) else "")
        raise ImporterError(f"{path}:{line}: column {column!r} holds {value[:40]!r}, not a number "
                            f"(it is read as {what}{hint})") from None
    if not math.isfinite(number):
        raise ImporterError(f"{path}:{line}: column {column!r} holds {value[:40]!r}: give a finite number")
    return number


def correlate_csv(path: Path, human: list[str] | None = None, system: str = "system",
                  id_column: str | None = None, input_column: str | None = None) -> CorrelateInput:
    """One item per row. Human columns: those named in `human`, else every column starting 'human' (several
    give several ratings per item; empty cells are missing ratings, and a row needs one at least, never a
    NaN). An optional `system` column labels systems; a column named `id`, and the one `id_column` names,
    hold item ids; `input_column` names each item's input (e.g. its context id); every other column is a
    metric. Non-numeric metric columns are refused."""
    columns, rows, delimiter = read_csv_rows(path)
    comma = decimal_comma(delimiter)
    absent = [c for c in human or [] if c not in columns]
    if absent:
        raise ImporterError(f"{path}: no column {', '.join(absent)} (columns: {', '.join(columns)})")
    human_cols = human or [c for c in columns if c.lower().startswith("human")]
    if not human_cols:
        raise ImporterError(f"{path}: no human column (name one with --human, or start its name with 'human')")
    if id_column is not None and id_column not in columns:
        raise ImporterError(f"{path}: no id column {id_column!r} (columns: {', '.join(columns)})")
    if input_column is not None and input_column not in columns:
        raise ImporterError(f"{path}: no input column {input_column!r} (columns: {', '.join(columns)})")
    id_cols = list(dict.fromkeys([c for c in (id_column, "id") if c in columns]))
    metric_cols = [c for c in columns if c not in human_cols and c not in (system, input_column) and c not in id_cols]
    if not metric_cols:
        raise ImporterError(f"{path}: no metric columns")
    as_metric = (f"a metric's score: every column but the human ones ({', '.join(human_cols)}), the system "
                 f"column ({system!r}{'' if system in columns else ', absent here'}) and the item ids "
                 f"({', '.join(map(repr, id_cols)) or 'none here'})"
                 f"{'' if input_column is None else f' and the inputs ({input_column!r})'} is; --human, --system, "
                 "--id-column and --input-column name those columns")
    ratings: list[Any] = []
    scores: dict[str, list[float]] = {c: [] for c in metric_cols}
    for line, row in rows:
        values = [_number(path, line, c, row[c], "a human rating", comma) for c in human_cols if row[c] != ""]
        for c in metric_cols:
            scores[c].append(_number(path, line, c, row[c], as_metric, comma))
        if system in columns and not row[system].strip():
            raise ImporterError(f"{path}:{line}: no system in column {system!r} (label every row, or leave the "
                                "column out)")
        if input_column is not None and not row[input_column].strip():
            raise ImporterError(f"{path}:{line}: no input in column {input_column!r} (name every row's input, or "
                                "leave out --input-column)")
        if not values:
            raise ImporterError(f"{path}:{line}: no human rating in {', '.join(human_cols)} (every row needs one; "
                                "leave out the rows nobody rated)")
        ratings.append(values if len(human_cols) > 1 else values[0])
    systems = [row[system] for _, row in rows] if system in columns else None
    inputs = [row[input_column] for _, row in rows] if input_column is not None else None
    return CorrelateInput(ratings, scores, systems, inputs=inputs, places=[f"{path}:{line}" for line, _ in rows])


def scores_jsonl(path: Path, human: list[str] | None = None, input_field: str | None = None) -> CorrelateInput:
    """`dialscore score`'s output: a record a line, its `scores` the metrics, the `kept` fields that `human`
    names (default: the first record's fields starting 'human') its ratings, `system` its system, the kept
    field `input_field` names its input. A record
    some model gave no score (an error under --on-invalid skip) is left out of every metric, so that all
    compare on one set of items; `notes` says how many, and how many are a model's training items
    (`trained`), whose correlations are not held out."""
    ratings: list[Any] = []
    scores: dict[str, list[float]] = {}
    systems: list[str] = []
    inputs: list[str] = []
    places: list[str] = []
    dropped = 0
    trained: dict[str, int] = {}
    models: dict[str, dict[str, Any]] = {}
    names: list[str] = list(human or [])
    try:
        lines = list(jsonl_lines(path))
    except OSError as exc:
        raise ImporterError(f"{path}: not readable ({exc})") from exc
    if not lines:
        raise ImporterError(f"{path}: no records (expected `dialscore score`'s output)")
    depth = load_settings(check_providers=False).max_json_depth
    for number, raw in lines:
        try:
            record = parse_object(raw, max_depth=depth, finite=True)
        except JsonTextError as exc:
            raise ImporterError(f"{path}:{number}: not a record of `dialscore score` ({exc})") from None
        if not isinstance(record.get("scores"), dict) or not record["scores"]:
            raise ImporterError(f"{path}:{number}: no `scores` (expected `dialscore score`'s output)")
        if not scores:
            scores = {name: [] for name in record["scores"]}
        if set(record["scores"]) != set(scores):
            raise ImporterError(f"{path}:{number}: scores of {sorted(record['scores'])}, where the first record "
                                f"has {sorted(scores)}")
        if any(value is None for value in record["scores"].values()):
            dropped += 1  # a line no model could read has no kept fields either
            continue
        kept = record.get("kept") or {}
        names = names or [name for name in kept if name.lower().startswith("human")]
        if not names:
            raise ImporterError(f"{path}:{number}: no human rating in `kept` (score with `--keep FIELD`, and name "
                                "it here with --human)")
        values = [_number(path, number, f"kept.{name}", str(kept[name]), "a human rating", hint=False)
                  for name in names if kept.get(name) not in (None, "")]
        if not values:
            raise ImporterError(f"{path}:{number}: no human rating in kept {', '.join(names)} (every record needs "
                                "one; leave out the lines nobody rated)")
        if input_field is not None:
            if kept.get(input_field) in (None, ""):
                raise ImporterError(f"{path}:{number}: no input in kept {input_field!r} (score with `--keep "
                                    f"{input_field}`, and name every line's input)")
            inputs.append(str(kept[input_field]))
        for name, value in record["scores"].items():
            scores[name].append(value)
        ratings.append(values if len(names) > 1 else values[0])
        places.append(f"{path}:{number}")
        systems.append(record.get("system"))  # dialscore score writes `system`, whatever field it read
        for model in record.get("trained") or []:
            trained[model] = trained.get(model, 0) + 1
        for name, version in (record.get("versions") or {}).items():
            scored_by = {"version": version, **({"options": record["options"][name]}
                                                if name in (record.get("options") or {}) else {})}
            if models.setdefault(name, scored_by) != scored_by:
                raise ImporterError(f"{path}:{number}: {name} scored by {scored_by}, where an earlier record says "
                                    f"{models[name]}: the records of two runs (score them in one)")
    labelled = [s for s in systems if s is not None]
    if labelled and len(labelled) < len(systems):
        raise ImporterError(f"{path}: some records have a `system` and some do not (label every line, or none)")
    owned = ", ".join(f"{count} {'is' if count == 1 else 'are'} {model}'s" for model, count in sorted(trained.items()))
    notes = ([f"{dropped} of {len(lines)} records left out: some model gave them no score (their `errors` say "
              "why), and every metric is measured on the same items"] if dropped else []) + (
        [f"of the {len(ratings)} records kept, {owned} training items (`trained`): that model's correlations "
         "there are not held out (`dialscore score --exclude-trained` leaves them out)"] if trained else [])
    return CorrelateInput(ratings, scores, [str(s) for s in systems] if labelled else None,
                          inputs=inputs if input_field is not None else None, notes="; ".join(notes),
                          models=models, trained=trained, places=places)


def dstc_json(path: Path, aspect: str | None = None) -> CorrelateInput:
    """DSTC-style turn- or dialogue-level evaluation JSON (the DSTC10 track 5 data layout).

    A list of entries (or an object of id -> entry), each with `annotations` {aspect: [ratings]}
    (a bare number is one rating), an optional `model` or `system`, and metric scores under
    `scores`, `metric_scores` or `metrics` {metric: number}. `aspect` picks the annotation; by
    default 'overall' (any case) if present, else the first one.
    """
    body = _read_json(path)
    entries = list(body.values()) if isinstance(body, dict) else body
    if not isinstance(entries, list) or not entries or not all(isinstance(e, dict) for e in entries):
        raise ImporterError(f"{path}: expected a list of evaluation entries")
    first = entries[0].get("annotations") or {}
    if aspect is None:
        aspect = next((a for a in first if a.lower() == "overall"), next(iter(first), None))
    if aspect is None:
        raise ImporterError(f"{path}: entries have no 'annotations'")
    human: list[Any] = []
    scores: dict[str, list[float]] = {}
    systems: list[str] = []
    for i, entry in enumerate(entries):
        ratings = (entry.get("annotations") or {}).get(aspect)
        if ratings is None:
            raise ImporterError(f"{path}: entry {i} has no {aspect!r} annotation")
        human.append([float(r) for r in ratings] if isinstance(ratings, list) else [float(ratings)])
        metrics = entry.get("scores") or entry.get("metric_scores") or entry.get("metrics") or {}
        if i == 0:
            scores = {name: [] for name in metrics}
        if set(metrics) != set(scores):
            raise ImporterError(f"{path}: entry {i} scores {sorted(metrics)}, entry 0 scores {sorted(scores)}")
        for name, value in metrics.items():
            scores[name].append(float(value))
        label = entry.get("model") if entry.get("model") is not None else entry.get("system")
        systems.append("" if label is None else str(label))
    if not scores:
        raise ImporterError(f"{path}: entries carry no metric scores (under 'scores', 'metric_scores' or 'metrics')")
    return CorrelateInput(human, scores, _dstc_systems(path, systems))


def _dstc_systems(path: Path, systems: list[str]) -> list[str] | None:
    """Each entry's system, or None where no entry names one; like a CSV's blank system cell, an
    entry without one beside entries with one is refused, not made a system named ''."""
    blank = [i for i, label in enumerate(systems) if not label.strip()]
    if len(blank) == len(systems):
        return None
    if blank:
        shown = ", ".join(map(str, blank[:5])) + (f" and {len(blank) - 5} more" if len(blank) > 5 else "")
        noun, verb = ("entry", "names") if len(blank) == 1 else ("entries", "name")
        raise ImporterError(f"{path}: {noun} {shown} ({len(blank)} of {len(systems)}) {verb} no system under "
                            "'model' or 'system' while other entries do (label every entry, or none)")
    return systems


def _read_json(path: Path) -> Any:
    """The file's JSON, held to what an HTTP body is held to (json_body: each key once, no lone
    surrogates, nesting up to DIALSCORE_MAX_JSON_DEPTH, a leading BOM dropped), by the same reader, since
    its values reach the same code. NaN and Infinity are read (Python's json writes them): a field that
    is read is held to finite numbers where it is used, and one that is not is no reason to refuse."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ImporterError(f"{path}: not readable ({exc})") from exc
    try:
        return parse(raw, max_depth=load_settings(check_providers=False).max_json_depth)
    except (BadText, TooDeep) as exc:
        raise ImporterError(f"{path}: not usable JSON{f' at {exc.path}' if exc.path else ''}: {exc}") from None
    except JsonTextError as exc:  # NotUtf8, NotJson, RepeatedKey
        raise ImporterError(f"{path}: not readable JSON ({exc})") from None


SNIFFED_LINES = 20


def _delimiter(path: Path, text: str = "") -> str:
    """Tab for a .tsv name; else whichever of comma, tab and semicolon splits the first lines of
    `text` into the most columns, the same number on every line (a spreadsheet writes semicolons
    where the decimal mark is a comma, and then commas inside its cells, so the first separator seen
    may be the wrong one); comma where none splits them."""
    if Path(path).suffix.lower() == ".tsv":
        return "\t"
    head = io.StringIO(text, newline="")
    sample = "".join(head.readline() for _ in range(SNIFFED_LINES))
    best, widest = ",", 1
    for candidate in (",", "\t", ";"):
        rows = [row for row in csv.reader(io.StringIO(sample, newline=""), delimiter=candidate) if row]
        widths = {len(row) for row in (rows[:-1] if len(rows) > 1 else rows)}  # the last may be cut short
        # the widest consistent split: one decimal comma a row splits a semicolon file evenly too
        if len(widths) == 1 and (width := widths.pop()) > widest:
            best, widest = candidate, width
    return best


def decimal_comma(delimiter: str) -> bool:
    """Numbers of a semicolon-separated file may use a decimal comma (the spreadsheets that write one)."""
    return delimiter == ";"


# --- format detection --------------------------------------------------------------------------------
# What a reader raises on a file whose shape it did not expect (a missing column or key, a word
# where a number goes, another encoding): reported as that file's problem, not as a traceback.
_SHAPE_ERRORS = (KeyError, ValueError, TypeError, AttributeError, IndexError, UnicodeDecodeError, csv.Error,
                 RecursionError)


def _read_as(reader, path: Path, fmt: str, *args: Any, detected: bool = False):
    try:
        return reader(*args)
    except ImporterError:
        raise
    except _SHAPE_ERRORS as exc:
        how = " (the format its name and content suggest; --format chooses another)" if detected else ""
        raise ImporterError(f"{path}: cannot be read as {fmt}{how} ({type(exc).__name__}: {exc})") from exc


# The options each correlate format reads; another given with it would be ignored without a word.
READS = {"csv": ("--human", "--system", "--id-column", "--input-column"), "scores": ("--human", "--input-column"),
         "json": (), "dstc": ("--aspect",)}
READS_WHY = {"csv": "they name columns", "scores": "--human and --input-column name kept fields; the records name "
                                                  "their systems",
             "json": "a /correlate body names its own human, systems and inputs",
             "dstc": "its entries name their annotations, scores and systems; --aspect picks the annotation"}


def load_correlate(path: Path, fmt: str = "auto", human: list[str] | None = None,
                   aspect: str | None = None, system: str = "system", id_column: str | None = None,
                   input_column: str | None = None) -> CorrelateInput:
    """Read a correlate input; `fmt` is auto, csv, json (a /correlate body), dstc or scores (`dialscore score`'s
    output, .jsonl). `input_column` names each item's input: a CSV column, or a kept field of scores."""
    path = Path(path)
    detected = fmt == "auto"  # a message names the format tried, never 'auto'
    if detected:
        fmt = _read_as(_detect_correlate, path, "a correlate input", path)
    given = {"--human": human, "--system": None if system == "system" else system, "--id-column": id_column,
             "--input-column": input_column, "--aspect": aspect}
    if ignored := [option for option, value in given.items() if value is not None and option not in READS[fmt]]:
        raise ImporterError(f"{path}: read as {fmt}, the file takes no {', '.join(ignored)} ({READS_WHY[fmt]})")
    data = _read_as(_load_correlate, path, fmt, path, fmt, human, aspect, system, id_column, input_column,
                    detected=detected)
    data.format = fmt
    return data


def load_upstream(paths: list[Path]) -> dict[str, Any] | None:
    """The per-rater results published beside a Ji et al. 2022 release (--upstream), or None."""
    return _read_as(ji2022_json, Path(paths[0]) if paths else Path("."), "ji2022-json", paths).upstream


def load_human_eval(paths: list[Path], fmt: str = "auto") -> HumanEvalInput:
    """Read a human-eval input; `fmt` is auto, csv, json (a /human-eval body), ji2022-csv or ji2022-json."""
    first = Path(paths[0]) if paths else Path(".")
    detected = fmt == "auto"
    if detected:
        fmt = _read_as(_detect_human_eval, first, "a human-eval input", first)
    return _read_as(_load_human_eval, first, fmt, paths, fmt, detected=detected)


def _detect_correlate(path: Path) -> str:
    if path.suffix.lower() in (".csv", ".tsv"):
        return "csv"
    if path.suffix.lower() == ".jsonl":
        return "scores"
    try:
        body = _read_json(path)
    except ImporterError:
        if _first_line_is_a_scores_record(path):  # `dialscore score`'s output under another name
            return "scores"
        raise
    return "json" if isinstance(body, dict) and "human" in body else "dstc"


def _first_line_is_a_scores_record(path: Path) -> bool:
    """Whether the file's first line is one JSON object with `scores`, as `dialscore score` writes a line."""
    try:
        first = next(jsonl_lines(path), (0, b""))[1]
        return "scores" in parse_object(first, max_depth=load_settings(check_providers=False).max_json_depth)
    except (OSError, JsonTextError, BadText, TooDeep):
        return False


def _load_correlate(path: Path, fmt: str, human: list[str] | None, aspect: str | None,
                    system: str = "system", id_column: str | None = None,
                    input_column: str | None = None) -> CorrelateInput:
    path = Path(path)
    if fmt == "csv":
        return correlate_csv(path, human, system, id_column, input_column)
    if fmt == "json":
        return correlate_json(path)
    if fmt == "dstc":
        return dstc_json(path, aspect)
    if fmt == "scores":
        return scores_jsonl(path, human, input_column)
    raise ImporterError(f"unknown correlate format {fmt!r}")


def _detect_human_eval(first: Path) -> str:
    if first.is_dir() or first.name.startswith(("pass_", "fail_")):
        return "ji2022-json"
    if first.suffix.lower() in (".csv", ".tsv"):
        with open(first, newline="", encoding="utf-8-sig") as handle:
            sample = "".join(handle.readline() for _ in range(SNIFFED_LINES))
        header = next(csv.reader(io.StringIO(sample, newline=""), delimiter=_delimiter(first, sample)), [])
        return "ji2022-csv" if "Answer.taskAnswers" in header else "csv"
    return "json"


def _load_human_eval(paths: list[Path], fmt: str) -> HumanEvalInput:
    paths = [Path(p) for p in paths]
    if fmt == "ji2022-json":
        return ji2022_json(paths)
    if len(paths) != 1:
        raise ImporterError(f"format {fmt} reads one file, got {len(paths)}")
    if fmt == "ji2022-csv":
        return ji2022_csv(paths[0])
    if fmt == "csv":
        return human_eval_csv(paths[0])
    if fmt == "json":
        return human_eval_json(paths[0])
    raise ImporterError(f"unknown human-eval format {fmt!r}")
