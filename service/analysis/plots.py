"""PNG plots: metrics or systems ranked with intervals, and a pairwise significance heatmap.

matplotlib is a dev/analysis dependency (requirements-dev.txt), not a service one, so it is
imported inside the functions; the Agg backend needs no display.
"""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any


def missing() -> str | None:
    """Why plots cannot be drawn here, or None: checked before any statistics run, so that a serving venv
    (requirements.txt, no matplotlib) gets one clear line, never a half-written report."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return ("plots need matplotlib, which requirements-dev.txt installs (make venv-dev; after pip install ., "
                "pip install matplotlib==3.11.2); pass --no-plots for the JSON and Markdown report alone")
    return None


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    # Labels are the user's metric and system names, plain text: with maths parsing on, a name such
    # as "cost $_a_b$" stops the plots with matplotlib's ParseFatalException.
    matplotlib.rcParams["text.parse_math"] = False
    import matplotlib.pyplot as plt

    return plt


def ranking_plot(labels: list[str], values: list[float | None], intervals: list[list[float] | None],
                 path: Path, xlabel: str, title: str) -> Path:
    """Horizontal points with error bars, best at the top; undefined values are named in a note below."""
    plt = _pyplot()
    keep = [i for i, v in enumerate(values) if v is not None]
    undefined = [labels[i] for i, v in enumerate(values) if v is None]
    fig, ax = plt.subplots(figsize=(6.5, 0.45 * max(len(keep), 2) + 1.2))
    ys = list(range(len(keep)))[::-1]
    for y, i in zip(ys, keep):
        ci = intervals[i]
        if ci:  # drawn as its own segment: a percentile interval need not contain the point (errorbar refuses)
            ax.hlines(y, ci[0], ci[1], color="#7aa6d6")
            ax.vlines([ci[0], ci[1]], y - 0.12, y + 0.12, color="#7aa6d6")
        ax.plot(values[i], y, "o", color="#1f5fa8")
    ax.set_yticks(ys, [labels[i] for i in keep])
    ax.axvline(0.0, color="#999999", linewidth=0.8)
    ax.set_xlabel(xlabel + (f"\nundefined, not drawn: {', '.join(undefined)}" if undefined else ""))
    # over the figure, not the axes (which long labels push right), wrapped: no line is cut off
    fig.suptitle("\n".join(textwrap.fill(line, TITLE_WIDTH) for line in title.split("\n")), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def significance_heatmap(names: list[str], matrix: dict[str, dict[str, float | None]], path: Path,
                         threshold: float = 0.1, center: float = 0.05, label: str = "p (row > column)") -> Path:
    """Like Ji et al.'s Figure 3: a cell is coloured where the row system beats the column one at
    p < `threshold` (green for small p, yellow towards the threshold) and blank otherwise; `label` says
    which p (uncorrected or adjusted)."""
    import numpy as np
    from matplotlib.colors import LinearSegmentedColormap, TwoSlopeNorm

    plt = _pyplot()
    grid = np.full((len(names), len(names)), np.nan)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            p = matrix.get(a, {}).get(b)
            if p is not None and p <= threshold:
                grid[i, j] = p
    cmap = LinearSegmentedColormap.from_list("sig", ["#00A100", "#cccc00"]).with_extremes(bad="white")
    fig, ax = plt.subplots(figsize=(0.55 * len(names) + 2.2, 0.55 * len(names) + 1.2))
    image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=TwoSlopeNorm(center, 0.0, threshold))
    ax.set_xticks(range(len(names)), names)
    ax.set_yticks(range(len(names)), names)
    ax.set_xticks(np.arange(-0.5, len(names)), minor=True)
    ax.set_yticks(np.arange(-0.5, len(names)), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    fig.colorbar(image, ax=ax, ticks=[0.0, center, threshold], shrink=0.85, label=label)
    blank = f"White: p above {threshold:g}, or no test (the diagonal, or a pair without a p)."
    fig.text(0.5, 0.01, textwrap.fill(blank, max(24, int(13 * fig.get_figwidth()))), ha="center", va="bottom",
             fontsize=8)
    fig.tight_layout(rect=(0.0, 0.06 if len(names) > 3 else 0.1, 1.0, 1.0))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


class Plots(list):
    """The plots written, and a line for each one left out because it would show nothing; the file
    of a left-out plot is removed, so an earlier run's picture in the same folder cannot pass for
    this run's."""

    def __init__(self) -> None:
        super().__init__()
        self.skipped: list[str] = []

    def skip(self, path: Path, why: str) -> None:
        path.unlink(missing_ok=True)
        self.skipped.append(f"no {path.name}: {why}")


