"""`python -m service.analysis`: files in, JSON + Markdown + PNG out, exit 2 with a message on bad input."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from service.analysis.__main__ import main

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
    assert "### Item level" in capsys.readouterr().out
    assert not (out / "correlate_item_spearman.png").exists()
    for level in ("item", "system"):
        for method in ("pearson", "kendall"):
            assert (out / f"correlate_{level}_{method}.png").read_bytes().startswith(PNG)


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
    assert (out / "ranking.png").read_bytes().startswith(PNG)
    assert (out / "significance.png").read_bytes().startswith(PNG)
    assert not (out / "rater_agreement.png").exists()  # only with --rater-pairs
    assert "One-sided rank-sum" in (out / "human_eval.md").read_text()


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


def test_bad_input_exits_2_with_a_message(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "short.csv").write_text("human,m\n1,2\n2,3\n", encoding="utf-8")
    assert main(["correlate", str(tmp_path / "short.csv"), "--out", str(tmp_path / "o")]) == 2
    assert "at least 3 items" in capsys.readouterr().err
    assert main(["human-eval", str(tmp_path / "missing.json"), "--out", str(tmp_path / "o")]) == 2
