"""`dialscore score`: a file through several models, per-line scores as /score gives them, per-system means."""
from __future__ import annotations

import csv
import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from service.store import trained_items
from service.cli.score import main
from service.version import VERSION
from tests.conftest import MODEL_STORE, REPO, copy_store, with_trained_items

MODELS = ["bleu4", "length", "rouge-l"]
ITEMS = [
    {"id": "a1", "system": "bot-a", "context": ["how was your weekend?", "not bad, and yours?"],
     "response": "great, i went hiking with my sister!", "reference": "it was lovely, we went to the lake."},
    {"id": "b1", "system": "bot-b", "context": ["how was your weekend?"], "response": "i don't know.",
     "reference": "it was lovely, we went to the lake."},
    {"id": "a2", "system": "bot-a", "context": ["any plans for dinner?"],
     "response": "let's try the new thai place.", "reference": "how about the thai place?"},
    {"id": "b2", "system": "bot-b", "context": ["any plans for dinner?"], "response": "no."},  # no reference
]


def write_jsonl(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def score(store: Path, *args: str) -> int:
    return main([*args, "--model-store", str(store), "--threads", "1"])


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_every_line_through_every_model_as_score_gives_it(baseline_store, client, tmp_path, capsys) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(i) for i in ITEMS] + ["not json"])
    out = tmp_path / "scores.jsonl"
    assert score(baseline_store, str(source), "--models", *MODELS, "--output", str(out), "--json",
                 "--on-invalid", "skip") == 0
    records = read(out)
    assert [r["line"] for r in records] == [1, 2, 3, 4, 5]
    assert [r.get("id") for r in records] == ["a1", "b1", "a2", "b2", None]
    assert [r.get("system") for r in records] == ["bot-a", "bot-b", "bot-a", "bot-b", None]
    items = [{k: v for k, v in i.items() if k not in ("id", "system")} for i in ITEMS[:3]]  # /score is strict
    served = client.post("/score", json={"models": MODELS, "items": items}).get_json()["results"]
    assert sorted(served) == sorted(MODELS)
    for model, result in served.items():
        assert [r["scores"][model] for r in records[:3]] == result["scores"]
    assert records[3]["scores"]["length"] == 1.0 and records[3]["scores"]["bleu4"] is None
    assert records[3]["errors"]["bleu4"]["code"] == "bad_line" and "reference" in records[3]["errors"]["bleu4"]["message"]
    assert all(records[4]["errors"][m]["code"] == "bad_line" for m in MODELS)

    means = json.loads(capsys.readouterr().out)
    for system in ("bot-a", "bot-b"):
        mine = [r for r in records if r.get("system") == system]
        for model in MODELS:
            scored = [r["scores"][model] for r in mine if r["scores"][model] is not None]
            assert means["systems"][system]["means"][model] == pytest.approx(sum(scored) / len(scored))
            assert means["systems"][system]["scored"][model] == len(scored)
    assert means["all"]["lines"] == 5 and means["all"]["scored"] == {"bleu4": 3, "length": 4, "rouge-l": 3}
    assert means["errors"] == {"bleu4": 2, "length": 1, "rouge-l": 2}


def test_the_table_has_a_row_per_system_then_all_and_the_versions(baseline_store, tmp_path, capsys) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(i) for i in ITEMS])
    out = tmp_path / "scores.jsonl"
    assert score(baseline_store, str(source), "--models", "length", "bleu4", "--output", str(out),
                 "--on-invalid", "skip") == 0
    lines = capsys.readouterr().out.splitlines()
    length = [r["scores"]["length"] for r in read(out)]
    assert lines[0].split() == ["system", "lines", "length", "bleu4"]
    assert lines[1].split()[:3] == ["bot-a", "2", f"{(length[0] + length[2]) / 2:.4f}"]
    assert lines[2].split()[:3] == ["bot-b", "2", f"{(length[1] + length[3]) / 2:.4f}"]
    assert lines[3].split()[:3] == ["all", "4", f"{sum(length) / 4:.4f}"]
    assert lines[4].startswith("models: length 2026.") and ", bleu4 2026." in lines[4]
    assert lines[5].startswith("not scored by bleu4: 1 line (line 4: reference: ")


