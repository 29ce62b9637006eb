"""`python -m benchmarks.loadtest` end to end on real gunicorn, every scenario shortened to a second or two."""
from __future__ import annotations

import json

from benchmarks.loadtest.__main__ import SCENARIOS, main
from benchmarks.loadtest.client import OUTCOMES
from benchmarks.loadtest.report import BEGIN

# `length` is the cheapest model /rerank serves; a fixed capacity keeps the open-loop rates low.
SHORT = ["--reuse-server", "--model", "length", "--capacity", "5", "--capacity-seconds", "1", "--clients", "2",
         "--overload-seconds", "1.5", "--recovery-limit", "3", "--healthz-every", "0.2",
         "--idle-connections", "10", "--idle-requests", "3", "--idle-timeout", "2", "--idle-budget", "4",
         "--sigterm-rate", "8", "--sigterm-before", "1", "--sigterm-after", "1", "--sigterm-timeout", "30",
         "--crash-seconds", "1", "--crash-poll", "0.05"]


def test_every_scenario_runs_and_every_request_is_classified(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DIALSCORE_MODELS", "length")
    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\nby hand\n")
    assert main([*SHORT, "--json", str(tmp_path / "out.json"), "--write-docs", str(docs)]) == 0
    out = json.loads((tmp_path / "out.json").read_text())
    results = out["results"]
    assert out["meta"]["scenarios"] == list(SCENARIOS) and out["meta"]["cpu"]["model"]
    assert set(results) == set(SCENARIOS)
    assert results["capacity"]["ok"] > 0 and results["capacity"]["requests_per_s"] > 0
    assert [o["multiplier"] for o in results["overload"]] == [2, 5]
    for o in results["overload"]:
        assert set(o["outcomes"]) == set(OUTCOMES) and sum(o["outcomes"].values()) == o["sent"] > 0
        assert o["outcomes"]["ok"] + o["refused"] > 0 and o["healthz"]["requests"] > 0
        assert o["recovery_s"] is not None and o["metrics"] is not None
    idle = results["idle"]
    assert idle["without"]["requests"] > 0 and idle["connections_opened"] >= 10
    crash = results["crash"]
    assert crash["polls"] > 0 and crash["workers_before"] >= 1
    assert sum(crash["load_outcomes"].values()) == crash["load_sent"]
    sigterm = results["sigterm"]
    assert sum(sigterm["outcomes"].values()) == sigterm["sent"] > 0 and sigterm["sent_after_signal"] > 0
    assert sigterm["outcomes"]["ok"] > 0 and sigterm["master_exit_code"] is not None
    report = capsys.readouterr().out
    assert "| scenario | figure | measured | target | met |" in report and "| sigterm |" in report
    text = docs.read_text()
    assert text.startswith("# Benchmarks\n\nby hand\n") and text.count(BEGIN.split("{")[0]) == 1


def test_with_url_the_signalling_scenarios_are_skipped(capsys):
    assert main(["--url", "http://127.0.0.1:9", "--scenario", "sigterm", "--scenario", "crash"]) == 0
    assert "| sigterm |" not in capsys.readouterr().out
