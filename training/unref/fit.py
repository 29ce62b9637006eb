"""The stacker: score = bias + sum_j w_j (x_j - mean_j) / sd_j, fitted to the human scores of the judged
train partitions, its settings chosen by leave-one-set-out (no development item is read).

Weighted least squares with a ridge term on the weights (the bias is not shrunk) and, with `rank` > 0, a
margin term on negative samples, rank * mean(relu(margin - (s(good) - s(bad)))^2) (a human reply above a
random, adversarial or degenerate one). `set` weighting gives every training set the same total weight;
`setz` targets standardise each set's scores (the fit is mapped back to 1-5 by least squares); `nonneg`
keeps each weight on the side of its signal's correlation in the training data.
"""
from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass

import numpy as np
from scipy import optimize

from service.stats.correlation import correlation
from training.evaluation.pairwise import MIN_PAIRS, pairwise_agreement

NEGATIVES_FLOOR = 0.95  # a chosen setting orders at least this share of the train negative samples (of each kind)


@dataclass(frozen=True)
class Setting:
    lam: float = 1000.0  # ridge weight (the weights are on z-scores, so one lambda fits every signal)
    target: str = "raw"  # raw 1-5 human scores | setz: each set standardised
    weighting: str = "set"  # item: every item alike | set: every training set alike
    nonneg: bool = False  # weights signed as their signals' training correlations
    rank: float = 1.0  # weight of the margin term on negative samples


SEARCH = {"lam": (10.0, 100.0, 1000.0), "target": ("raw", "setz"), "weighting": ("item", "set"),
          "nonneg": (False, True), "rank": (0.0, 0.3, 1.0)}


def settings(search: dict[str, tuple] = SEARCH) -> list[Setting]:
    """Every combination of the searched values (72 with SEARCH)."""
    keys = list(search)
    return [Setting(**dict(zip(keys, values))) for values in itertools.product(*(search[k] for k in keys))]


@dataclass
class Combination:
    """The fitted stacker over signals `names`: what the served model's config holds."""

    names: list[str]
    mean: np.ndarray
    sd: np.ndarray
    weight: np.ndarray
    bias: float

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return self.bias + ((X - self.mean) / self.sd) @ self.weight


def fit(X: np.ndarray, y: np.ndarray, sets: np.ndarray, names: list[str], setting: Setting,
        good: np.ndarray | None = None, bad: np.ndarray | None = None, margin: float = 1.0) -> Combination:
    """The stacker fitted to (X, y); `good`, `bad`: the negative samples' signals, for the margin term."""
    mean, sd = X.mean(0), X.std(0)
    sd = np.where(sd > 1e-9, sd, 1.0)
    Z = (X - mean) / sd
    t = y.astype(float).copy()
    if setting.target == "setz":
        for s in np.unique(sets):
            m = sets == s
            t[m] = (y[m] - y[m].mean()) / (y[m].std() + 1e-9)
    w = np.ones(len(y))
    if setting.weighting == "set":
        for s in np.unique(sets):
            w[sets == s] = 1.0 / (sets == s).sum()
        w *= len(y) / w.sum()
    z_bar, t_bar = (w[:, None] * Z).sum(0) / w.sum(), (w * t).sum() / w.sum()
    root = np.sqrt(w)
    A, b = (Z - z_bar) * root[:, None], (t - t_bar) * root
    sign = np.sign(((Z - z_bar) * ((t - t_bar) * w)[:, None]).sum(0))
    sign[sign == 0] = 1
    k = len(names)
    start = np.linalg.solve(A.T @ A + setting.lam * np.eye(k), A.T @ b)
    if setting.rank > 0 and good is not None and bad is not None:
        D = (good - bad) / sd

        def objective(beta: np.ndarray) -> tuple[float, np.ndarray]:
            r = A @ beta - b
            slack = np.maximum(0.0, margin - D @ beta)
            value = (r @ r + setting.lam * beta @ beta) / len(b) + setting.rank * (slack @ slack) / len(D)
            grad = 2 * (A.T @ r + setting.lam * beta) / len(b) - 2 * setting.rank * D.T @ slack / len(D)
            return value, grad

        bounds = [(0, None) if s > 0 else (None, 0) for s in sign] if setting.nonneg else None
        if setting.nonneg:
            start = np.where(sign > 0, np.maximum(start, 0), np.minimum(start, 0))
        beta = optimize.minimize(objective, start, jac=True, method="L-BFGS-B", bounds=bounds).x
    elif setting.nonneg:  # the ridge term as extra rows of a non-negative least squares on oriented signals
        beta, _ = optimize.nnls(np.vstack([A * sign, np.sqrt(setting.lam) * np.eye(k)]),
                                np.concatenate([b, np.zeros(k)]))
        beta = beta * sign
    else:
        beta = start
    model = Combination(list(names), mean, sd, beta, float(t_bar - z_bar @ beta))
    if setting.target == "setz":  # back to the 1-5 scale, the order kept (a positive slope)
        slope, intercept = np.polyfit(model(X), y, 1, w=root)
        slope = max(float(slope), 1e-3)
        model = Combination(model.names, mean, sd, beta * slope, model.bias * slope + float(intercept))
    return model