def test_a_csv_file_scores_as_the_same_lines_in_jsonl(baseline_store, tmp_path, capsys) -> None:
    """The context cell holds the turns, one a line; an empty reference cell is no reference."""
    with open(tmp_path / "in.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, ["id", "system", "context", "response", "reference", "human"])
        writer.writeheader()
        for item in ITEMS:
            writer.writerow({**item, "context": "\n".join(item["context"]), "human": 3})
    write_jsonl(tmp_path / "in.jsonl", [json.dumps(i) for i in ITEMS])
    for name in ("in.csv", "in.jsonl"):
        assert score(baseline_store, str(tmp_path / name), "--models", *MODELS, "--output",
                     str(tmp_path / f"{name}.out"), "--on-invalid", "skip") == 0
    assert read(tmp_path / "in.csv.out") == read(tmp_path / "in.jsonl.out")
    capsys.readouterr()


CSV_ROWS = [b"context,response", b'"hi\nhow are you?",fine', b"hello,caf\xe9 au lait", b"yo,ok"]


@pytest.mark.parametrize("rows, problem", [
    (CSV_ROWS, "not UTF-8: byte 0xe9"),
    ([*CSV_ROWS[:2], b'hello,"unterminated', b"yo,ok"], "a quoted cell is not closed"),
    ([*CSV_ROWS[:2], b'hello,"closed" too', b"yo,ok"], "',' expected after '\"'"),
    ([*CSV_ROWS[:2], b"hello, i said,fine", b"yo,ok"], "3 cell(s) where the header has 2"),  # its cells were shifted
    ([*CSV_ROWS[:2], b"hello", b"yo,ok"], "1 cell(s) where the header has 2 (give every column a cell"),
], ids=["latin-1", "unterminated", "after-quote", "wider", "narrower"])
def test_a_bad_csv_row_exits_2_naming_its_row_and_file_line(baseline_store, tmp_path, capsys, rows, problem) -> None:
    """Row 2 is on file line 4, the first row's context cell holding two lines; nothing is written."""
    source = tmp_path / "in.csv"
    source.write_bytes(b"\r\n".join(rows) + b"\r\n")
    out = tmp_path / "scores.jsonl"
    assert score(baseline_store, str(source), "--models", "length", "--output", str(out)) == 2
    [err] = capsys.readouterr().err.splitlines()
    assert err.startswith("dialscore score: error: ") and f"{source}: line 2 (file line 4): {problem}" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]


def test_a_csv_cell_longer_than_the_csv_modules_default_limit_is_scored_as_from_json(baseline_store, tmp_path) -> None:
    """A reply of 200,000 characters stopped the run (csv: "field larger than field limit (131072)"); from a JSON
    line it is scored, and the csv module's own limit is left as it was for whoever reads CSV next (at its
    default here, which an imported module may have raised: training's judgements reader does)."""
    reply, limit = "word " * 40_000, csv.field_size_limit(131_072)
    (tmp_path / "in.csv").write_text(f"context,response\nhi,{reply}\nyo,ok\n", encoding="utf-8")
    write_jsonl(tmp_path / "in.jsonl", [json.dumps({"context": [c], "response": r})
                                        for c, r in (("hi", reply), ("yo", "ok"))])
    try:
        for name in ("in.csv", "in.jsonl"):
            out = str(tmp_path / f"{name}.out")
            assert score(baseline_store, str(tmp_path / name), "--models", "length", "--output", out) == 0
        assert csv.field_size_limit() == 131_072
    finally:
        csv.field_size_limit(limit)
    assert read(tmp_path / "in.csv.out") == read(tmp_path / "in.jsonl.out")


def test_set_up_errors_exit_2_and_leave_the_output_as_it_was(baseline_store, tmp_path, capsys) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(i) for i in ITEMS])
    out = tmp_path / "scores.jsonl"
    out.write_text("an earlier run's\n", encoding="utf-8")
    assert score(baseline_store, str(source), "--models", "length", "no-such-model", "--output", str(out)) == 2
    # the command's own line among the store's log (JSON, or plain text where another test configured logging)
    [err] = [line for line in capsys.readouterr().err.splitlines() if line.startswith("dialscore score:")]
    assert err.startswith("dialscore score: error: model no-such-model is not available"), err
    assert err.endswith("the store's models: " + ", ".join(sorted(  # the name a misspelling meant is among them
        p.parent.name for p in baseline_store.glob("*/manifest.json")
        if json.loads(p.read_text())["kind"] != "component"))), err
    assert score(baseline_store, str(tmp_path / "missing.jsonl"), "--models", "length", "--output", str(out)) == 2
    assert "missing.jsonl" in capsys.readouterr().err
    assert out.read_text(encoding="utf-8") == "an earlier run's\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "scores.jsonl"]  # no partial output left
    with pytest.raises(SystemExit) as exited:
        score(baseline_store, str(source), "--models", "length", "--output", str(out), "--options",
              '{"bleu4": {}}')
    assert exited.value.code == 2 and "not among --models" in capsys.readouterr().err


def test_an_output_that_is_not_a_regular_file_is_refused_and_left_as_it_is(baseline_store, tmp_path, capsys) -> None:
    """A FIFO, or a link to one, is not replaced by a file (nor is /dev/stdout, a link to a pipe or a terminal)."""
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(i) for i in ITEMS])
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    (tmp_path / "link").symlink_to(fifo)
    for out in (fifo, tmp_path / "link"):
        assert score(baseline_store, str(source), "--models", "length", "--output", str(out)) == 2
        err = capsys.readouterr().err
        assert f"{out} is not a regular file; --output must name a file" in err and len(err.splitlines()) == 1
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and (tmp_path / "link").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "link", "out.fifo"]


