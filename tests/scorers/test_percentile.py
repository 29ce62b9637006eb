"""human_percentile from a model folder's table: mid-ranks, read through the manifest, refused when unusable."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from service.artifacts.manifest import ManifestError, write_manifest
from service.scorers.percentile import FILE, MIN_SCORES, HumanPercentile


def folder_with(tmp_path: Path, scores: list[float]) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / FILE).write_text(json.dumps({"source": "test turns", "n": len(scores), "scores": scores}))
    write_manifest(folder, name="model", version="1", kind="unreferenced", score_range=(1.0, 5.0))
    return folder


def test_a_score_is_the_share_of_the_table_below_it_ties_counted_half(tmp_path: Path):
    from service.artifacts.manifest import read_manifest

    table = HumanPercentile.of(read_manifest(folder_with(tmp_path, [float(v) for v in range(1, 201)][::-1])))
    assert table is not None and table.source == "test turns"
    low, first, middle, between, top = table([0.0, 1.0, 100.0, 100.5, 500.0])
    assert (low, top) == (0.0, 1.0)
    assert first == pytest.approx(0.5 / 200) and middle == pytest.approx(99.5 / 200)
    assert between == pytest.approx(100 / 200)


def test_the_percentiles_of_the_tables_own_distribution_are_uniform(tmp_path: Path):
    from scipy import stats

    from service.artifacts.manifest import read_manifest

    rng = np.random.default_rng(0)
    table = HumanPercentile.of(read_manifest(folder_with(tmp_path, list(rng.normal(3, 1, 2000)))))
    assert stats.kstest(table(list(rng.normal(3, 1, 2000))), "uniform").statistic < 0.05
    assert stats.kstest(table(list(rng.normal(4, 1, 2000))), "uniform").statistic > 0.2


def test_a_folder_without_a_table_has_none_and_a_short_table_is_refused(tmp_path: Path):
    from service.artifacts.manifest import read_manifest

    bare = tmp_path / "bare"
    bare.mkdir()
    assert HumanPercentile.of(write_manifest(bare, name="bare", version="1", kind="unreferenced")) is None
    with pytest.raises(ManifestError, match=FILE):
        HumanPercentile.of(read_manifest(folder_with(tmp_path, [1.0] * (MIN_SCORES - 1))))
