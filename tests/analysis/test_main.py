"""`python -m service.analysis`: files in, JSON + Markdown + PNG out, exit 2 with a message on bad input."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from service.analysis import importers
from service.analysis.__main__ import main
from service.version import VERSION

PNG = b"\x89PNG\r\n\x1a\n"


def test_correlate_writes_results_tables_and_plots(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rng = np.random.default_rng(0)
    human = rng.normal(size=30)
    lines = ["system,human,good,poor"] + [f"s{i % 3},{h:.3f},{h + rng.normal(0, .3):.3f},{rng.normal():.3f}"
                                          for i, h in enumerate(human)]
    (tmp_path / "in.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["correlate", str(tmp_path / "in.csv"), "--resamples", "100", "--methods", "pearson", "kendall",
                 "--out", str(out)]) == 0
    result = json.loads((out / "correlate.json").read_text())
    assert result["metrics"]["good"]["item"]["pearson"]["r"] > 0.8
    assert result["dialscore"] == VERSION  # the version to cite with the figures (docs/citing.md)
    markdown = capsys.readouterr().out
    assert markdown.startswith(f"dialscore {VERSION}\n") and "### Item level" in markdown
    assert "B = 100 resamples, seed 0" in markdown
    assert not (out / "correlate_item_spearman.png").exists()
    for level in ("item", "system"):
        for method in ("pearson", "kendall"):
            assert (out / f"correlate_{level}_{method}.png").read_bytes().startswith(PNG)
    assert main(["correlate", str(tmp_path / "in.csv"), "--resamples", "100", "--out", str(out), "--no-plots",
                 "--quiet"]) == 0
    assert capsys.readouterr().out == "" and "### Item level" in (out / "correlate.md").read_text()


def test_correlate_takes_the_system_design_from_the_command_line_or_the_body(tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture) -> None:
    human = [float(h) for h in range(24)]
    body = {"human": human, "scores": {"m": [h + (i % 4) for i, h in enumerate(human)]},
            "systems": [f"s{i % 6}" for i in range(24)], "methods": ["pearson"], "resamples": 200, "seed": 3,
            "system_resampling": "items"}
    (tmp_path / "body.json").write_text(json.dumps(body), encoding="utf-8")
    assert main(["correlate", str(tmp_path / "body.json"), "--out", str(tmp_path / "a"), "--no-plots"]) == 0
    assert json.loads((tmp_path / "a" / "correlate.json").read_text())["resampling"]["system"]["design"] == "items"
    capsys.readouterr()
    assert main(["correlate", str(tmp_path / "body.json"), "--system-resampling", "systems", "--out",
                 str(tmp_path / "b"), "--no-plots"]) == 0
    result = json.loads((tmp_path / "b" / "correlate.json").read_text())
    assert result["resampling"]["system"] | {"design": "systems", "resamples": 200, "seed": 3} == \
        result["resampling"]["system"]
    printed = capsys.readouterr().out
    system = printed.split("### System level")[1]
    assert "Resampling: percentile bootstrap, 0.95 intervals, B = 200 resamples, seed 3, design `systems`" in system
    assert (tmp_path / "b" / "correlate.md").read_text(encoding="utf-8") in printed
    # a body's `inputs` reach the statistics (resampled as whole inputs), not dropped on the way
    body = {**body, "inputs": [f"c{i // 6}" for i in range(24)], "system_resampling": "both"}
    (tmp_path / "inputs.json").write_text(json.dumps(body), encoding="utf-8")
    assert main(["correlate", str(tmp_path / "inputs.json"), "--out", str(tmp_path / "c"), "--no-plots"]) == 0
    resampled = json.loads((tmp_path / "c" / "correlate.json").read_text())["resampling"]["system"]["resampled"]
    assert resampled.startswith("systems resampled with replacement, and inputs")


def test_correlate_reads_each_items_input_from_a_column_or_kept_field(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture) -> None:
    rows = ["human,m,context,system"] + [f"{i % 5},{(i % 5) + i % 3},c{i // 4},s{i % 4}" for i in range(40)]
    (tmp_path / "in.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert main(["correlate", str(tmp_path / "in.csv"), "--input-column", "context", "--item-resampling", "inputs",
                 "--out", str(tmp_path / "a"), "--no-plots", "--quiet"]) == 0
    result = json.loads((tmp_path / "a" / "correlate.json").read_text())
    assert set(result["metrics"]) == {"m"}  # the input column is no metric
    assert result["resampling"]["item"]["design"] == "inputs"
    assert result["resampling"]["system"]["resampled"].startswith("systems resampled with replacement, and inputs")
    records = [{"scores": {"m": (i % 5) + i % 3}, "kept": {"human": i % 5, "context": f"c{i // 4}"}} for i in range(40)]
    (tmp_path / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert main(["correlate", str(tmp_path / "scores.jsonl"), "--input-column", "context", "--item-resampling",
                 "inputs", "--out", str(tmp_path / "b"), "--no-plots", "--quiet"]) == 0
    by_field = json.loads((tmp_path / "b" / "correlate.json").read_text())
    assert by_field["metrics"]["m"]["item"] == result["metrics"]["m"]["item"]
    capsys.readouterr()
    assert main(["correlate", str(tmp_path / "in.csv"), "--out", str(tmp_path / "c"), "--no-plots"]) == 2
    assert "column 'context' holds 'c0', not a number" in capsys.readouterr().err  # unnamed, a metric
    (tmp_path / "plain.csv").write_text("\n".join(row.rsplit(",", 2)[0] for row in rows) + "\n", encoding="utf-8")
    assert main(["correlate", str(tmp_path / "plain.csv"), "--item-resampling", "inputs", "--out",
                 str(tmp_path / "c"), "--no-plots"]) == 2
    assert "--item-resampling inputs needs each item's input: name its column" in capsys.readouterr().err
    assert main(["correlate", str(tmp_path / "in.csv"), "--input-column", "ctx", "--out", str(tmp_path / "c")]) == 2
    assert "no input column 'ctx'" in capsys.readouterr().err
    (tmp_path / "blank.csv").write_text("human,m,context\n1,2,c1\n2,3,\n3,3,c2\n", encoding="utf-8")
    assert main(["correlate", str(tmp_path / "blank.csv"), "--input-column", "context", "--out",
                 str(tmp_path / "c")]) == 2
    assert "blank.csv:3: no input in column 'context'" in capsys.readouterr().err
    assert main(["correlate", str(tmp_path / "scores.jsonl"), "--input-column", "topic", "--out",
                 str(tmp_path / "c")]) == 2
    assert "no input in kept 'topic'" in capsys.readouterr().err
    (tmp_path / "body.json").write_text(json.dumps({"human": [1, 2, 3], "scores": {"m": [1, 2, 4]}}), encoding="utf-8")
    assert main(["correlate", str(tmp_path / "body.json"), "--input-column", "context", "--out",
                 str(tmp_path / "c")]) == 2
    assert "read as json, the file takes no --input-column (a /correlate body names its own" in capsys.readouterr().err
    # every option a format does not read is refused, not ignored without a word
    assert main(["correlate", str(tmp_path / "body.json"), "--human", "h", "--system", "bot", "--out",
                 str(tmp_path / "c")]) == 2
    assert "the file takes no --human, --system (" in capsys.readouterr().err
    assert main(["correlate", str(tmp_path / "in.csv"), "--aspect", "overall", "--out", str(tmp_path / "c")]) == 2
    assert "read as csv, the file takes no --aspect (they name columns)" in capsys.readouterr().err


def test_the_report_says_what_scored_each_metric_and_marks_training_items(tmp_path: Path) -> None:
    """A model's training items were one sentence without the model's name, its rows and comparisons unmarked;
    versions and options did not reach the report, nor the input it was computed from, nor the system means."""
    records = [{"line": i + 1, "system": f"s{i % 4}", "scores": {"a": i % 5 + (i % 3) / 10, "b": (i * 7) % 11},
                "versions": {"a": "1.0", "b": "2.0"}, "options": {"b": {"reference_free": True}},
                "kept": {"human": i % 5}, **({"trained": ["a"]} if i < 12 else {})} for i in range(40)]
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert main(["correlate", str(tmp_path / "s.jsonl"), "--out", str(tmp_path / "o"), "--no-plots", "--quiet",
                 "--resamples", "100"]) == 0
    result = json.loads((tmp_path / "o" / "correlate.json").read_text())
    assert result["input"] | {"sha256": "-"} == {
        "file": str(tmp_path / "s.jsonl"), "sha256": "-", "format": "scores", "trained": {"a": 12},
        "models": {"a": {"version": "1.0"}, "b": {"version": "2.0", "options": {"reference_free": True}}}}
    assert result["input_notes"].startswith("of the 40 records kept, 12 are a's training items")
    assert set(result["systems"]["means"]) == {"s0", "s1", "s2", "s3"}
    markdown = (tmp_path / "o" / "correlate.md").read_text()
    assert 'Scored by: a 1.0; b 2.0 with options {"reference_free": true}' in markdown
    rows = [line for line in markdown.splitlines() if line.startswith("| a |") or line.startswith("| b |")]
    assert rows and all(("12 of 40 items are a's training items" in row) == row.startswith("| a |") for row in rows)
    assert "Tests, item level:" in markdown and "Tests, system level:" in markdown
    assert "### System means" in markdown


def test_human_eval_writes_ranking_and_significance_plots(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    rows = ["rater,system,item,fun,robotic"]
    for r in range(4):
        for system, level in (("A", 70), ("B", 45), ("qc", 10)):
            for i in range(3):
                rows.append(f"w{r},{system},w{r}{system}{i},{max(0.0, level + rng.normal(0, 5)):.1f},{100 - level:.1f}")
    (tmp_path / "ratings.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "he"
    code = main(["human-eval", str(tmp_path / "ratings.csv"), "--reverse", "robotic", "--qc-system", "qc",
                 "--out", str(out)])
    assert code == 0
    result = json.loads((out / "human_eval.json").read_text())
    assert [s["system"] for s in result["systems"]] == ["A", "B"]
    assert len(result["raters"]["passed"]) == 4
    assert result["dialscore"] == VERSION and (out / "human_eval.md").read_text().startswith(f"dialscore {VERSION}\n")
    assert (out / "ranking.png").read_bytes().startswith(PNG)
    assert (out / "significance.png").read_bytes().startswith(PNG)
    assert (out / "significance_holm.png").read_bytes().startswith(PNG)
    assert not (out / "rater_agreement.png").exists()  # only with --rater-pairs
    text = (out / "human_eval.md").read_text()
    assert "One-sided rank-sum p (row better than column), uncorrected" in text and "Holm-adjusted" in text


def test_anonymise_replaces_every_rater_id(tmp_path: Path) -> None:
    rows = ["rater,system,item,fun"] + [f"worker{r}secret,{s},{r}{s}{i},{v + i + r}"
                                        for r in range(3) for s, v in (("A", 60), ("qc", 5)) for i in range(4)]
    (tmp_path / "ratings.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "anon"
    assert main(["human-eval", str(tmp_path / "ratings.csv"), "--qc-system", "qc", "--anonymise", "--no-plots",
                 "--out", str(out)]) == 0
    text = (out / "human_eval.json").read_text() + (out / "human_eval.md").read_text()
    assert "secret" not in text
    result = json.loads((out / "human_eval.json").read_text())
    assert all(r.startswith("r-") and len(r) == 10 for r in result["raters"]["passed"] + list(result["raters"]["p"]))


def test_a_bad_setting_is_one_line_and_not_blamed_on_the_file(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "c.csv").write_text("human,m\n1,1\n2,3\n3,2\n4,4\n", encoding="utf-8")
    (tmp_path / "c.json").write_text(json.dumps({"human": [1, 2, 3, 4], "scores": {"m": [1, 3, 2, 4]}}), encoding="utf-8")
    monkeypatch.setenv("DIALSCORE_MAX_ITEMS", "abc")
    for name in ("c.csv", "c.json"):  # the CSV printed a traceback; the JSON blamed the file
        assert main(["correlate", str(tmp_path / name), "--out", str(tmp_path / "o"), "--no-plots"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: DIALSCORE_MAX_ITEMS") and "Traceback" not in err and name not in err, err


def test_nan_is_refused_as_not_finite_where_it_was_called_too_large(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "nan.json").write_text('{"human": [1, 2, NaN, 4], "scores": {"m": [1, 2, 3, 4]}}', encoding="utf-8")
    assert main(["correlate", str(tmp_path / "nan.json"), "--out", str(tmp_path / "o"), "--no-plots"]) == 2
    assert "human.2: A number too large for a double (it reads as infinity), or NaN" in capsys.readouterr().err
    # a NaN in a field no analysis reads is no reason to refuse the file (Python's json writes NaN)
    entries = [{"annotations": {"overall": [h], "interesting": [float("nan")]}, "scores": {"m": h % 3}}
               for h in range(1, 9)]
    (tmp_path / "dstc.json").write_text(json.dumps(entries), encoding="utf-8")
    assert main(["correlate", str(tmp_path / "dstc.json"), "--format", "dstc", "--out", str(tmp_path / "d"),
                 "--no-plots", "--quiet"]) == 0
    (tmp_path / "ok.json").write_text('{"human": [1, 2, 3, 4], "scores": {"m": [1, 2, 4, 3]}}', encoding="utf-8")
    for option in (["--confidence", "nan"], ["--confidence", "inf"]):
        with pytest.raises(SystemExit) as stopped:
            main(["correlate", str(tmp_path / "ok.json"), *option, "--out", str(tmp_path / "o"), "--no-plots"])
        assert stopped.value.code == 2 and "is not a finite number" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stopped:
        main(["human-eval", str(tmp_path / "ok.json"), "--alpha", "nan", "--out", str(tmp_path / "o")])
    assert stopped.value.code == 2 and "'nan' is not a finite number" in capsys.readouterr().err


def test_an_upstream_z_score_that_is_no_number_is_missing_and_a_raw_score_refused(tmp_path: Path) -> None:
    """A "NaN" z-score was read as float('nan') and written into human_eval.json as NaN, which is no JSON."""
    assignment = {"WorkerId": "w1", "AssignmentId": "a1",
                  "data": [{"model": "m", "raw scores": {"fun": 50}, "z scores": {"fun": "NaN", "robotic": 0.5}}]}
    (tmp_path / "pass_x.json").write_text(json.dumps([assignment]), encoding="utf-8")
    assert importers.ji2022_json([tmp_path / "pass_x.json"]).upstream["z"] == {"a1:0": {"fun": None, "robotic": 0.5}}
    assignment["data"][0]["raw scores"]["fun"] = "inf"
    (tmp_path / "pass_x.json").write_text(json.dumps([assignment]), encoding="utf-8")
    with pytest.raises(importers.ImporterError, match="a1:0 raw scores fun: 'inf' is not a finite number"):
        importers.ji2022_json([tmp_path / "pass_x.json"])


def test_bad_input_exits_2_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "short.csv").write_text("human,m\n1,2\n2,3\n", encoding="utf-8")
    assert main(["correlate", str(tmp_path / "short.csv"), "--out", str(tmp_path / "o")]) == 2
    assert "at least 3 items" in capsys.readouterr().err
    assert main(["human-eval", str(tmp_path / "missing.json"), "--out", str(tmp_path / "o")]) == 2


def test_every_field_error_is_printed_one_a_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The HTTP answer keeps one short message with the fields in `details`; the command has no
    details to show, so it prints them all (not only the first)."""
    body = {"human": [1, 2, 3, 4, 5], "scores": {"m1": [1, 2, 3], "m2": [1, 2]}, "systems": ["a", "b"]}
    (tmp_path / "c.json").write_text(json.dumps(body), encoding="utf-8")
    assert main(["correlate", str(tmp_path / "c.json"), "--out", str(tmp_path / "o"), "--no-plots"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "error: 3 invalid fields:" and len(lines) == 4, lines
    assert {line.split(":")[0].strip() for line in lines[1:]} == {"scores.m1", "scores.m2", "systems"}


# --- files the offline tools once mishandled -----------------------------------------------------
def test_a_correlate_body_keeps_its_own_settings_unless_the_command_line_overrides(tmp_path: Path) -> None:
    human = list(range(12))
    body = {"human": human, "scores": {"m": [h + (i % 3) for i, h in enumerate(human)]},
            "methods": ["kendall"], "resamples": 0, "seed": 7}
    (tmp_path / "body.json").write_text(json.dumps(body), encoding="utf-8")
    assert main(["correlate", str(tmp_path / "body.json"), "--out", str(tmp_path / "a"), "--no-plots"]) == 0
    item = json.loads((tmp_path / "a" / "correlate.json").read_text())["metrics"]["m"]["item"]
    assert set(item) == {"kendall"} and item["kendall"]["ci"] is None  # resamples 0, as the body says
    assert main(["correlate", str(tmp_path / "body.json"), "--methods", "pearson", "--out", str(tmp_path / "b"),
                 "--no-plots"]) == 0
    assert set(json.loads((tmp_path / "b" / "correlate.json").read_text())["metrics"]["m"]["item"]) == {"pearson"}


def test_bad_files_and_options_are_exit_2_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "in.tsv").write_text("human\tm\n1\t2\n2\t1\n3\t3\n4\t5\n", encoding="utf-8")
    assert main(["correlate", str(tmp_path / "in.tsv"), "--out", str(tmp_path / "t"), "--no-plots"]) == 0  # tabs
    cases = [
        ["correlate", str(tmp_path / "in.tsv"), "--human", "nosuch"],
        ["correlate", str(tmp_path / "in.tsv"), "--resamples", "10000000"],
    ]
    (tmp_path / "he.json").write_text(json.dumps({"ratings": "nope"}), encoding="utf-8")
    cases.append(["human-eval", str(tmp_path / "he.json")])
    rows = ["rater,system,item,fun"] + [f"w{r},{s},{r}{s}{i},{50 + i}" for r in range(2) for s in "AB" for i in range(3)]
    (tmp_path / "ratings.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    cases.append(["human-eval", str(tmp_path / "ratings.csv"), "--rater-pairs"])
    (tmp_path / "latin1.csv").write_bytes("human,m\n1,caf\xe9\n".encode("latin-1"))
    cases.append(["correlate", str(tmp_path / "latin1.csv")])
    for argv in cases:
        assert main([*argv, "--out", str(tmp_path / "x"), "--no-plots"]) == 2, argv
        assert capsys.readouterr().err.startswith("error:"), argv


def test_a_reverse_criterion_no_rating_scores_is_warned_of_as_over_http(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture) -> None:
    """The command answers what POST /human-eval answers: the report, with a warning naming the entry."""
    rows = ["rater,system,item,fun"] + [f"w{r},{s},{r}{s}{i},{50 + i}" for r in range(2) for s in "AB" for i in range(3)]
    (tmp_path / "ratings.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    code = main(["human-eval", str(tmp_path / "ratings.csv"), "--reverse", "funn", "--out", str(tmp_path / "o"),
                 "--no-plots"])
    assert code == 0
    result = json.loads((tmp_path / "o" / "human_eval.json").read_text(encoding="utf-8"))
    assert result["reversed"] == [] and "'funn'" in result["warnings"][0]
    out, err = capsys.readouterr()
    assert "**Warning:** `reverse` names 'funn'" in out and "warning: `reverse` names 'funn'" in err


GOOD_CORRELATE = {"human": [1, 2, 3, 4, 5], "scores": {"m": [1, 3, 2, 5, 4]}}
GOOD_RATINGS = [{"rater": f"w{r}", "system": s, "item": f"{r}{s}{i}", "scores": {"fun": 50 + i + r}}
                for r in range(2) for s in "AB" for i in range(3)]


@pytest.mark.parametrize("body", [
    {**GOOD_CORRELATE, "confidence": "x"}, {**GOOD_CORRELATE, "confidence": None}, {**GOOD_CORRELATE, "seed": -1},
    {**GOOD_CORRELATE, "seed": "x"}, {**GOOD_CORRELATE, "human": ["a", 2, 3, 4, 5]},
    {**GOOD_CORRELATE, "human": [[1, "a"], 2, 3, 4, 5]}, {**GOOD_CORRELATE, "scores": {"m": 5}},
    {**GOOD_CORRELATE, "scores": {"m": ["x", 1, 2, 3, 4]}}, {**GOOD_CORRELATE, "scores": {"m": [[1, 2]] * 5}},
    {**GOOD_CORRELATE, "systems": 5}, {**GOOD_CORRELATE, "methods": [[1]]},
    {**GOOD_CORRELATE, "scores": {"\ud800": [1, 3, 2, 5, 4]}},
], ids=lambda body: json.dumps(body)[:60])
def test_a_correlate_body_is_held_to_the_http_schema(tmp_path: Path, capsys: pytest.CaptureFixture, body) -> None:
    """Each of these was a traceback (exit 1), one after a partial report."""
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    assert main(["correlate", str(path), "--out", str(tmp_path / "o"), "--no-plots"]) == 2
    assert capsys.readouterr().err.startswith("error:")
    assert not (tmp_path / "o" / "correlate.json").exists()


@pytest.mark.parametrize("body", [
    {"ratings": GOOD_RATINGS, "alpha": "x"}, {"ratings": GOOD_RATINGS, "reverse": "fun"},
    {"ratings": [{**GOOD_RATINGS[0], "scores": [1, 2]}, *GOOD_RATINGS[1:]]},
    {"ratings": GOOD_RATINGS, "x": 1, "scale": [0, "a"]},
], ids=lambda body: json.dumps(body)[-60:])
def test_a_human_eval_body_is_held_to_the_http_schema(tmp_path: Path, capsys: pytest.CaptureFixture, body) -> None:
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    assert main(["human-eval", str(path), "--out", str(tmp_path / "o"), "--no-plots"]) == 2
    assert capsys.readouterr().err.startswith("error:")


def test_odd_files_are_messages_not_tracebacks(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"human": ' + "[" * 100_000 + "]" * 100_000 + ', "scores": {}}', encoding="utf-8")
    big = tmp_path / "big.csv"
    big.write_text("human,m\n1," + "9" * 200_000 + "\n", encoding="utf-8")
    (tmp_path / "ok.json").write_text(json.dumps(GOOD_CORRELATE), encoding="utf-8")
    (tmp_path / "fail_1.json").write_text(json.dumps({"x": 1}), encoding="utf-8")
    rows = ["rater,system,item,fun"] + [f"{r['rater']},{r['system']},{r['item']},{r['scores']['fun']}"
                                        for r in GOOD_RATINGS]
    (tmp_path / "ratings.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    for argv in (["correlate", str(deep)], ["correlate", str(big)], ["correlate", str(tmp_path / "ok.json"),
                                                                      "--seed", "-1"],
                 ["human-eval", str(tmp_path / "ratings.csv"), "--upstream", str(tmp_path / "fail_1.json")]):
        assert main([*argv, "--out", str(tmp_path / "x"), "--no-plots"]) == 2, argv
        assert capsys.readouterr().err.startswith("error:"), argv
    # A row nobody rated is named, not refused as NaN the file does not hold; nor is one of two columns.
    (tmp_path / "unrated.csv").write_text("human,m\n1,1\n2,3\n,2\n4,5\n", encoding="utf-8")
    (tmp_path / "unrated2.csv").write_text("human_a,human_b,m\n1,,1\n2,3,3\n,,2\n4,4,5\n", encoding="utf-8")
    for name in ("unrated.csv", "unrated2.csv"):
        assert main(["correlate", str(tmp_path / name), "--out", str(tmp_path / "u"), "--no-plots"]) == 2
        assert f"{name}:4: no human rating in human" in capsys.readouterr().err
    # A repeated column is named, in either kind of file
    (tmp_path / "twice.csv").write_text("human,m,m\n1,1,2\n2,3,1\n3,2,2\n", encoding="utf-8")
    (tmp_path / "twice_he.csv").write_text("rater,system,item,fun,fun\nw,a,i,1,2\n", encoding="utf-8")
    for command, name in (("correlate", "twice.csv"), ("human-eval", "twice_he.csv")):
        assert main([command, str(tmp_path / name), "--out", str(tmp_path / "t2"), "--no-plots"]) == 2
        assert "appears more than once in the header" in capsys.readouterr().err
    # A detected format is named in the message, not 'auto'
    (tmp_path / "latin.csv").write_bytes(b"human,m\n1,\xe9\n")
    assert main(["correlate", str(tmp_path / "latin.csv"), "--out", str(tmp_path / "l"), "--no-plots"]) == 2
    assert "latin.csv:2: not UTF-8 (byte 0xe9); save the file as UTF-8" in capsys.readouterr().err
    # A spreadsheet's UTF-8 byte-order mark is not part of the first column's name.
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbfhuman,m\n1,1\n2,3\n3,2\n4,5\n")
    assert main(["correlate", str(tmp_path / "bom.csv"), "--out", str(tmp_path / "b"), "--no-plots"]) == 0