def test_an_output_that_is_the_commands_own_standard_output_is_refused(baseline_store, tmp_path) -> None:
    """`--output /dev/stdout` with stdout redirected to a file named that file: the run replaced it, and the
    table printed there before was lost."""
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(i) for i in ITEMS])
    printed = tmp_path / "printed.txt"
    printed.write_text("an earlier run's\n", encoding="utf-8")
    with open(printed, "a", encoding="utf-8") as stdout:
        run = subprocess.run([sys.executable, "-m", "service.cli", "score", str(source), "--models", "length",
                              "--output", "/dev/stdout", "--model-store", str(baseline_store)],
                             stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=REPO, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 2 and "is this command's standard output; --output must name another file" in run.stderr
    assert printed.read_text(encoding="utf-8") == "an earlier run's\n"
    with open(printed, encoding="utf-8") as stdin:
        run = subprocess.run([sys.executable, "-m", "service.cli", "score", str(source), "--models", "length",
                              "--output", "/dev/stdin", "--model-store", str(baseline_store)],
                             stdin=stdin, capture_output=True, text=True, cwd=REPO, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    assert run.returncode == 2 and "is this command's standard input" in run.stderr
    assert printed.read_text(encoding="utf-8") == "an earlier run's\n"


def test_an_output_named_through_a_link_is_written_where_the_link_points(baseline_store, tmp_path, capsys) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(i) for i in ITEMS])
    (tmp_path / "results").mkdir()
    target = tmp_path / "results" / "scores.jsonl"
    target.write_text("an earlier run's\n", encoding="utf-8")
    (tmp_path / "latest.jsonl").symlink_to(target)
    assert score(baseline_store, str(source), "--models", "length", "--output", str(tmp_path / "latest.jsonl")) == 0
    capsys.readouterr()
    assert (tmp_path / "latest.jsonl").is_symlink() and len(read(target)) == len(ITEMS)


def test_a_line_that_fails_exits_1_with_the_count_and_writes_nothing(baseline_store, tmp_path, capsys) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(i) for i in ITEMS] + ["not json"])
    out = tmp_path / "scores.jsonl"
    out.write_text("an earlier run's\n", encoding="utf-8")
    assert score(baseline_store, str(source), "--models", *MODELS, "--output", str(out)) == 1
    captured = capsys.readouterr()
    assert "2 lines could not be scored" in captured.err and "--on-invalid skip" in captured.err
    assert "not scored by bleu4: 2 lines" in captured.out
    assert out.read_text(encoding="utf-8") == "an earlier run's\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "scores.jsonl"]
    assert score(baseline_store, str(source), "--models", *MODELS, "--output", str(out), "--on-invalid", "skip") == 0
    assert "2 lines not scored by every model" in capsys.readouterr().err
    assert len(read(out)) == 5


