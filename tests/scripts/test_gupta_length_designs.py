"""scripts/gupta_length_designs.py: the figures docs/api.md quotes for the system-level designs."""
from __future__ import annotations

from pathlib import Path

import pytest

from scripts.gupta_length_designs import system_level


def test_the_designs_give_the_figures_docs_api_quotes(data_dir: Path) -> None:
    got = {label: entry for label, entry in system_level(data_dir)}
    assert {label: round(entry["r"], 2) for label, entry in got.items()} == dict.fromkeys(got, -0.40)
    assert got["items"]["ci"] == pytest.approx([-0.70, -0.30], abs=0.005) and got["items"]["p"] == 3 / 1001
    assert got["systems"]["ci"] == [-1.0, 1.0] and round(got["systems"]["p"], 2) == 0.49
    assert got["both"]["ci"] == pytest.approx([-1.0, 0.70], abs=0.005) and round(got["both"]["p"], 2) == 0.45
    assert got["both + inputs"]["ci"] == [-1.0, 1.0] and round(got["both + inputs"]["p"], 2) == 0.38
    assert [round(entry["p_mc_se"], 3) for entry in got.values()] == [0.002, 0.027, 0.027, 0.025]