def pearson(y: np.ndarray, x: np.ndarray) -> float | None:
    return correlation(y, x)["r"]


@dataclass
class Trial:
    """One setting's leave-one-set-out figures: mean over the left-out groups of their train partitions'
    Pearson (and pairwise agreement where a set has MIN_PAIRS pairs), and the whole fit's share of
    train negative samples ordered."""

    setting: Setting
    loso_pearson: float
    loso_worst: float
    loso_pairwise: float | None
    per_group: dict[str, float | None]
    negatives_ordered: float | None = None

    def as_dict(self) -> dict:
        return {**asdict(self.setting), "loso_pearson": round(self.loso_pearson, 4),
                "loso_worst": round(self.loso_worst, 4),
                "loso_pairwise": None if self.loso_pairwise is None else round(self.loso_pairwise, 4),
                "negatives_ordered": None if self.negatives_ordered is None else round(self.negatives_ordered, 4),
                "per_group": {g: None if v is None else round(v, 4) for g, v in self.per_group.items()}}


def leave_one_set_out(X: np.ndarray, y: np.ndarray, sets: np.ndarray, groups: np.ndarray, contexts: np.ndarray,
                      names: list[str], setting: Setting, good: np.ndarray | None = None,
                      bad: np.ndarray | None = None) -> Trial:
    """Fit without each group, score its train partitions: sets that are the same items are one group."""
    per_group: dict[str, float | None] = {}
    per_pair: list[float] = []
    for group in sorted(set(groups)):
        held = groups == group
        model = fit(X[~held], y[~held], sets[~held], names, setting, good, bad)
        predicted = model(X[held])
        rs = []
        for s in np.unique(sets[held]):
            m = sets[held] == s
            r = pearson(y[held][m], predicted[m])
            if r is None and m.sum() >= 3 and np.ptp(y[held][m]) > 0:
                r = 0.0  # a fit whose weights all went to zero scores every item alike: no order at all
            if r is not None:
                rs.append(r)
            share, pairs = pairwise_agreement(contexts[held][m], y[held][m], predicted[m])
            if share is not None and pairs >= MIN_PAIRS:
                per_pair.append(share)
        per_group[group] = float(np.mean(rs)) if rs else None
    found = [v for v in per_group.values() if v is not None]
    return Trial(setting, float(np.mean(found)), float(np.min(found)),
                 float(np.mean(per_pair)) if per_pair else None, per_group)


def negatives_ordered(good: np.ndarray, bad: np.ndarray, kinds: list[str] | None = None) -> float:
    """The share of negative samples scored below their good reply: the lowest share over the kinds where
    the samples name theirs, so that a rare kind a cosine rewards cannot hide behind many easy ones."""
    below = good > bad
    if not kinds:
        return float(below.mean())
    labels = np.asarray(kinds)
    return min(float(below[labels == kind].mean()) for kind in dict.fromkeys(kinds))


def figure(value: float | None) -> str:
    """A share to three decimals, or "none" where it was not measured."""
    return "none" if value is None else f"{value:.3f}"


def choose(trials: list[Trial]) -> Trial:
    """The highest leave-one-set-out Pearson among the settings that order NEGATIVES_FLOOR of the train
    negative samples (all of them where none does, or none was measured); of tied ones, the most default."""
    eligible = [t for t in trials if t.negatives_ordered is None or t.negatives_ordered >= NEGATIVES_FLOOR]
    default = Setting()

    def rank(trial: Trial) -> tuple[float, int]:
        # Ties (to 4 decimals) go to the setting nearest the default: with two groups each fold fits one set,
        # where set weighting and per-set targets change nothing the held-out Pearson sees, so they tie exactly.
        alike = sum(getattr(trial.setting, key) == getattr(default, key) for key in ("target", "weighting", "nonneg"))
        return round(trial.loso_pearson, 4), alike

    return max(eligible or trials, key=rank)