def test_a_references_list_scores_against_each_and_keeps_the_best(baseline_store, tmp_path, capsys) -> None:
    """references.py: the rule `training evaluate` measures referenced models by; an unreferenced model
    scores the line once; a bad list is that line's error."""
    item = {k: v for k, v in ITEMS[0].items() if k != "reference"}
    references = ["it was lovely, we went to the lake.", "great, i went hiking with my brother!", "fine."]
    lines = [json.dumps({**item, "reference": r}) for r in references]
    lines += [json.dumps({**item, "references": references}), json.dumps({**item, "references": []}),
              json.dumps({**ITEMS[0], "references": references}),
              json.dumps({**item, "references": [references[0], "\u200b "]})]
    source = write_jsonl(tmp_path / "in.jsonl", lines)
    out = tmp_path / "scores.jsonl"
    assert score(baseline_store, str(source), "--models", *MODELS, "--output", str(out), "--on-invalid", "skip") == 0
    records = read(out)
    for model in ("bleu4", "rouge-l"):
        single = [r["scores"][model] for r in records[:3]]
        assert len(set(single)) == 3 and records[3]["scores"][model] == max(single)
        assert "non-empty list" in records[4]["errors"][model]["message"]
        assert "not both" in records[5]["errors"][model]["message"]
        # it said the model "needs a reference (not blank)", where the line gave one
        assert "references.1 is blank" in records[6]["errors"][model]["message"]
    assert records[5]["id"] == ITEMS[0]["id"]
    assert {r["scores"]["length"] for r in records} == {records[0]["scores"]["length"]}
    with open(tmp_path / "in.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, ["context", "response", "references"])
        writer.writeheader()
        writer.writerow({"context": "\n".join(item["context"]), "response": item["response"],
                         "references": "\n".join(references)})
    assert score(baseline_store, str(tmp_path / "in.csv"), "--models", *MODELS, "--output", str(out)) == 0
    assert read(out)[0]["scores"] == records[3]["scores"]
    capsys.readouterr()


def test_a_referenced_model_reads_the_first_four_references_and_the_rest_are_counted(baseline_store, tmp_path,
                                                                                     capsys) -> None:
    """The cards' rule, `training evaluate --max-refs 4`'s: a fifth reference equal to the reply moves nothing."""
    item = {k: v for k, v in ITEMS[0].items() if k != "reference"}
    four = ["it was lovely, we went to the lake.", "fine.", "not much, you?", "we stayed in."]
    lines = [json.dumps({**item, "references": [*four, item["response"]]}), json.dumps({**item, "references": four})]
    source = write_jsonl(tmp_path / "in.jsonl", lines)
    out = tmp_path / "scores.jsonl"
    assert score(baseline_store, str(source), "--models", "bleu4", "length", "--output", str(out), "--json") == 0
    five, first_four = read(out)
    assert five["scores"] == first_four["scores"] and five["scores"]["bleu4"] < 1.0
    assert five["references_left_out"] == 1 and "references_left_out" not in first_four
    summary = json.loads(capsys.readouterr().out)
    assert summary["references_left_out"] == {"max_refs": 4, "references": 1, "lines": 1}
    assert score(baseline_store, str(source), "--models", "bleu4", "--output", str(out), "--max-refs", "5") == 0
    assert read(out)[0]["scores"]["bleu4"] == 1.0 and "references_left_out" not in read(out)[0]
    assert "references:" not in capsys.readouterr().out
    assert score(baseline_store, str(source), "--models", "bleu4", "--output", str(out)) == 0
    assert "the first 4 of each list (--max-refs); 1 more on 1 line left out" in capsys.readouterr().out


def test_each_mean_has_a_student_t_interval_over_its_rows_scored_lines(baseline_store, tmp_path, capsys) -> None:
    """scipy's Student-t interval of the mean over the lines a model scored in that row; nothing resampled."""
    items = [{**ITEMS[k % 3], "system": "bot-a" if k < 6 else "bot-b",
              "response": f"{ITEMS[k % 3]['response']} {'and more ' * k}"} for k in range(7)]
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(i) for i in items])
    out = tmp_path / "scores.jsonl"
    assert score(baseline_store, str(source), "--models", "length", "bleu4", "--output", str(out), "--json",
                 "--confidence", "0.9") == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["dialscore"] == VERSION and captured.err == ""
    assert summary["intervals"] == {"method": summary["intervals"]["method"], "confidence": 0.9, "resamples": None,
                                    "seed": None, "resampled": summary["intervals"]["resampled"]}
    assert summary["intervals"]["method"].startswith("Student-t interval of the mean")
    assert summary["intervals"]["resampled"].startswith("nothing")
    records = read(out)
    for row, mine in (("bot-a", records[:6]), ("all", records)):
        for model in ("length", "bleu4"):
            values = np.array([r["scores"][model] for r in mine])
            expected = stats.ttest_1samp(values, 0).confidence_interval(0.9)
            found = (summary[row] if row == "all" else summary["systems"][row])["ci"][model]
            assert found == [pytest.approx(expected.low), pytest.approx(expected.high)]
    assert summary["systems"]["bot-b"]["ci"] == {"length": None, "bleu4": None}  # one line: no spread to estimate
    assert score(baseline_store, str(source), "--models", "length", "--output", str(out), "--resamples", "0",
                 "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["all"]["ci"] == {"length": None} and summary["intervals"]["method"] is None
    assert score(baseline_store, str(source), "--models", "length", "--output", str(out)) == 0
    table = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"bot-a +6 +[\d.]+ \[[\d.]+, [\d.]+\]", table[1])
    assert table[-2].startswith("intervals: 95% Student-t interval of the mean") and table[-1] == f"dialscore {VERSION}"


def test_resamples_and_seed_are_accepted_and_said_to_change_nothing(baseline_store, tmp_path, capsys) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps({**ITEMS[k % 3], "system": "a"}) for k in range(4)])
    out = tmp_path / "scores.jsonl"
    assert score(baseline_store, str(source), "--models", "length", "--output", str(out), "--json") == 0
    plain = capsys.readouterr().out
    assert score(baseline_store, str(source), "--models", "length", "--output", str(out), "--json",
                 "--resamples", "3", "--seed", "5") == 0
    captured = capsys.readouterr()
    assert captured.out == plain
    assert ("dialscore score: --resamples 3 and --seed 5 change nothing: the intervals are Student-t intervals"
            in captured.err)


