"""How often a system-level design's 95% intervals cover the population correlation, in simulated runs.

Each run draws `systems` systems from a population whose true quality, as humans and as the metric
see it, is bivariate normal with correlation `rho`, and `items` items per system whose human and
metric scores scatter around the system's (sd `noise`) in one of two ways:

- correlated item scatter (the default): the scatter has correlation `rho` too, so a system's mean
  over its items is bivariate normal with correlation `rho` for any number of items;
- independent item scatter (`independent`): the human's and the metric's scatter are independent, as
  where people and a metric each misjudge an item in their own way; a system's mean then has
  correlation rho / (1 + noise^2 / items), which shrinks as items get fewer.

Either way the truth is the population correlation of the systems' means over `items` items, which
the observed system-level r estimates (system_correlation), with 6/pi asin(r/2) and 2/pi asin(r) as
its Spearman and Kendall values. `slope` > 0 makes the items shared inputs instead (every system
answers the same ones) on which the metric's response to quality varies (Deutsch, Dror and Roth
2021's setting): a finite set of inputs then moves every system together, which resampling the
systems alone cannot see. `by_inputs` resamples those inputs (every system's items for a drawn input)
instead of items within each system.

`python -m tests.stats.coverage` prints the tables docs/api.md quotes (about 15 minutes on 2 cores; the
alpha table alone, `alpha_coverage`, about 4).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import stats as sps

from service.stats import DESIGNS, percentile_interval, system_bootstrap_distributions, system_resamples

METHODS = ["pearson", "spearman", "kendall"]
_ESTIMATES = {"pearson": lambda x, y: sps.pearsonr(x, y).statistic,
              "spearman": lambda x, y: sps.spearmanr(x, y).statistic,
              "kendall": lambda x, y: sps.kendalltau(x, y).statistic}


def true_correlations(rho: float) -> dict[str, float]:
    """The population's Pearson, Spearman and Kendall correlations of a bivariate normal."""
    return {"pearson": rho, "spearman": 6 / math.pi * math.asin(rho / 2), "kendall": 2 / math.pi * math.asin(rho)}


def system_correlation(rho: float, noise: float, items: int, independent: bool) -> float:
    """Pearson correlation of the population's system means over `items` items (module docstring)."""
    return rho / (1 + noise ** 2 / items) if independent else rho


