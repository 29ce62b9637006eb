"""service/cli/paired.py and `dialscore score --paired-by`: systems compared on the inputs both answered."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from scipy import stats

from service.cli.intervals import IntervalSettings
from service.cli.paired import compare, compare_systems
from service.stats.significance import holm
from tests.cli.test_score import read, score, write_jsonl
from tests.conftest import copy_store

RNG = np.random.default_rng(7)


def test_a_pair_is_scipys_paired_t_test_over_the_inputs_both_answered() -> None:
    base = RNG.normal(size=30)
    a = {f"i{k}": float(v + 0.3 + RNG.normal(scale=0.5)) for k, v in enumerate(base)}
    b = {f"i{k}": float(v) for k, v in enumerate(base)} | {"only-b": 9.0}
    found = compare(a, b, IntervalSettings(0.9))
    keys = sorted(set(a) & set(b))
    expected = stats.ttest_rel([a[k] for k in keys], [b[k] for k in keys])
    assert found["n"] == 30 and found["delta"] == pytest.approx(np.mean([a[k] - b[k] for k in keys]), abs=1e-12)
    assert found["p"] == pytest.approx(expected.pvalue, rel=1e-9)
    assert found["ci"] == pytest.approx(list(expected.confidence_interval(0.9)), rel=1e-9)
    assert compare(a, b, IntervalSettings(enabled=False))["ci"] is None


def test_a_pair_without_a_test_says_why() -> None:
    assert compare({"x": 1.0}, {"x": 2.0, "y": 3.0}, IntervalSettings())["reason"].startswith("fewer than two")
    steady = compare({"x": 1.0, "y": 2.0}, {"x": 0.5, "y": 1.5}, IntervalSettings())
    assert steady["delta"] == 0.5 and steady["ci"] == [0.5, 0.5] and steady["p"] is None and "never vary" in steady["reason"]
    assert compare({"x": 1.0, "y": 2.0}, {"x": 0.5, "y": 1.5}, IntervalSettings(enabled=False))["ci"] is None


def test_every_pair_of_systems_per_model_with_holm_over_the_models_pairs() -> None:
    scores = {"m": {"s1": {"a": [1.0, 3.0], "b": [2.0], "c": [4.0]}, "s2": {"a": [1.0], "b": [1.5], "c": [2.5]},
                    "s3": {"a": [0.0], "b": [0.2], "c": [0.1], "d": [5.0]}}}
    rows = compare_systems(scores, ["s1", "s2", "s3"], IntervalSettings())["m"]
    assert [(r["a"], r["b"], r["n"]) for r in rows] == [("s1", "s2", 3), ("s1", "s3", 3), ("s2", "s3", 3)]
    assert rows[0]["delta"] == pytest.approx(np.mean([2.0 - 1.0, 2.0 - 1.5, 4.0 - 2.5]))  # s1's "a" averaged
    assert [r["p_holm"] for r in rows] == pytest.approx(holm([r["p"] for r in rows]).tolist())


def test_holm_adjusts_over_the_tested_pairs_only() -> None:
    """A pair whose differences never vary has no p: it has no p_holm, and the others are adjusted over two pairs."""
    scores = {"m": {"s1": {"a": [1.0], "b": [2.0], "c": [3.0]}, "s2": {"a": [0.5], "b": [1.5], "c": [2.5]},
                    "s3": {"a": [0.0], "b": [0.9], "c": [0.4]}}}
    steady, *tested = compare_systems(scores, ["s1", "s2", "s3"], IntervalSettings())["m"]
    assert steady["p"] is None and "p_holm" not in steady and "never vary" in steady["reason"]
    assert [r["p_holm"] for r in tested] == pytest.approx(holm([r["p"] for r in tested]).tolist())


def test_score_compares_systems_matched_by_a_field_in_jsonl_and_csv(tmp_path, capsys) -> None:
    store = copy_store(tmp_path / "store", ("length",))
    replies = {"bot-a": ["a fine long reply to this", "yes indeed it is so", "we went to the lake and swam"],
               "bot-b": ["ok", "yes", "we swam"]}
    lines = [{"id": f"q{k}", "system": system, "context": ["hi"], "response": text}
             for system, texts in replies.items() for k, text in enumerate(texts)]
    lines.append({"id": "q9", "system": "bot-a", "context": ["hi"], "response": "only bot-a answered this"})
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(line) for line in lines])
    out = tmp_path / "scores.jsonl"
    assert score(store, str(source), "--models", "length", "--output", str(out), "--paired-by", "id", "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    [row] = summary["paired"]["pairs"]["length"]
    a, b = [len(t.split()) for t in replies["bot-a"]], [len(t.split()) for t in replies["bot-b"]]
    assert (row["a"], row["b"], row["n"], summary["paired"]["by"]) == ("bot-a", "bot-b", 3, "id")
    assert row["p"] == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-9)
    assert len(read(out)) == 7

    with open(tmp_path / "in.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, ["input", "system", "context", "response"])
        writer.writeheader()
        writer.writerows({"input": line["id"], "system": line["system"], "context": "hi", "response": line["response"]}
                         for line in lines)
    assert score(store, str(tmp_path / "in.csv"), "--models", "length", "--output", str(out),
                 "--paired-by", "input") == 0
    text = capsys.readouterr().out
    assert f"length: bot-a - bot-b = {np.mean(np.subtract(a, b)):.4f} [" in text and "over 3 inputs" in text
    assert "kept" not in read(out)[0]  # read to pair the lines, not copied into the records
    assert score(store, str(source), "--models", "length", "--output", str(out), "--paired-by", "nope") == 0
    assert "no scored line of a system has the field --paired-by nope" in capsys.readouterr().err


@pytest.mark.parametrize(("a", "b"), [
    ({"x": 0.3, "y": 0.5}, {"x": 0.1, "y": 0.3}),  # differences .19999999999999998 and .2: one value, rounded
    ({"x": 0.3, "y": 0.6, "z": 0.9}, {"x": 0.1, "y": 0.4, "z": 0.7}),
])
def test_differences_equal_but_for_rounding_never_vary(a: dict[str, float], b: dict[str, float]) -> None:
    found = compare(a, b, IntervalSettings())
    assert found["p"] is None and "never vary" in found["reason"]
    assert found["ci"] == [found["delta"]] * 2 and found["delta"] == pytest.approx(0.2, abs=1e-15)


def test_a_line_a_model_could_not_score_is_left_out_of_its_pairs_only(tmp_path, capsys) -> None:
    """bleu4 cannot score a line without a reference (null score, --on-invalid skip): that input is not one both
    systems answered for bleu4, and still is for length."""
    store = copy_store(tmp_path / "store", ("length", "bleu4"))
    lines = [{"id": f"q{k}", "system": system, "context": ["hi"], "response": text, "reference": "a long reply"}
             for system, texts in {"bot-a": ["a long reply", "yes it is", "we swam in the lake"],
                                   "bot-b": ["a reply", "yes", "we swam"]}.items() for k, text in enumerate(texts)]
    del lines[-1]["reference"]
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(line) for line in lines])
    out = tmp_path / "scores.jsonl"
    assert score(store, str(source), "--models", "length", "bleu4", "--output", str(out), "--paired-by", "id",
                 "--on-invalid", "skip", "--json") == 0
    pairs = json.loads(capsys.readouterr().out)["paired"]["pairs"]
    assert read(out)[-1]["scores"]["bleu4"] is None
    assert (pairs["length"][0]["n"], pairs["bleu4"][0]["n"]) == (3, 2)