def test_a_models_training_items_are_marked_counted_and_left_out_on_request(tmp_path, capsys) -> None:
    store = copy_store(tmp_path / "store", ("length", "bleu4"))
    with_trained_items(store, "length", [(["any plans for dinner?"], "let's try the new thai place."),
                                         (["how was your weekend?"], "something else entirely")])
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(i) for i in ITEMS[:3]])
    out = tmp_path / "scores.jsonl"
    assert score(store, str(source), "--models", "length", "bleu4", "--output", str(out), "--json") == 0
    captured = capsys.readouterr()
    assert [r.get("trained") for r in read(out)] == [None, None, ["length"]]
    assert json.loads(captured.out)["trained"] == {"length": 1}
    assert "warning: 1 of the 3 lines length scored are its training items" in captured.err
    assert score(store, str(source), "--models", "length", "bleu4", "--output", str(out), "--json",
                 "--exclude-trained") == 0
    captured = capsys.readouterr()
    assert [r["line"] for r in read(out)] == [1, 2]
    assert json.loads(captured.out)["all"]["scored"] == {"length": 2, "bleu4": 2}
    assert "1 line left out, 2 scored" in captured.err and "training dev-items" in captured.err
    (store / "length" / trained_items.FILE).write_bytes(b"altered")
    assert score(store, str(source), "--models", "length", "--output", str(out)) == 2
    assert "trained_items.npy has sha256" in capsys.readouterr().err  # the store checks every file


def test_a_training_item_is_flagged_in_any_spelling_and_another_reply_to_its_turn_is_not(tmp_path, capsys) -> None:
    """Training's tokenised "did n't" and a release's "didn't" are one item; a generic turn flags only its reply."""
    store = copy_store(tmp_path / "store", ("length",))
    with_trained_items(store, "length", [(["so what happened ?", "i did n't do a good job of it ."], "oh no , why ?"),
                                         (["what is it ?"], "a present for you .")])
    lines = [{"context": ["I didn't do a good job of it."], "response": "Oh no, why?"},
             {"context": ["I didn’t do a good job of it."], "response": "Oh no, why?"},
             {"context": ["What is it?"], "response": "A present for you."},
             {"context": ["what is it ?"], "response": "it is a book ."},
             {"context": ["A: hi", "B: What is it?"], "response": "A: A present for you."},  # speaker tags
             {"context": ["hi what is it ?"], "response": "a present for you ."}]  # turns joined: not matched
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(line) for line in lines])
    out = tmp_path / "scores.jsonl"
    assert score(store, str(source), "--models", "length", "--output", str(out)) == 0
    assert [r.get("trained") for r in read(out)] == [["length"], ["length"], ["length"], None, ["length"], None]
    assert "warning: 4 of the 6 lines length scored are its training items" in capsys.readouterr().err


def test_lines_whose_reply_the_models_cannot_read_carry_the_warning_api_gives(tmp_path, capsys) -> None:
    store = copy_store(tmp_path / "store", ("length",))
    lines = [{"context": ["how are you?"], "response": reply}
             for reply in ("   ", "Я в порядке, спасибо, а ты?", "🙂🙂", "fine thanks", "")]
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(line) for line in lines])
    out = tmp_path / "scores.jsonl"
    assert score(store, str(source), "--models", "length", "--output", str(out), "--json") == 0
    captured = capsys.readouterr()
    assert [r.get("warning", {}).get("code") for r in read(out)] == ["empty", "not_english", "no_words", None, "empty"]
    assert json.loads(captured.out)["warnings"] == {"empty": 2, "not_english": 1, "no_words": 1}
    assert "warning: 4 lines have replies the models cannot read (empty 2, no_words 1, not_english 1)" in captured.err


def test_a_training_item_a_model_could_not_score_is_not_counted_as_scored(tmp_path, capsys) -> None:
    store = copy_store(tmp_path / "store", ("bleu4",))
    with_trained_items(store, "bleu4", [(["how was your weekend?"], "fine"), (["hi"], "hello there")])
    lines = [{"context": ["how was your weekend?"], "response": "fine"},  # no reference: bleu4 cannot score it
             {"context": ["hi"], "response": "hello there", "reference": "hello"},
             {"context": ["hi"], "response": "bye", "reference": "hello"}]
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(line) for line in lines])
    out = tmp_path / "scores.jsonl"
    assert score(store, str(source), "--models", "bleu4", "--output", str(out), "--on-invalid", "skip", "--json") == 0
    captured = capsys.readouterr()
    assert [r.get("trained") for r in read(out)] == [["bleu4"], ["bleu4"], None]
    summary = json.loads(captured.out)
    assert "errors" in read(out)[0] and (summary["trained"], summary["trained_scored"]) == ({"bleu4": 2}, {"bleu4": 1})
    assert "warning: 1 of the 2 lines bleu4 scored are its training items (1 more it could not score)" in captured.err
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(lines[0]), json.dumps(lines[2])])
    assert score(store, str(source), "--models", "bleu4", "--output", str(out), "--on-invalid", "skip") == 0
    err = capsys.readouterr().err
    assert "bleu4: 1 line is its training items (" in err and "no line matched" not in err


