"""The device script, run on the CPU on a few hundred real pairs: it learns, keeps each fold's rows out of
that fold's model, uses the teacher column of the same fold, and writes what the device may return."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.training.rerank.conftest import HELD
from training.rerank.train import ALL, PART_BYTES, Pack, main, rated_rows

pytestmark = pytest.mark.data


def test_every_model_trains_and_the_results_say_so(tiny_run: tuple[Path, dict]) -> None:
    out, results = tiny_run
    assert [m["model"] for m in results["models"]] == [ALL, HELD] and not results["skipped"]
    for model in results["models"]:
        assert model["teacher_column"] == model["model"]  # the teacher fitted without the same group
        loss = model["epochs"][0]["loss"]
        assert all(math.isfinite(v) for v in loss.values()) and loss["listwise"] > 0 and loss["teacher"] > 0
    dev = results["models"][0]["epochs"][0]["dev"]
    assert dev["per_set"]
    assert all(math.isfinite(s["pearson"]) for s in dev["per_set"].values() if s["pearson"] is not None)


def test_a_folds_rows_stay_out_of_its_model_and_are_scored_by_it(tiny_run: tuple[Path, dict], tiny_pack: Path) -> None:
    _, results = tiny_run
    pack = Pack.load(tiny_pack)
    folds = pack.fold_of_rows()
    assert not (folds[rated_rows(pack, HELD)] == HELD).any()
    assert (folds[rated_rows(pack, ALL)] == HELD).any()
    held = results["out_of_fold"][HELD]
    assert held["rows"] and (folds[held["rows"]] == HELD).all() and pack.arrays["j_train"][held["rows"]].all()
    assert len(held["scores"]) == len(held["rows"]) and np.isfinite(held["scores"]).all()


def test_what_comes_back_fits_the_devices_return_limits(tiny_run: tuple[Path, dict]) -> None:
    out, results = tiny_run
    files = sorted(p for p in out.iterdir())
    assert len(files) <= 8 and all(p.stat().st_size <= PART_BYTES for p in files)
    assert sum(p.stat().st_size for p in files) <= 64 * 2**20
    assert results["weights"]["parts"] and all((out / p).is_file() for p in results["weights"]["parts"])


def test_an_unknown_group_is_a_usage_error(tiny_pack: Path, tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--pack", str(tiny_pack), "--out", str(tmp_path), "--models", "all,nosuch"])
    assert stopped.value.code == 2 and "nosuch" in capsys.readouterr().err