def simulated_runs(runs: int, systems: int, items: int, rho: float, noise: float, slope: float,
                   seed: int, independent: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(human, metric) of shape (runs, systems x items), and each item's system (systems x items)."""
    rng = np.random.default_rng(seed)
    quality = rng.multivariate_normal([0.0, 0.0], [[1.0, rho], [rho, 1.0]], size=(runs, systems, 1))
    item_rho = 0.0 if independent else rho
    scatter = noise * rng.multivariate_normal([0.0, 0.0], [[1.0, item_rho], [item_rho, 1.0]],
                                              size=(runs, systems, items))
    if slope > 0:  # shared inputs: each input's own slope of the metric on the humans' view of quality
        scatter[..., 1] += slope * rng.normal(size=(runs, 1, items)) * quality[..., 0]
    scores = (quality + scatter).reshape(runs, systems * items, 2)
    return scores[..., 0], scores[..., 1], np.repeat(np.arange(systems), items)


class Placement(NamedTuple):
    """Per method: the share of runs whose interval held the truth, the share whose interval held the
    run's own estimate r, and the mean of (interval midpoint - r) over the runs."""

    covered: dict[str, float]
    holds_estimate: dict[str, float]
    midpoint_offset: dict[str, float]


def placement(design: str, systems: int, methods: list[str], rho: float = 0.6, runs: int = 200, items: int = 10,
              noise: float = 1.0, slope: float = 0.0, resamples: int = 400, seed: int = 0,
              by_inputs: bool = False, independent: bool = False) -> Placement:
    """Where `design`'s 95% intervals sit: around the truth, around the estimate, and how far off centre."""
    human, metric, groups = simulated_runs(runs, systems, items, rho, noise, slope, seed, independent)
    truth = true_correlations(system_correlation(rho, noise, items, independent))
    inputs = np.tile(np.arange(items), systems) if by_inputs else None
    covered, holds, offset = (dict.fromkeys(methods, 0.0) for _ in range(3))
    for run in range(runs):
        draws = system_resamples(design, groups, systems, resamples, seed + run, items if by_inputs else None)
        dist = system_bootstrap_distributions(human[run], {"m": metric[run]}, methods, groups, systems, draws.items,
                                              draws.slots, inputs, draws.slot_seed)
        means = [values.reshape(systems, items).mean(axis=1) for values in (human[run], metric[run])]
        for method in methods:
            ci = percentile_interval(dist[method]["m"])
            r = _ESTIMATES[method](*means)
            covered[method] += ci is not None and ci[0] <= truth[method] <= ci[1]
            holds[method] += ci is not None and ci[0] <= r <= ci[1]
            offset[method] += np.nan if ci is None else (ci[0] + ci[1]) / 2 - r
    return Placement(*({method: float(total) / runs for method, total in tally.items()}
                       for tally in (covered, holds, offset)))


def coverage(design: str, systems: int, methods: list[str], **settings) -> dict[str, float]:
    """{method: share of runs whose 95% interval under `design` holds the true correlation}; `settings`
    as placement's."""
    return placement(design, systems, methods, **settings).covered


def _shares(shares: dict[str, float]) -> str:
    return " / ".join(f"{shares[m]:.3f}".replace("0.", ".").replace("1.000", "1") for m in METHODS)


def main() -> None:
    print("Correlated item scatter (rho .6, 10 items a system, item sd 1): covered, Pearson / Spearman / Kendall\n")
    print("| items | systems | " + " | ".join(f"`{d}`" for d in DESIGNS) + " |")
    print("|---|---|" + "---|" * len(DESIGNS))
    for label, slope, by_inputs in (("nested", 0.0, False), ("shared inputs", 1.0, False),
                                    ("shared inputs, `inputs` given", 1.0, True)):
        for systems in (5, 20):
            cells = [_shares(coverage(d, systems, METHODS, slope=slope, by_inputs=by_inputs)) for d in DESIGNS]
            print(f"| {label} | {systems} | " + " | ".join(cells) + " |", flush=True)
    print("\nIndependent item scatter (item sd 1, nested): covered, Pearson / Spearman / Kendall; then, Pearson, "
          "the share of intervals that hold the run's own r and the mean of (midpoint - r)\n")
    print("| rho | items | systems | truth (Pearson) | " + " | ".join(f"`{d}`" for d in DESIGNS) + " | "
          + " | ".join(f"`{d}` holds r; midpoint - r" for d in DESIGNS) + " |")
    print("|---|---|---|---|" + "---|" * 2 * len(DESIGNS))
    for rho, items, systems in ((0.6, 10, 5), (0.6, 10, 20), (0.6, 3, 20), (0.6, 3, 100), (0.8, 3, 30), (0.8, 3, 100)):
        found = [placement(d, systems, METHODS, rho=rho, items=items, independent=True) for d in DESIGNS]
        truth = system_correlation(rho, 1.0, items, True)
        print(f"| {rho:g} | {items} | {systems} | {truth:.3f} | " + " | ".join(_shares(p.covered) for p in found)
              + " | " + " | ".join(f"{p.holds_estimate['pearson']:.3f}; {p.midpoint_offset['pearson']:+.3f}"
                                   for p in found) + " |", flush=True)

    null_rejections()
    item_level_coverage()
    alpha_coverage()


def null_rejections() -> None:
    """Where people and the metric are unrelated (rho 0): the share of runs whose 95% interval leaves out
    0, which is the share whose p (the interval's dual) falls under .05, at best .05."""
    print("\nNo correlation (rho 0, independent item scatter, item sd 1, nested): share of runs with p < .05 "
          "(interval without 0), Pearson / Spearman / Kendall\n")
    print("| items | systems | " + " | ".join(f"`{d}`" for d in DESIGNS) + " |")
    print("|---|---|" + "---|" * len(DESIGNS))
    for items, systems in ((3, 10), (3, 30), (10, 30), (3, 100)):
        found = [placement(d, systems, METHODS, rho=0.0, items=items, independent=True, runs=400) for d in DESIGNS]
        print(f"| {items} | {systems} | " + " | ".join(_shares({m: 1 - p.covered[m] for m in METHODS}) for p in found)
              + " |", flush=True)


def item_level_coverage(rho: float = 0.5, runs: int = 1_000) -> None:
    """How often /correlate's item-level 95% intervals (B 1,000) hold the population correlation of normal
    samples of 10, 30 and 100 items."""
    from service.stats import correlate

    truth = true_correlations(rho)
    print(f"\nItem level, normal samples of rho {rho:g}: covered, Pearson / Spearman / Kendall\n")
    for n in (10, 30, 100):
        rng, held = np.random.default_rng(1), dict.fromkeys(METHODS, 0)
        for run in range(runs):
            xy = rng.multivariate_normal([0.0, 0.0], [[1.0, rho], [rho, 1.0]], size=n)
            found = correlate(xy[:, 0].tolist(), {"m": xy[:, 1].tolist()}, resamples=1_000, seed=run)
            for method in METHODS:
                ci = found["metrics"]["m"]["item"][method]["ci"]
                held[method] += ci is not None and ci[0] <= truth[method] <= ci[1]
        print(f"{n} items: " + _shares({m: held[m] / runs for m in METHODS}), flush=True)


def alpha_coverage(noise: float = 0.5, raters: int = 3, runs: int = 400) -> None:
    """How often /correlate's 95% intervals for Krippendorff's alpha (B 1,000, items resampled) hold the
    population alpha: items of true quality N(0, 1), each rated by `raters` with N(0, noise^2) errors,
    as numbers and rounded to a 5-point scale. The population alpha is that of 100,000 such items."""
    from service.stats import krippendorff_alpha_interval, krippendorff_alpha_ordinal
    from service.stats.agreement import bootstrap_alphas, pairable_units

    def ratings(rng: np.random.Generator, items: int, likert: bool) -> list[np.ndarray]:
        values = rng.normal(size=(items, 1)) + rng.normal(scale=noise, size=(items, raters))
        return list(np.clip(np.round(values + 3), 1, 5) if likert else values)

    print(f"\nKrippendorff's alpha, {raters} raters an item, rater sd {noise:g}: covered, interval / ordinal\n")
    for likert in (False, True):
        big = ratings(np.random.default_rng(0), 100_000, likert)
        truth = {"interval": krippendorff_alpha_interval(big), "ordinal": krippendorff_alpha_ordinal(big)}
        for n in (20, 50, 200):
            rng, held = np.random.default_rng(1), dict.fromkeys(truth, 0)
            for run in range(runs):
                units = pairable_units(ratings(rng, n, likert))
                draws = np.random.default_rng(run).integers(0, n, size=(1_000, n))
                for name in truth:
                    ci = percentile_interval(bootstrap_alphas(units, draws, name == "ordinal"))
                    held[name] += ci is not None and ci[0] <= truth[name] <= ci[1]
            print(f"{'5-point' if likert else 'numbers'} (alpha {truth['interval']:.3f} / {truth['ordinal']:.3f}), "
                  f"{n} items: " + " / ".join(f"{held[m] / runs:.3f}" for m in truth), flush=True)


if __name__ == "__main__":
    main()