TITLE_WIDTH = 72  # characters a title line holds across the 6.5-inch figure at 10 points
STATISTIC = {"pearson": "Pearson r", "spearman": "Spearman ρ", "kendall": "Kendall τ-b"}


def _bars(result: dict[str, Any], level: str) -> str:
    """What the error bars are: the level's percentile bootstrap intervals and what they resample, or why
    there are none (points without bars would read as exact)."""
    summary = result.get("resampling", {}).get(level)
    if not summary:
        return ""
    if summary.get("reason"):
        return f"\nno bars: {summary['reason']}"
    return (f"\nbars: {100 * summary['confidence']:.4g}% percentile bootstrap, B = {summary['resamples']}, "
            f"design {summary['design']}")


def correlate_plots(result: dict[str, Any], out: Path) -> Plots:
    """One ranking plot per level and method: each metric's r with its bootstrap interval."""
    paths = Plots()
    levels = ["item"] + (["system"] if "systems" in result else [])
    methods = list(next(iter(result["metrics"].values()))["item"])
    for level in levels:
        for method in methods:
            entries = {name: m[level][method] for name, m in result["metrics"].items()}
            path = out / f"correlate_{level}_{method}.png"
            if all(entry["r"] is None for entry in entries.values()):
                paths.skip(path, f"every {method} correlation at the {level} level is undefined (see the report)")
                continue
            ranked = sorted(entries, key=lambda k: -(entries[k]["r"] if entries[k]["r"] is not None else -9))
            trained = (result.get("input") or {}).get("trained") or {}
            labels = [f"{k} †" if trained.get(k) else k for k in ranked]
            marked = "\n† read some of these items in training (not held out; the report says how many)" if any(
                trained.get(k) for k in ranked) else ""
            paths.append(ranking_plot(labels, [entries[k]["r"] for k in ranked],
                                      [entries[k].get("ci") for k in ranked],
                                      path, f"{STATISTIC[method]} with humans",
                                      f"{level} level, n = {next(iter(entries.values()))['n']} {level}s"
                                      f"{_bars(result, level)}"
                                      f"{marked}"))
    return paths


def human_eval_plots(result: dict[str, Any], out: Path) -> Plots:
    """The system ranking by overall z with intervals, and the pairwise significance heatmaps: uncorrected
    (significance.png, Ji et al.'s Figure 3) and Holm-adjusted (significance_holm.png)."""
    systems = [s for s in result["systems"] if s["overall_z"] is not None]
    names = [s["system"] for s in systems]
    paths = Plots()
    if not systems:
        paths.skip(out / "ranking.png", "no system has a score (no rating was kept; see the report)")
    else:
        paths.append(ranking_plot(names, [s["overall_z"] for s in systems], [s.get("overall_z_ci") for s in systems],
                                  out / "ranking.png", "mean standardised score (z)",
                                  f"systems, best first\nbars: {100 * result['intervals']['confidence']:.4g}% Student-t "
                                  "interval of the mean"))
    for key, label in (("significance", "uncorrected p (row > column)"),
                       ("significance_holm", "Holm-adjusted p (row > column)")):
        if len(systems) < 2:
            paths.skip(out / f"{key}.png", "fewer than two systems to compare")
        else:
            paths.append(significance_heatmap(names, result[key], out / f"{key}.png", label=label))
    return paths


def agreement_histogram(correlations: dict[str, list[float]], path: Path) -> Path:
    """Distribution of Pearson r between pairs of raters, passed and failed (Ji et al.'s Figure 2)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    bins = [i / 10 for i in range(-10, 11)]
    for label, colour in (("passed", "#1f77b4"), ("failed", "#ff7f0e")):
        values = correlations.get(label, [])
        if values:
            ax.hist(values, bins=bins, alpha=0.6, color=colour, label=f"{label} ({len(values)} pairs)")
    ax.set_xlim(-1, 1)
    ax.set_xlabel("r between two raters of the same systems")
    ax.set_ylabel("pairs of raters")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
