"""The signal scan: every subset that keeps the first signal, ranked by leave-one-set-out on train partitions."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")


def test_the_scan_ranks_a_signal_that_transfers_above_one_that_does_not() -> None:
    """Two groups: `shared` predicts both sets' scores, `local` only one set's (it flips on the other), so a
    fit on one set that leans on it fails on the other; noise helps neither."""
    from training.unref.scan import scan

    rng = np.random.default_rng(0)
    n = 400
    sets = np.array(["dstc7"] * n + ["conture"] * n)
    base, shared, local, noise = (rng.standard_normal(2 * n) for _ in range(4))
    sign = np.where(sets == "dstc7", 1.0, -1.0)
    human = base + shared + 1.5 * sign * local + 0.5 * rng.standard_normal(2 * n)
    X = np.column_stack([base, shared, local, noise])
    found = scan(X, human, sets, np.arange(2 * n), ["base", "shared", "local", "noise"],
                 search={"lam": (10.0,), "target": ("raw",), "weighting": ("set",), "nonneg": (False,),
                         "rank": (0.0,)})
    assert len(found) == 8 and all(chosen[0] == "base" for chosen, _ in found)
    assert "shared" in found[0][0] and "local" not in found[0][0]
    ranked = [chosen for chosen, _ in found]
    assert ranked.index(("base", "shared")) < ranked.index(("base", "shared", "local"))
    assert [t.loso_pearson for _, t in found] == sorted((t.loso_pearson for _, t in found), reverse=True)


def test_with_negatives_a_subset_takes_the_setting_that_orders_each_kind() -> None:
    """`base` predicts the ratings; the bad replies of one kind score high on it, and only `penalty` (zero on
    every rated reply but noise) tells them apart: the subset without it cannot order that kind."""
    from training.unref.scan import Negatives, scan

    rng = np.random.default_rng(1)
    n = 300
    sets = np.array(["dstc7"] * n + ["conture"] * n)
    base = rng.standard_normal(2 * n)
    penalty = np.where(rng.random(2 * n) < 0.05, rng.random(2 * n), 0.0)
    human = base + 0.5 * rng.standard_normal(2 * n)
    X = np.column_stack([base, penalty])
    good = np.column_stack([np.zeros(100), np.zeros(100)])
    bad = np.column_stack([np.r_[np.full(50, -2.0), np.full(50, 1.0)], np.r_[np.zeros(50), np.ones(50)]])
    kinds = ["random"] * 50 + ["near-copy-x3"] * 50
    ranked = scan(X, human, sets, np.arange(2 * n), ["base", "penalty"],
                  search={"lam": (10.0,), "target": ("raw",), "weighting": ("set",), "nonneg": (False,),
                          "rank": (0.0, 1.0)}, negatives=Negatives(good, bad, kinds))
    assert ranked[0][0] == ("base", "penalty")  # first: it orders the negatives, whatever its LOSO
    found = dict(ranked)
    assert found[("base",)].negatives_ordered == 0.0  # the kind a cosine rewards, never ordered without it
    assert found[("base", "penalty")].negatives_ordered >= 0.95 and found[("base", "penalty")].setting.rank == 1.0


@pytest.mark.data
def test_unref_scan_reads_the_recipes_train_partitions_and_prints_every_subset(tmp_path: Path, capsys) -> None:
    from training.unref.scan import main

    assert main(["--signals", "cos_last", "copy_excess", "log_length", "--max-judged", "30",
                 "--cache", str(tmp_path / "cache")]) == 0
    out = capsys.readouterr().out
    assert "60 judged train items of dstc7, conture" in out
    rows = [line for line in out.splitlines() if line.startswith("| cos_last")]
    assert len(rows) == 4