def test_human_eval_without_quality_control_does_not_claim_raters_passed_it(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture) -> None:
    rows = ["rater,system,item,fun"] + [f"w{r},{s},{r}{s}{i},{50 + 10 * (s == 'A') + i + r}"
                                        for r in range(3) for s in "AB" for i in range(3)]
    (tmp_path / "ratings.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert main(["human-eval", str(tmp_path / "ratings.csv"), "--out", str(tmp_path / "o"), "--no-plots"]) == 0
    out = capsys.readouterr().out
    assert "no quality-control system was given" in out and "passed quality control" not in out


def test_names_are_plain_text_in_the_plots_not_maths(tmp_path: Path) -> None:
    """A metric named "cost $_a_b$" stopped the plots with matplotlib's ParseFatalException."""
    from service.analysis.plots import ranking_plot

    path = ranking_plot(["cost $_a_b$", r"$\frac{$"], [0.2, 0.3], [[0.1, 0.3], [0.2, 0.4]], tmp_path / "r.png",
                        "r", "$^^$")
    assert path.read_bytes().startswith(PNG)


def test_a_ranking_plot_draws_an_interval_that_misses_its_point(tmp_path: Path) -> None:
    from service.analysis.plots import ranking_plot

    path = ranking_plot(["length", "bleu4"], [-0.947, 0.3], [[-0.942, 0.693], [0.1, 0.5]], tmp_path / "r.png",
                        "Pearson r", "system level")  # a percentile interval need not contain r
    assert path.read_bytes().startswith(PNG)


def test_a_plots_title_says_what_n_counts_why_it_has_no_bars_and_is_never_cut_off(tmp_path: Path,
                                                                                    monkeypatch) -> None:
    """The training-items line ran past the 650-pixel figure on both sides ("...the report says how" then
    nothing): titles are wrapped, over the figure rather than the axes (which long names push right).
    Without a bootstrap the points stood bare, as if exact."""
    import matplotlib.figure

    from service.analysis.plots import TITLE_WIDTH, correlate_plots
    from service.stats import correlate

    titles: list[str] = []
    original = matplotlib.figure.Figure.suptitle
    monkeypatch.setattr(matplotlib.figure.Figure, "suptitle", lambda fig, text, *a, **k: (
        titles.append(text), original(fig, text, *a, **k))[1])
    result = correlate([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], {"m": [1.0, 3.0, 2.0, 5.0, 4.0, 6.0]})
    result["input"] = {"trained": {"m": 2}}
    correlate_plots(result, tmp_path)
    assert titles and all(len(line) <= TITLE_WIDTH for title in titles for line in title.split("\n"))
    assert all(t.startswith("item level, n = 6 items\nno bars: too few items") for t in titles), titles
    assert all("report says how many)" in t.replace("\n", " ") for t in titles)


def test_plots_without_matplotlib_fail_first_with_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    """The serving venv has no matplotlib: the command says so before it writes anything."""
    (tmp_path / "body.json").write_text(json.dumps(GOOD_CORRELATE), encoding="utf-8")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import now raises ImportError
    assert main(["correlate", str(tmp_path / "body.json"), "--out", str(tmp_path / "r")]) == 2
    assert "--no-plots" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
    assert main(["correlate", str(tmp_path / "body.json"), "--out", str(tmp_path / "r"), "--no-plots"]) == 0


def test_a_plot_with_nothing_to_show_is_left_out_with_a_line_and_no_stale_file(tmp_path: Path,
                                                                                capsys: pytest.CaptureFixture) -> None:
    """Every rater giving one score used to draw an empty heatmap (and matplotlib warnings on stderr),
    and a constant human column three empty ranking plots; a rerun into the same folder would leave
    the last run's pictures beside this run's report."""
    out = tmp_path / "out"
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"human": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
                                "scores": {"a": [1, 3, 2, 4, 6, 5, 7, 9, 8, 10]}}), encoding="utf-8")
    assert main(["correlate", str(good), "--out", str(out)]) == 0
    assert (out / "correlate_item_pearson.png").exists()
    constant = tmp_path / "constant.json"
    constant.write_text(json.dumps({"human": [3] * 10, "scores": {"a": list(range(10))}}), encoding="utf-8")
    capsys.readouterr()
    assert main(["correlate", str(constant), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "no correlate_item_pearson.png: every pearson correlation at the item level is undefined" in err
    assert "Warning" not in err and not list(out.glob("*.png"))

    example = json.loads((Path(__file__).resolve().parents[2] / "docs/examples/human-eval.json").read_text())
    he_out = tmp_path / "he"
    (tmp_path / "he.json").write_text(json.dumps(example), encoding="utf-8")
    assert main(["human-eval", str(tmp_path / "he.json"), "--out", str(he_out)]) == 0
    assert (he_out / "ranking.png").exists() and (he_out / "significance.png").exists()
    for rating in example["ratings"]:
        rating["scores"] = {criterion: 50 for criterion in rating["scores"]}
    (tmp_path / "flat.json").write_text(json.dumps(example), encoding="utf-8")
    capsys.readouterr()
    assert main(["human-eval", str(tmp_path / "flat.json"), "--out", str(he_out)]) == 0
    err = capsys.readouterr().err
    assert "no ranking.png" in err and "no significance.png: fewer than two systems" in err
    assert "no significance_holm.png: fewer than two systems" in err
    assert "Warning" not in err and not list(he_out.glob("*.png"))


def test_every_picture_beside_the_report_is_this_runs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A rerun drawing fewer plots (another method, no systems, no --rater-pairs) removes the last run's."""
    out = tmp_path / "out"
    body = {"human": [1, 2, 3, 4, 5, 6, 7, 8], "scores": {"a": [1, 3, 2, 4, 6, 5, 8, 7]},
            "systems": ["x", "x", "y", "y", "z", "z", "w", "w"]}
    (tmp_path / "full.json").write_text(json.dumps(body), encoding="utf-8")
    assert main(["correlate", str(tmp_path / "full.json"), "--out", str(out)]) == 0
    assert (out / "correlate_system_kendall.png").exists()
    del body["systems"]
    (tmp_path / "less.json").write_text(json.dumps({**body, "methods": ["pearson"]}), encoding="utf-8")
    assert main(["correlate", str(tmp_path / "less.json"), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.glob("*.png")) == ["correlate_item_pearson.png"]

    example = json.loads((Path(__file__).resolve().parents[2] / "docs/examples/human-eval.json").read_text())
    for rating in example["ratings"]:
        rating["item"] = f"{rating['rater']}:{rating['item'][-1]}"  # Ji et al.'s assignment:k, for --rater-pairs
    (tmp_path / "he.json").write_text(json.dumps(example), encoding="utf-8")
    he_out = tmp_path / "he"
    assert main(["human-eval", str(tmp_path / "he.json"), "--rater-pairs", "--out", str(he_out)]) == 0
    assert (he_out / "rater_agreement.png").exists()
    assert main(["human-eval", str(tmp_path / "he.json"), "--out", str(he_out)]) == 0
    assert not (he_out / "rater_agreement.png").exists()
    for rating in example["ratings"]:
        rating["scores"] = {criterion: 50 for criterion in rating["scores"]}
    (tmp_path / "flat.json").write_text(json.dumps(example), encoding="utf-8")
    capsys.readouterr()
    assert main(["human-eval", str(tmp_path / "flat.json"), "--rater-pairs", "--out", str(he_out)]) == 0
    err = capsys.readouterr().err
    assert "no rater_agreement.png: no pair of raters of the same systems" in err
    assert "Warning" not in err and not list(he_out.glob("*.png"))


def test_no_plots_leaves_no_picture_of_an_earlier_run(tmp_path: Path) -> None:
    """--no-plots must still clean up: the last run's pictures would stay beside a report of other data."""
    out = tmp_path / "out"
    (tmp_path / "c.json").write_text(json.dumps(GOOD_CORRELATE), encoding="utf-8")
    assert main(["correlate", str(tmp_path / "c.json"), "--out", str(out)]) == 0
    assert list(out.glob("correlate_*.png"))
    assert main(["correlate", str(tmp_path / "c.json"), "--out", str(out), "--no-plots"]) == 0
    assert not list(out.glob("*.png"))
    example = Path(__file__).resolve().parents[2] / "docs/examples/human-eval.json"
    assert main(["human-eval", str(example), "--out", str(out)]) == 0
    assert (out / "ranking.png").exists()
    assert main(["human-eval", str(example), "--out", str(out), "--no-plots"]) == 0
    assert not list(out.glob("*.png"))


def test_csv_mistakes_are_named_by_line_and_column(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """CSV mistakes that were reported as another problem, or not at all."""
    cases = {
        "empty.csv": ("", "the file is empty"),
        "extra.csv": ("system,human,m\na,1,2\nb,2,3,9\na,3,1\n", "extra.csv:3: 4 field(s), the header has 3"),
        "short.csv": ("system,human,m\na,1,2\nb,4\n", "short.csv:3: 2 field(s), the header has 3"),
        "idcol.csv": ("item,human,m\nx1,1,2\nx2,2,3\n",
                      "idcol.csv:2: column 'item' holds 'x1', not a number (it is read as a metric's score"),
        "nan.csv": ("human,m\n1,2\n2,NaN\n", "nan.csv:3: column 'm' holds 'NaN': give a finite number"),
        "blanksys.csv": ("system,human,m\na,1,2\n,2,3\nb,3,1\n", "blanksys.csv:3: no system in column 'system'"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        assert main(["correlate", str(tmp_path / name), "--out", str(tmp_path / "x"), "--no-plots"]) == 2, name
        assert message in capsys.readouterr().err, name
    # A spreadsheet's semicolons are read, and --system names another column.
    rows = ["sys;rating;m1"] + [f"s{i % 3};{i};{i * 2 % 7}" for i in range(12)]
    (tmp_path / "semi.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "semi"
    assert main(["correlate", str(tmp_path / "semi.csv"), "--human", "rating", "--system", "sys", "--out", str(out),
                 "--no-plots"]) == 0
    result = json.loads((out / "correlate.json").read_text())
    assert list(result["metrics"]) == ["m1"] and result["systems"]["labels"] == ["s0", "s1", "s2"]
    # --id-column sets an item id column apart from the metrics.
    rows = ["item,human,m"] + [f"x{i},{i},{i * 2 % 7}" for i in range(12)]
    (tmp_path / "ids.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert main(["correlate", str(tmp_path / "ids.csv"), "--id-column", "item", "--out", str(out), "--no-plots"]) == 0
    assert list(json.loads((out / "correlate.json").read_text())["metrics"]) == ["m"]


def test_an_out_that_is_a_file_is_named(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "c.json").write_text(json.dumps(GOOD_CORRELATE), encoding="utf-8")
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    assert main(["correlate", str(tmp_path / "c.json"), "--out", str(tmp_path / "afile")]) == 2
    assert "is a file; name a folder" in capsys.readouterr().err


def test_spreadsheet_csvs_with_decimal_commas_and_odd_characters_are_read(tmp_path: Path) -> None:
    """A semicolon file whose header holds a comma was split on commas, its
    decimal commas were refused, and cells holding U+2028 or NEL (csv.writer leaves them unquoted)
    were split into rows."""
    rows = ['human;"bleu (0,1)";system'] + [f"{i};0,{i:02d};s{i % 3}" for i in range(1, 11)]
    (tmp_path / "decimal.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "d"
    assert main(["correlate", str(tmp_path / "decimal.csv"), "--out", str(out), "--no-plots"]) == 0
    result = json.loads((out / "correlate.json").read_text())
    assert list(result["metrics"]) == ["bleu (0,1)"] and result["metrics"]["bleu (0,1)"]["item"]["pearson"]["r"] == 1.0
    import csv

    with open(tmp_path / "odd.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["system", "human", "m"])
        for i in range(10):
            writer.writerow([f"sys\u2028{i % 2}" if i % 2 else "plain\x85", i, i % 4])
    assert main(["correlate", str(tmp_path / "odd.csv"), "--out", str(tmp_path / "o"), "--no-plots"]) == 0
    result = json.loads((tmp_path / "o" / "correlate.json").read_text())
    assert result["n"] == 10 and sorted(result["systems"]["labels"]) == ["plain\x85", "sys\u20281"]


def test_the_json_files_hold_floats_that_other_cpus_write_alike(tmp_path: Path) -> None:
    """numpy's sums differ in the last bits between CPUs (make reproduce-human-eval on a Zen 4 moved
    0.41141138213368256 to 0.4114113821336825): the files keep 12 significant digits, which they agree on."""
    from service.analysis.__main__ import _rounded

    assert _rounded({"z": [0.41141138213368256, 1e-300, 3, True]}) == _rounded({"z": [0.4114113821336825, 1e-300, 3,
                                                                                        True]})
    assert _rounded([0.19652830352073056]) == [0.196528303521]
    human = [float(h) for h in range(12)]
    body = {"human": human, "scores": {"m": [h * 1.1 + (i % 3) / 7 for i, h in enumerate(human)]}}
    (tmp_path / "body.json").write_text(json.dumps(body), encoding="utf-8")
    assert main(["correlate", str(tmp_path / "body.json"), "--quiet", "--no-plots", "--resamples", "0",
                 "--out", str(tmp_path / "out")]) == 0

    def floats(value: object) -> list[float]:
        if isinstance(value, dict):
            return [f for item in value.values() for f in floats(item)]
        if isinstance(value, list):
            return [f for item in value for f in floats(item)]
        return [value] if isinstance(value, float) else []

    written = floats(json.loads((tmp_path / "out" / "correlate.json").read_text()))
    assert written and all(float(f"{f:.12g}") == f for f in written)


def test_a_bad_value_in_a_file_is_named_by_the_files_line_as_well_as_its_field(tmp_path: Path,
                                                                               capsys: pytest.CaptureFixture) -> None:
    """'scores.m1.1: Must be within ...' named no file and no line: the field paths are
    the request body's, which the reader of a CSV or a `dialscore score` output never saw."""
    (tmp_path / "big.csv").write_text("human,m1\n1,0.1\n2,1e16\n3,0.3\n", encoding="utf-8")
    assert main(["correlate", str(tmp_path / "big.csv"), "--out", str(tmp_path / "o"), "--no-plots"]) == 2
    assert f"{tmp_path / 'big.csv'}:3 (scores.m1.1): Must be within" in capsys.readouterr().err
    (tmp_path / "dup.csv").write_text("rater,system,item,fun\nw1,A,a1,70\nw1,A,a1,60\nw1,B,b1,50\n",
                                      encoding="utf-8")
    assert main(["human-eval", str(tmp_path / "dup.csv"), "--out", str(tmp_path / "h"), "--no-plots"]) == 2
    assert f"{tmp_path / 'dup.csv'}:3 (ratings.1.item): Rater 'w1' already rated" in capsys.readouterr().err
    (tmp_path / "header.csv").write_text("rater,system,item,fun\n", encoding="utf-8")
    assert main(["human-eval", str(tmp_path / "header.csv"), "--out", str(tmp_path / "e"), "--no-plots"]) == 2
    assert "header.csv: a header (rater, system, item, fun) and no rows under it" in capsys.readouterr().err


def test_a_heatmap_says_what_its_white_cells_are(tmp_path: Path, monkeypatch) -> None:
    """A white cell is no win at the threshold; a grey one no test at all; the figure says so under it
    (tests/analysis/test_plots.py checks the cells' colours)."""
    import matplotlib.figure

    from service.analysis.plots import significance_heatmap

    captions: list[str] = []
    original = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", lambda fig, *a, **k: (
        captions.extend(t.get_text().replace("\n", " ") for t in fig.texts), original(fig, *a, **k))[1])
    for names in (["A", "B"], list("ABCDEFG")):
        significance_heatmap(names, {"A": {"B": 0.01}, "B": {"A": 0.9}}, tmp_path / "h.png")
        assert (tmp_path / "h.png").read_bytes().startswith(PNG)
    assert captions == ["Coloured: p < 0.1. White: p ≥ 0.1, not significant at 0.1. Grey: no test (a system "
                        "against itself, or a pair without a p)."] * 2


def test_plot_format_writes_vector_figures_and_a_rerun_leaves_no_other_formats(tmp_path: Path,
                                                                               capsys: pytest.CaptureFixture) -> None:
    """--plot-format svg pdf writes each plot as both (for papers); the PNG default then removes them, so
    that no earlier run's figure of another format passes for this run's."""
    out = tmp_path / "out"
    (tmp_path / "c.json").write_text(json.dumps(GOOD_CORRELATE), encoding="utf-8")
    assert main(["correlate", str(tmp_path / "c.json"), "--methods", "pearson", "--out", str(out), "--quiet",
                 "--plot-format", "svg", "pdf"]) == 0
    assert sorted(p.name for p in out.glob("correlate_*")) == ["correlate_item_pearson.pdf",
                                                               "correlate_item_pearson.svg"]
    assert (out / "correlate_item_pearson.pdf").read_bytes().startswith(b"%PDF")
    assert main(["correlate", str(tmp_path / "c.json"), "--methods", "pearson", "--out", str(out), "--quiet"]) == 0
    assert sorted(p.name for p in out.glob("correlate_*")) == ["correlate_item_pearson.png"]

    example = Path(__file__).resolve().parents[2] / "docs/examples/human-eval.json"
    assert main(["human-eval", str(example), "--out", str(out), "--quiet", "--plot-format", "pdf"]) == 0
    assert {"ranking.pdf", "significance.pdf", "significance_holm.pdf"} <= {p.name for p in out.iterdir()}
    assert [p.name for p in out.glob("*.png")] == ["correlate_item_pearson.png"]  # correlate's, not human-eval's
    assert main(["human-eval", str(example), "--out", str(out), "--quiet", "--no-plots"]) == 0
    assert not list(out.glob("ranking.*")) and not list(out.glob("significance*.*"))
    with pytest.raises(SystemExit):
        main(["correlate", str(tmp_path / "c.json"), "--plot-format", "jpg", "--out", str(out)])
    assert "invalid choice: 'jpg'" in capsys.readouterr().err
