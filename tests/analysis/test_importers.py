"""Importers: the Ji et al. CSV and JSON describe the same ratings; small files in every other format."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.analysis import importers
from service.analysis.importers import ImporterError


def test_ji2022_csv_and_json_agree_rating_for_rating(data_dir: Path) -> None:
    ji = data_dir / "human_eval" / "ji2022"
    csv_data = importers.ji2022_csv(ji / "raw_mturk_csv" / "FreeTopicRound1" / "Combined_Batches_305hits.csv")
    json_data = importers.ji2022_json([ji / "dialogue_data"])
    assert len(csv_data.ratings) == len(json_data.ratings) == 1824
    assert csv_data.skipped and "AALP4034U041N" in csv_data.skipped[0]  # the one empty assignment
    by_item = {r["item"]: r for r in json_data.ratings}
    for rating in csv_data.ratings:
        theirs = by_item[rating["item"]]
        assert (rating["rater"], rating["system"]) == (theirs["rater"], theirs["system"])
        reversed_ = {c: (100 - v if c in csv_data.reverse else v) for c, v in rating["scores"].items()}
        assert reversed_ == theirs["scores"]  # the JSON's raw scores are already reversed
    assert len(json_data.upstream["passed"]) == 173 and len(json_data.upstream["failed"]) == 75


def test_ji2022_model_names() -> None:
    assert importers.ji2022_model("kvmemnn", 452) == "C_p"
    assert importers.ji2022_model("biencoder", 831) == "A"
    assert importers.ji2022_model("qc", 3) == "QualityControl"
    with pytest.raises(ImporterError):
        importers.ji2022_model("gpt", 1)


def test_ji2022_csv_small_file(tmp_path: Path) -> None:
    answers = {"task0": "polyencoder", "seed0": "612", "score0": "90#62#85#37#63#87#70#",
               "task1": "qc", "seed1": "456", "score1": "100#0#0#0#0#0#0#"}
    path = tmp_path / "batch.csv"
    path.write_text("HITId,AssignmentId,WorkerId,Answer.taskAnswers\n"
                    f"H1,A1,W1,\"{json.dumps([answers]).replace(chr(34), chr(34) * 2)}\"\n", encoding="utf-8")
    data = importers.load_human_eval([path])
    assert data.qc_system == "QualityControl" and data.reverse == ["robotic", "repetitive"]
    assert data.ratings[0] == {"rater": "W1", "system": "B", "item": "A1:0", "scores": {
        "robotic": 90.0, "interesting": 62.0, "fun": 85.0, "consistent": 37.0, "fluent": 63.0,
        "repetitive": 87.0, "topic": 70.0}}


def test_ji2022_csv_answers_are_read_like_a_body(tmp_path: Path) -> None:
    """The answers' embedded JSON kept the last of a repeated scoreK silently and let a 5,000-digit
    number out as a bare ValueError; it goes through the request bodies' reader now."""
    header = "HITId,AssignmentId,WorkerId,Answer.taskAnswers\n"
    repeated = '[{"task0": "qc", "score0": "1#1#1#1#1#1#1#", "score0": "2#2#2#2#2#2#2#"}]'
    for answers, said in ((repeated, "score0"), ('[{"seed0": ' + "1" * 5000 + "}]", "digits")):
        path = tmp_path / "batch.csv"
        path.write_text(header + 'H1,A1,W1,"' + answers.replace('"', '""') + '"\n', encoding="utf-8")
        with pytest.raises(importers.ImporterError, match=said):
            importers.load_human_eval([path])