def test_a_line_the_scorer_refuses_carries_no_mark(tmp_path, capsys) -> None:
    """A repeated key: the scorer refuses the line as ambiguous, so no reading of it marks it trained."""
    store = copy_store(tmp_path / "store", ("length",))
    with_trained_items(store, "length", [(["hi"], "hello there")])
    source = tmp_path / "in.jsonl"
    source.write_text('{"context": ["hi"], "response": "bye", "response": "hello there"}\n', encoding="utf-8")
    out = tmp_path / "scores.jsonl"
    assert score(store, str(source), "--models", "length", "--output", str(out), "--on-invalid", "skip", "--json") == 0
    captured = capsys.readouterr()
    assert "ambiguous JSON" in json.dumps(read(out)[0]["errors"]) and read(out)[0].get("trained") is None
    assert json.loads(captured.out)["trained"] == {}


@pytest.mark.data
def test_gupta_items_are_flagged_for_the_models_that_read_them_in_the_releases_spelling(tmp_path, capsys) -> None:
    """adem-minilm's 310 Gupta items stay flagged with the last turn detokenised; ruber-minilm flags the
    five whose (turn, reply) is a DailyDialog training pair; unref-minilm-commercial (DSTC7 and ConTurE
    only) flags none, though some Gupta turns ("what is it ?") end a ConTurE training context."""
    from training.data.judgements import load_set

    items = load_set("dailydialog_gupta_multiref", "all")
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps({"context": i.context[:-1] + [detokenised(i.context[-1])],
                                                             "response": i.response, "references": i.references})
                                                for i in items])
    out = tmp_path / "scores.jsonl"
    assert score(MODEL_STORE, str(source), "--models", "adem-minilm", "ruber-minilm", "unref-minilm-commercial",
                 "--output", str(out), "--json") == 0
    assert json.loads(capsys.readouterr().out)["trained"] == {"adem-minilm": 310, "ruber-minilm": 5}


def detokenised(text: str) -> str:
    """DailyDialog's tokenised "it 's a deal , i did n't ." as its release spells it: "It's a deal, I didn't."."""
    text = re.sub(r" (n't|'s|'m|'re|'ve|'ll|'d)\b", r"\1", text)
    text = re.sub(r" ([,.?!])", r"\1", text)
    return re.sub(r"\bi\b", "I", text[:1].upper() + text[1:])


@pytest.mark.data
def test_adem_minilm_on_guptas_500_items_warns_of_its_310_training_items(tmp_path, capsys) -> None:
    """The acceptance of issue 52: the warning, and --exclude-trained scores the 190 others."""
    from training.data.judgements import load_set

    items = load_set("dailydialog_gupta_multiref", "all")
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps({"id": i.item_id, "system": i.system, "context": i.context,
                                                             "response": i.response, "references": i.references})
                                                 for i in items])
    out = tmp_path / "scores.jsonl"
    assert len(items) == 500
    assert score(MODEL_STORE, str(source), "--models", "adem-minilm", "--output", str(out), "--json",
                 "--exclude-trained") == 0
    captured = capsys.readouterr()
    assert "left out: 310 lines are adem-minilm's training items" in captured.err
    assert json.loads(captured.out)["all"]["scored"] == {"adem-minilm": 190}
    assert {r["id"] for r in read(out)} >= {i.item_id for i in load_set("dailydialog_gupta_multiref", "dev")}


def test_a_model_with_no_flagged_line_is_said_to_be_checked_against_its_keys_only() -> None:
    """Keys of pair streams hold only the judged sets' pairs: "none of the lines is one of its training
    items" read as a clean bill for lines of its unrated training dialogues, which are never checked, and for
    lines whose context was joined into one turn, which are not matched."""
    import numpy as np

    from service.cli.score import Summary, trained_lines
    from service.store.trained_items import TrainedItems

    about = {"split": "train", "sets": {}, "pairs": {"sources": ["dialogues"], "sets": {"conture": 4}}}
    [line] = trained_lines(Summary(), [TrainedItems("ruber", np.array([], dtype=np.uint64), about)], exclude=False)
    assert line.startswith("ruber: no line matched its training keys") and "their other pairs are not checked" in line
    assert "a context joined into one turn is not" in line
    about = {"split": "train", "sets": {"a-set": 3}, "pairs": {"sources": ["dialogues"], "sets": {}}}
    [line] = trained_lines(Summary(), [TrainedItems("adem", np.array([], dtype=np.uint64), about)], exclude=False)
    assert "its train partition of a-set" in line and "pairs" not in line  # no judged item among its pairs


