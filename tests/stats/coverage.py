"""How often a system-level design's 95% intervals cover the population correlation, in simulated runs.

Each run draws `systems` systems from a population whose true quality, as humans and as the metric
see it, is bivariate normal with correlation `rho`, and `items` items per system whose human and
metric scores scatter around the system's with the same correlation (sd `noise`): a system's mean
over its items is then bivariate normal with correlation `rho` too, for any number of items, so
rho is the system-level Pearson correlation of the population of systems and of items, and
6/pi asin(rho/2) and 2/pi asin(rho) its Spearman and Kendall correlations. `slope` > 0 makes the
items shared inputs instead (every system answers the same ones) on which the metric's response
to quality varies (Deutsch, Dror and Roth 2021's setting): a finite set of inputs then moves every
system together, which resampling the systems alone cannot see. `by_inputs` resamples those inputs
(every system's items for a drawn input) instead of items within each system.

`python -m tests.stats.coverage` prints the table docs/api.md quotes.
"""
from __future__ import annotations

import math

import numpy as np

from service.stats import DESIGNS, percentile_interval, system_bootstrap_distributions, system_resamples


def true_correlations(rho: float) -> dict[str, float]:
    """The population's Pearson, Spearman and Kendall correlations of a bivariate normal."""
    return {"pearson": rho, "spearman": 6 / math.pi * math.asin(rho / 2), "kendall": 2 / math.pi * math.asin(rho)}


def simulated_runs(runs: int, systems: int, items: int, rho: float, noise: float, slope: float,
                   seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(human, metric) of shape (runs, systems x items), and each item's system (systems x items)."""
    rng = np.random.default_rng(seed)
    quality = rng.multivariate_normal([0.0, 0.0], [[1.0, rho], [rho, 1.0]], size=(runs, systems, 1))
    scatter = noise * rng.multivariate_normal([0.0, 0.0], [[1.0, rho], [rho, 1.0]], size=(runs, systems, items))
    if slope > 0:  # shared inputs: each input's own slope of the metric on the humans' view of quality
        scatter[..., 1] += slope * rng.normal(size=(runs, 1, items)) * quality[..., 0]
    scores = (quality + scatter).reshape(runs, systems * items, 2)
    return scores[..., 0], scores[..., 1], np.repeat(np.arange(systems), items)


def coverage(design: str, systems: int, methods: list[str], rho: float = 0.6, runs: int = 200, items: int = 10,
             noise: float = 1.0, slope: float = 0.0, resamples: int = 400, seed: int = 0,
             by_inputs: bool = False) -> dict[str, float]:
    """{method: share of runs whose 95% interval under `design` holds the true correlation}."""
    human, metric, groups = simulated_runs(runs, systems, items, rho, noise, slope, seed)
    truth = true_correlations(rho)
    inputs = np.tile(np.arange(items), systems) if by_inputs else None
    covered = dict.fromkeys(methods, 0)
    for run in range(runs):
        draws = system_resamples(design, groups, systems, resamples, seed + run, items if by_inputs else None)
        dist = system_bootstrap_distributions(human[run], {"m": metric[run]}, methods, groups, systems, draws.items,
                                              draws.slots, inputs, draws.slot_seed)
        for method in methods:
            ci = percentile_interval(dist[method]["m"])
            covered[method] += ci is not None and ci[0] <= truth[method] <= ci[1]
    return {method: count / runs for method, count in covered.items()}


def main() -> None:
    methods = ["pearson", "spearman", "kendall"]
    print("| items | systems | design | " + " | ".join(methods) + " |")
    print("|---|---|---|" + "---|" * len(methods))
    for label, slope, by_inputs in (("nested", 0.0, False), ("shared inputs", 1.0, False),
                                    ("shared inputs, resampled as inputs", 1.0, True)):
        for systems in (5, 20):
            for design in DESIGNS:
                shares = coverage(design, systems, methods, slope=slope, by_inputs=by_inputs)
                print(f"| {label} | {systems} | {design} | " + " | ".join(f"{shares[m]:.3f}" for m in methods) + " |",
                      flush=True)


if __name__ == "__main__":
    main()
