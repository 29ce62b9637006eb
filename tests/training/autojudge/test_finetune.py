"""The fine-tuning measurement on a handful of real judged items: the encoder learns, every set is measured."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from training.autojudge.finetune import FineTuneConfig, TunedAutoJudge, fine_tune, last_turn_rows, main  # noqa: E402

pytestmark = pytest.mark.data  # every test here reads the real data


def test_fine_tuning_moves_the_encoder_and_measures_every_set() -> None:
    torch.set_num_threads(1)
    rows = last_turn_rows("train", limit=6)
    model, history = fine_tune(FineTuneConfig(epochs=1, batch=6), rows, rows, log=lambda *_: None)
    assert len(history) == 2 and all(set(h) == set(rows) for h in history)
    assert all(math.isfinite(r) for r in history[1].values())
    untouched = TunedAutoJudge(FineTuneConfig.max_length)
    moved = [not torch.equal(a, b) for a, b in zip(model.encoder.parameters(), untouched.encoder.parameters())]
    assert sum(moved) > len(moved) // 2


def test_results_are_lines_minilm_report_tables(tmp_path: Path) -> None:
    from training.evaluation.minilm_report import tried_table

    results = tmp_path / "tried.jsonl"
    assert main(["--epochs", "1", "--max-judged", "6", "--threads", "1", "--results", str(results)]) == 0
    line = json.loads(results.read_text())
    assert line["epochs"] == 1 and line["dev_pearson"]
    assert "fine-tuned" in tried_table([results])