def test_a_line_scores_alike_in_any_canonically_equivalent_spelling(baseline_store, tmp_path) -> None:
    """Texts are read in NFC (scorers/base.py, Item): a reply in NFD against its NFC reference is a match."""
    import unicodedata

    text = "we had a lovely crème brûlée at the café in zürich."
    lines = [json.dumps({"context": ["hi"], "response": spelt, "reference": text})
             for spelt in (text, unicodedata.normalize("NFD", text))]
    out = tmp_path / "scores.jsonl"
    assert score(baseline_store, str(write_jsonl(tmp_path / "in.jsonl", lines)), "--models", *MODELS,
                 "--output", str(out)) == 0
    composed, decomposed = read(out)
    assert decomposed["scores"] == composed["scores"] and composed["scores"]["bleu4"] == 1.0


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_stop_removes_the_partial_output_and_exits_128_plus_the_signal(baseline_store, tmp_path, signum,
                                                                         status) -> None:
    """SIGTERM or Ctrl-C while the input is waited for: one line on stderr, no `.partial` left, no output."""
    fifo = tmp_path / "in.jsonl"
    os.mkfifo(fifo)
    out = tmp_path / "scores.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO), "DIALSCORE_INTRA_OP_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "service.cli", "score", str(fifo), "--models", "length",
                             "--output", str(out), "--model-store", str(baseline_store), "--batch-size", "2"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with open(fifo, "w", encoding="utf-8") as writer:  # the input stays open: the command waits on it
        writer.write("".join(json.dumps(item) + "\n" for item in ITEMS[:3]))
        writer.flush()
        assert (tmp_path / f"scores.jsonl.{proc.pid}.partial").exists()  # opened before the input, open now
        time.sleep(1.0)  # the first batch scored, the rest of the input waited for
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == status, stderr.decode()
    assert stderr.decode().splitlines() == [f"dialscore score: stopped by {signal.Signals(signum).name}; "
                                            f"{out} not written"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_two_runs_onto_one_output_each_replace_it_whole(baseline_store, tmp_path) -> None:
    """Both wrote `<output>.partial`: the second run's lines went into the file the first had renamed, which
    then held both models' records and a torn line under exit 0, and the other run failed its rename."""
    fifo, small = tmp_path / "slow.jsonl", write_jsonl(tmp_path / "small.jsonl", [json.dumps(i) for i in ITEMS])
    os.mkfifo(fifo)
    out = tmp_path / "scores.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO), "DIALSCORE_INTRA_OP_THREADS": "1"}
    command = [sys.executable, "-m", "service.cli", "score", "--output", str(out), "--model-store",
               str(baseline_store), "--batch-size", "1"]
    slow = subprocess.Popen([*command, str(fifo), "--models", "rouge-l"], env=env, stderr=subprocess.PIPE)
    with open(fifo, "w", encoding="utf-8") as writer:  # the first run writes while the second runs whole
        writer.write("".join(json.dumps(ITEMS[i % 3]) + "\n" for i in range(300)))
        writer.flush()
        quick = subprocess.run([*command, str(small), "--models", "length"], env=env, capture_output=True)
        assert quick.returncode == 0, quick.stderr.decode()
        assert [list(r["scores"]) for r in read(out)] == [["length"]] * len(ITEMS)
        writer.write("".join(json.dumps(ITEMS[i % 3]) + "\n" for i in range(300)))
    assert slow.wait(timeout=300) == 0, slow.stderr.read().decode()
    records = read(out)  # the last run to finish replaced the output whole
    assert len(records) == 600 and all(list(r["scores"]) == ["rouge-l"] for r in records)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.jsonl", "slow.jsonl", "small.jsonl"]


def test_an_output_that_is_the_input_is_refused_and_the_input_kept(baseline_store, tmp_path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(i) for i in ITEMS])
    before = source.read_bytes()
    link = tmp_path / "link.jsonl"
    link.symlink_to(source)
    for output in (source, link):
        assert score(baseline_store, str(source), "--models", "length", "--output", str(output)) == 2
    assert source.read_bytes() == before


def test_blank_lines_are_left_out_and_the_others_keep_their_numbers(baseline_store, tmp_path) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(ITEMS[0]), "", "  ", json.dumps(ITEMS[1]), ""])
    out = tmp_path / "scores.jsonl"
    assert score(baseline_store, str(source), "--models", "length", "--output", str(out)) == 0
    assert [r["line"] for r in read(out)] == [1, 4]


def test_a_system_field_no_line_has_is_said_and_negative_threads_refused(baseline_store, tmp_path, capsys) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(i) for i in ITEMS])
    out = tmp_path / "scores.jsonl"
    assert score(baseline_store, str(source), "--models", "length", "--output", str(out), "--system", "bot") == 0
    assert "no line has the field --system bot" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stopped:
        main([str(source), "--models", "length", "--output", str(out), "--threads", "-1"])
    assert stopped.value.code == 2 and "--threads must be 0" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stopped:  # 3,000 threads ran past 90 s; 100,000 crashed
        main([str(source), "--models", "length", "--output", str(out), "--threads", "3000"])
    assert stopped.value.code == 2 and "--threads must be 0 (all cores) to 256" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["5", "true", '"ab"', "[1]"])