def test_generic_human_eval_csv_and_json(tmp_path: Path) -> None:
    path = tmp_path / "ratings.csv"
    path.write_text("rater,system,item,fun,dull\nw1,A,d1,70,20\nw1,B,d2,40,50\n", encoding="utf-8")
    data = importers.load_human_eval([path])
    assert data.ratings[1] == {"rater": "w1", "system": "B", "item": "d2", "scores": {"fun": 40.0, "dull": 50.0}}
    body = {"ratings": data.ratings, "reverse": ["dull"], "scale": [0, 100], "qc_system": "B"}
    (tmp_path / "body.json").write_text(json.dumps(body), encoding="utf-8")
    again = importers.load_human_eval([tmp_path / "body.json"])
    assert again.ratings == data.ratings and again.reverse == ["dull"] and again.qc_system == "B"
    bad = tmp_path / "bad.csv"
    bad.write_text("rater,system,fun\nw1,A,3\n", encoding="utf-8")
    with pytest.raises(ImporterError, match="item"):
        importers.load_human_eval([bad])


def test_correlate_csv_with_several_human_columns(tmp_path: Path) -> None:
    path = tmp_path / "scores.csv"
    path.write_text("system,human_1,human_2,bleu,adem\nA,3,4,0.1,2.5\nB,1,,0.3,1.0\nA,5,4,0.2,4.0\n", encoding="utf-8")
    data = importers.load_correlate(path)
    assert data.human == [[3.0, 4.0], [1.0], [5.0, 4.0]]
    assert data.scores == {"bleu": [0.1, 0.3, 0.2], "adem": [2.5, 1.0, 4.0]}
    assert data.systems == ["A", "B", "A"]
    named = importers.load_correlate(path, human=["human_2", "human_1"])
    assert named.human == [[4.0, 3.0], [1.0], [4.0, 5.0]]
    with pytest.raises(ImporterError, match="not a number"):  # human_2 is then a metric with a gap
        importers.load_correlate(path, human=["human_1"])


def test_correlate_csv_reads_an_item_id_column_as_ids_never_as_a_metric(tmp_path: Path) -> None:
    """A column named `id`, and the one --id-column names, are left out of the metrics, numeric or not; a
    non-numeric column read as a metric is refused with a message naming the options that set it apart."""
    path = tmp_path / "scores.csv"
    path.write_text("id,item,human,bleu\n7,pe0,3,0.1\n8,pe1,1,0.3\n9,pe2,5,0.2\n", encoding="utf-8")
    with pytest.raises(ImporterError, match=r"column 'item' holds 'pe0', not a number .*--id-column"):
        importers.load_correlate(path)
    data = importers.load_correlate(path, id_column="item")
    assert data.scores == {"bleu": [0.1, 0.3, 0.2]}
    path.write_text("id,human,bleu\n7,3,0.1\n8,1,0.3\n", encoding="utf-8")
    assert importers.load_correlate(path).scores == {"bleu": [0.1, 0.3]}
    with pytest.raises(ImporterError, match="no id column 'item_id'"):
        importers.load_correlate(path, id_column="item_id")


def test_correlate_json_body_and_dstc_json(tmp_path: Path) -> None:
    body = {"human": [3.0, 4.5, 1.0], "scores": {"adem": [2.9, 4.0, 1.7]}, "systems": ["a", "b", "c"]}
    (tmp_path / "body.json").write_text(json.dumps(body), encoding="utf-8")
    data = importers.load_correlate(tmp_path / "body.json")
    assert (data.human, data.scores, data.systems) == (body["human"], body["scores"], body["systems"])

    dstc = [{"dialogue_id": "d1", "model": "hred", "context": "hi", "response": "hello",
             "annotations": {"Overall": [3, 4, 5], "relevance": [2]}, "scores": {"bleu": 0.2, "adem": 3.1}},
            {"dialogue_id": "d2", "model": "tfidf", "context": "hi", "response": "bye",
             "annotations": {"Overall": 2, "relevance": [1]}, "scores": {"bleu": 0.1, "adem": 2.0}}]
    (tmp_path / "dstc.json").write_text(json.dumps(dstc), encoding="utf-8")
    data = importers.load_correlate(tmp_path / "dstc.json")
    assert data.human == [[3.0, 4.0, 5.0], [2.0]] and data.scores["adem"] == [3.1, 2.0]
    assert data.systems == ["hred", "tfidf"]
    assert importers.load_correlate(tmp_path / "dstc.json", aspect="relevance").human == [[2.0], [1.0]]
    dstc[1]["scores"] = {"bleu": 0.1}
    (tmp_path / "uneven.json").write_text(json.dumps(dstc), encoding="utf-8")
    with pytest.raises(ImporterError, match="entry 1"):
        importers.load_correlate(tmp_path / "uneven.json")


