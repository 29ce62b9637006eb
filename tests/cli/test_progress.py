"""service/cli/progress.py: `dialscore score`'s progress lines."""
from __future__ import annotations

import io
import json

from service.cli.progress import Progress
from service.cli.score import main
from tests.cli.test_score import ITEMS, write_jsonl


def test_a_line_comes_once_the_interval_has_passed() -> None:
    stream = io.StringIO()
    every_batch, never = Progress(0, stream=stream), Progress(3600, stream=io.StringIO())
    for done in (256, 512):
        every_batch(done)
        never(done)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and lines[1].startswith("dialscore score: 512 lines scored in ")
    assert never.stream.getvalue() == ""


def test_score_reports_its_progress_after_each_batch_where_asked(baseline_store, tmp_path, capsys) -> None:
    source = write_jsonl(tmp_path / "in.jsonl", [json.dumps(i) for i in ITEMS * 3])
    out = tmp_path / "scores.jsonl"
    assert main([str(source), "--models", "length", "--output", str(out), "--batch-size", "2", "--progress-every",
                 "0", "--model-store", str(baseline_store)]) == 0
    progress = [line for line in capsys.readouterr().err.splitlines() if "lines scored in" in line]
    total = 3 * len(ITEMS)
    expected = [*range(2, total + 1, 2), *([total] if total % 2 else [])]
    assert [int(line.split()[2].replace(",", "")) for line in progress] == expected
