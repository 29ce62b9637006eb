"""`dialscore score`: a file through several models, per-line scores as /score gives them, per-system means."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from service.cli.score import main

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
    assert score(baseline_store, str(source), "--models", *MODELS, "--output", str(out), "--json") == 0
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
    assert score(baseline_store, str(source), "--models", "length", "bleu4", "--output", str(out)) == 0
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
                     str(tmp_path / f"{name}.out")) == 0
    assert read(tmp_path / "in.csv.out") == read(tmp_path / "in.jsonl.out")
    capsys.readouterr()


def test_set_up_errors_exit_2_and_leave_the_output_as_it_was(baseline_store, tmp_path, capsys) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(i) for i in ITEMS])
    out = tmp_path / "scores.jsonl"
    out.write_text("an earlier run's\n", encoding="utf-8")
    assert score(baseline_store, str(source), "--models", "length", "no-such-model", "--output", str(out)) == 2
    assert "model no-such-model is not available" in capsys.readouterr().err
    assert score(baseline_store, str(tmp_path / "missing.jsonl"), "--models", "length", "--output", str(out)) == 2
    assert "missing.jsonl" in capsys.readouterr().err
    assert out.read_text(encoding="utf-8") == "an earlier run's\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "scores.jsonl"]  # no partial output left
    with pytest.raises(SystemExit) as exited:
        score(baseline_store, str(source), "--models", "length", "--output", str(out), "--options",
              '{"bleu4": {}}')
    assert exited.value.code == 2 and "not among --models" in capsys.readouterr().err