def test_a_dstc_entry_without_a_system_beside_entries_with_one_is_refused(tmp_path: Path) -> None:
    """As a CSV's blank system cell is: not read as a system named ''; with no entry naming a system
    there is no system level."""
    entries = [{"annotations": {"overall": [float(i % 5)]}, "scores": {"m": float(i)}, "model": "abc"[i % 3]}
               for i in range(9)]
    entries += [{"annotations": {"overall": [2.0]}, "scores": {"m": 1.0}} for _ in range(3)]
    path = tmp_path / "dstc.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    with pytest.raises(ImporterError, match=r"entries 9, 10, 11 \(3 of 12\) name no system"):
        importers.load_correlate(path)
    path.write_text(json.dumps([{k: v for k, v in e.items() if k != "model"} for e in entries]), encoding="utf-8")
    assert importers.load_correlate(path).systems is None
    entries[9]["system"] = "d"
    entries[10]["model"] = None
    entries[10]["system"] = "d"
    entries[11]["model"] = "c"
    path.write_text(json.dumps(entries), encoding="utf-8")
    assert importers.load_correlate(path).systems[9:] == ["d", "d", "c"]


def test_a_json_file_is_read_as_a_request_body(tmp_path: Path) -> None:
    """Through json_body.parse, as bodies and bulk lines: a byte order mark is dropped (it was a
    parse error here alone), a repeated key is refused."""
    body = {"human": [1, 2, 3, 4], "scores": {"m": [1, 3, 2, 4]}}
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(body).encode())
    assert importers.correlate_json(bom).scores == body["scores"]
    twice = tmp_path / "twice.json"
    twice.write_bytes(b'{"human": [1, 2, 3], "scores": {"m": [1, 2, 3], "m": [3, 2, 1]}}')
    with pytest.raises(ImporterError, match="'m' appears twice"):
        importers.correlate_json(twice)


def test_dstc_json_picks_overall_in_any_case_even_when_it_is_not_first(tmp_path: Path) -> None:
    """dstc_json's default aspect is 'overall' in any case where present, else the first one: DSTC
    files spell it 'Overall' and list other aspects first, and the first one (here 'relevance') would
    silently be correlated instead."""
    entries = [{"model": "hred", "annotations": {"relevance": [1], "Overall": [3, 5]}, "scores": {"adem": 3.1}},
               {"model": "tfidf", "annotations": {"relevance": [2], "Overall": 2}, "scores": {"adem": 2.0}}]
    path = tmp_path / "dstc.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    assert importers.load_correlate(path).human == [[3.0, 5.0], [2.0]]
    no_overall = [{**e, "annotations": {"relevance": e["annotations"]["relevance"]}} for e in entries]
    path.write_text(json.dumps(no_overall), encoding="utf-8")
    assert importers.load_correlate(path).human == [[1.0], [2.0]]  # no overall: the first aspect


@pytest.mark.parametrize("row", ["  ,A,d2,40", "w1, ,d2,40", "w1,A,,40"])
def test_a_human_eval_csv_row_with_a_blank_label_is_refused(tmp_path: Path, row: str) -> None:
    path = tmp_path / "ratings.csv"
    path.write_text(f"rater,system,item,fun\nw1,A,d1,70\n{row}\n", encoding="utf-8")
    with pytest.raises(ImporterError, match=r"ratings.csv:3: no (rater|system|item) in column"):
        importers.load_human_eval([path])