def test_options_of_a_model_that_are_not_an_object_are_refused_in_a_line(tmp_path, capsys, value: str) -> None:
    """A bare value printed a traceback (exit 1, which says lines were not scored), a string a message about
    dictionary update sequences."""
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(i) for i in ITEMS])
    with pytest.raises(SystemExit) as stopped:
        main([str(source), "--models", "length", "--output", str(tmp_path / "o.jsonl"), "--options",
              '{"length": ' + value + "}"])
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "--options gives length a value that is not a JSON object" in err, err


def test_kept_ratings_take_the_scores_to_correlate(tmp_path, capsys) -> None:
    """`--keep human` carries each line's rating into its record, and `service.analysis correlate` reads the
    output as it is; a line some model could not score (no reference for bleu4) is left out of every metric."""
    from scipy import stats as sps

    from service.analysis.__main__ import main as analysis

    store = copy_store(tmp_path / "store", ("length", "bleu4"))
    replies = ["fine thanks", "it was a long and tiring day at work", "ok", "we went hiking by the lake all day",
               "good", "not bad, i read a book", "i watched two films and cooked", "meh"]
    lines = [{"context": ["how was your day?"], "response": reply, "human": float(i % 4 + len(reply) / 10),
              "system": f"s{i % 2}", **({"reference": "it was a good day"} if i else {})}
             for i, reply in enumerate(replies)]
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(line) for line in lines])
    out = tmp_path / "scores.jsonl"
    assert score(store, str(source), "--models", "length", "bleu4", "--output", str(out), "--keep", "human",
                 "--on-invalid", "skip") == 0
    records = read(out)
    assert [r["kept"] for r in records] == [{"human": line["human"]} for line in lines]
    capsys.readouterr()
    assert analysis(["correlate", str(out), "--out", str(tmp_path / "report"), "--no-plots", "--resamples", "0"]) == 0
    err = capsys.readouterr().err
    assert "1 of 8 records left out" in err
    result = json.loads((tmp_path / "report" / "correlate.json").read_text())
    scored = records[1:]
    expected = sps.pearsonr([r["kept"]["human"] for r in scored], [r["scores"]["length"] for r in scored]).statistic
    assert result["n"] == 7 and result["metrics"]["length"]["item"]["pearson"]["r"] == pytest.approx(expected)
    assert "1 of 8 records left out" in (tmp_path / "report" / "correlate.md").read_text()


def test_kept_fields_add_up_and_unreadable_or_trained_lines_are_said_not_fatal(tmp_path, capsys) -> None:
    """`--keep a --keep b` keeps both; a line that is not JSON (its record keeps nothing) is left out of
    correlate, and a training item is read with a note; a CSV column --keep names must exist."""
    from service.analysis.__main__ import main as analysis

    store = copy_store(tmp_path / "store", ("length",))
    with_trained_items(store, "length", [(["hi"], "hello there")])
    lines = [json.dumps({"context": ["hi"], "response": reply, "human": rating, "rater": "r1"})
             for reply, rating in (("hello there", 4), ("bye", 1), ("hi, how are you?", 5), ("ok", 2))]
    source = write_jsonl(tmp_path / "in.jsonl", [*lines, "not json"])
    out = tmp_path / "scores.jsonl"
    assert score(store, str(source), "--models", "length", "--output", str(out), "--keep", "human", "--keep", "rater",
                 "--on-invalid", "skip") == 0
    assert read(out)[0]["kept"] == {"human": 4, "rater": "r1"} and read(out)[4]["kept"] == {}
    capsys.readouterr()
    assert analysis(["correlate", str(out), "--out", str(tmp_path / "report"), "--no-plots", "--resamples", "0"]) == 0
    err = capsys.readouterr().err
    assert "1 of 5 records left out" in err and "of the 4 records kept, 1 is length's training items" in err
    table = tmp_path / "in.csv"
    table.write_text("context,response,human\nhi,bye,3\n", encoding="utf-8")
    assert score(store, str(table), "--models", "length", "--output", str(out), "--keep", "rating") == 2
    assert "--keep rating: no such column (the header has context, response, human)" in capsys.readouterr().err


def test_an_option_that_asks_for_details_writes_them_in_each_record(tmp_path) -> None:
    """`--options '{"ruber": {"components": true}}'` was recorded under `options` and its components dropped;
    the record now carries them as bulk's does, with the references' best (the score's own)."""
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(
        {"context": ["how was your weekend?"], "response": "great, i went hiking!",
         "references": ["fine, thanks.", "i went hiking with my sister."]})])
    out = tmp_path / "scores.jsonl"
    assert score(MODEL_STORE, str(source), "--models", "ruber", "length", "--output", str(out), "--options",
                 '{"ruber": {"components": true}}') == 0
    [record] = read(out)
    assert set(record["details"]) == {"ruber"} and {"s_ref", "s_unref"} <= set(record["details"]["ruber"])
    assert record["options"] == {"ruber": {"components": True}}
