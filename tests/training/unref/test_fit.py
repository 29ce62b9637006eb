"""The stacker on data whose answer is known: it recovers the weights, its search reads no held-out set."""
from __future__ import annotations

import numpy as np
import pytest

from training.unref import fit as stacker


def synthetic(seed: int = 0, n: int = 600):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * [1.0, 2.0, 0.5] + [3.0, 0.0, 1.0]
    y = 3.0 + 0.4 * (X[:, 0] - 3.0) + 0.1 * X[:, 1] + rng.normal(scale=0.1, size=n)  # the third signal is noise
    sets = np.array(["a", "b", "c"])[np.arange(n) % 3]
    return X, y, sets


def test_a_light_ridge_recovers_the_weights_on_raw_signals():
    X, y, sets = synthetic()
    model = stacker.fit(X, y, sets, ["x0", "x1", "x2"], stacker.Setting(lam=0.01, rank=0.0))
    np.testing.assert_allclose(model.weight / model.sd, [0.4, 0.1, 0.0], atol=0.02)
    assert np.corrcoef(model(X), y)[0, 1] > 0.95


def test_the_margin_term_orders_negative_samples_a_plain_fit_gets_wrong():
    X, y, sets = synthetic()
    good = np.array([[3.0, 0.0, 0.0]] * 20)
    bad = np.array([[3.0, 0.0, 3.0]] * 20)  # worse only in the signal the ratings call noise
    plain = stacker.fit(X, y, sets, ["x0", "x1", "x2"], stacker.Setting(rank=0.0, lam=1.0))
    ranked = stacker.fit(X, y, sets, ["x0", "x1", "x2"], stacker.Setting(rank=1.0, lam=1.0), good, bad)
    assert (ranked(good) - ranked(bad)).min() > 0.5 > (plain(good) - plain(bad)).max()


def test_leave_one_set_out_scores_each_group_with_a_fit_that_never_saw_it():
    X, y, sets = synthetic()
    groups = np.where(sets == "c", "c", "ab")  # two sets that are one group are left out together
    contexts = np.arange(len(y)) // 3
    trial = stacker.leave_one_set_out(X, y, sets, groups, contexts, ["x0", "x1", "x2"], stacker.Setting(rank=0.0))
    assert set(trial.per_group) == {"ab", "c"} and trial.loso_pearson > 0.9
    assert trial.loso_worst == pytest.approx(min(trial.per_group.values()))


def test_choose_takes_the_best_setting_that_orders_enough_negatives():
    trials = [stacker.Trial(stacker.Setting(lam=lam), r, r, None, {}, ordered)
              for lam, r, ordered in ((10.0, 0.50, 0.90), (100.0, 0.48, 0.97), (1000.0, 0.47, 0.99))]
    assert stacker.choose(trials).setting.lam == 100.0
    assert len(stacker.settings()) == 72


def test_negatives_ordered_is_the_share_of_the_kind_ordered_least_where_kinds_are_named():
    good = np.array([1.0, 1.0, 1.0, 1.0, 1.0])
    bad = np.array([0.0, 0.0, 0.0, 2.0, 0.0])  # the one disorder is in the small kind
    assert stacker.negatives_ordered(good, bad) == pytest.approx(0.8)
    assert stacker.negatives_ordered(good, bad, ["copy", "copy", "copy", "topic-word", "topic-word"]) == 0.5


def test_a_fit_that_scores_every_held_out_item_alike_counts_as_no_correlation():
    rng = np.random.default_rng(2)
    X = np.zeros((60, 1))  # a signal with no variance: the fit is its bias alone
    y = rng.standard_normal(60)
    sets = np.array(["dstc7"] * 30 + ["conture"] * 30)
    trial = stacker.leave_one_set_out(X, y, sets, sets, np.arange(60), ["flat"], stacker.Setting(rank=0.0))
    assert trial.loso_pearson == 0.0 and trial.per_group == {"conture": 0.0, "dstc7": 0.0}