def test_a_scores_file_names_what_it_lacks(tmp_path: Path) -> None:
    """`dialscore score`'s output without kept ratings, or with models that differ by line, says so."""
    load_correlate = importers.load_correlate
    path = tmp_path / "scores.jsonl"
    path.write_text('{"line": 1, "scores": {"length": 2.0}}\n', encoding="utf-8")
    with pytest.raises(ImporterError, match="--keep FIELD"):
        load_correlate(path)
    path.write_text('{"line": 1, "scores": {"length": 2.0}, "kept": {"human": 3}}\n'
                    '{"line": 2, "scores": {"bleu4": 2.0}, "kept": {"human": 3}}\n', encoding="utf-8")
    with pytest.raises(ImporterError, match=r"scores\.jsonl:2: scores of \['bleu4'\]"):
        load_correlate(path)
    path.write_text('{"line": 1, "scores": {"length": 2.0}, "kept": {"rating": "4,5"}}\n', encoding="utf-8")
    with pytest.raises(ImporterError, match="kept.rating"):
        load_correlate(path, human=["rating"])


def test_a_decimal_comma_outside_a_semicolon_file_is_refused_with_the_rule(tmp_path: Path) -> None:
    path = tmp_path / "ratings.tsv"
    path.write_text("human\tm\n4,2\t1\n3\t2\n1\t3\n", encoding="utf-8")
    with pytest.raises(ImporterError, match="decimal comma is read in semicolon-separated files only"):
        importers.load_correlate(path)


@pytest.mark.parametrize(("body", "where", "why"), [
    # a quote opening a cell swallowed the next row: 9 rows read as 8, a system named '"C,3,0.3,0.8\nA'
    (b'system,human,m1\nA,1,0.1\nB,2,0.2\n"C,3,0.3\n"A,4,0.4\nB,5,0.5\n', 4, "',' expected after '\"'"),
    (b'system,human,m1\nA,1,0.1\n"A"B,2,0.2\n', 3, "',' expected after '\"'"),  # was read as system AB
    (b'system,human,m1\nA,1,0.1\nB,2,"0.2\n', 3, "a quoted cell is not closed"),
])
def test_a_stray_quote_is_refused_with_its_line_not_read_into_other_rows(tmp_path: Path, body: bytes, where: int,
                                                                         why: str) -> None:
    path = tmp_path / "scores.csv"
    path.write_bytes(body)
    with pytest.raises(ImporterError, match=rf"scores\.csv:{where}: not well-formed CSV \({why}"):
        importers.read_csv_rows(path)


def test_a_csv_cell_longer_than_the_csv_modules_default_is_read(tmp_path: Path) -> None:
    import csv

    path, limit = tmp_path / "ratings.csv", csv.field_size_limit(131_072)
    path.write_text("rater,system,item,fun\nw1,A,a1,70\nw1,B," + "x" * 200_000 + ",60\n", encoding="utf-8")
    try:
        columns, rows, _ = importers.read_csv_rows(path)
        assert csv.field_size_limit() == 131_072
    finally:
        csv.field_size_limit(limit)
    assert columns == ["rater", "system", "item", "fun"] and [line for line, _ in rows] == [2, 3]


def test_dialscore_score_output_under_another_name_is_read_as_scores(tmp_path: Path) -> None:
    """Detection went by the `.jsonl` name alone: the same lines as `scores.out` were refused as 'not
    readable JSON (Extra data ...)'. A file whose lines are not such records is refused as before."""
    lines = '{"line": 1, "scores": {"length": 2.0}, "kept": {"human": 3}}\n' \
            '{"line": 2, "scores": {"length": 5.0}, "kept": {"human": 4}}\n'
    path = tmp_path / "scores.out"
    path.write_text(lines, encoding="utf-8")
    data = importers.load_correlate(path)
    assert data.format == "scores" and data.scores == {"length": [2.0, 5.0]}
    path.write_text('{"human": [1]}\n{"human": [2]}\n', encoding="utf-8")
    with pytest.raises(ImporterError, match="not readable JSON"):
        importers.load_correlate(path)
