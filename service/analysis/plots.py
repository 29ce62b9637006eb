"""Plots: metrics or systems ranked with intervals, and a pairwise significance heatmap, as PNG or as
vector SVG or PDF (for papers), each file's format chosen by its suffix.

matplotlib is a dev/analysis dependency (requirements-dev.txt), not a service one, so it is
imported inside the functions; the Agg backend needs no display.
"""
from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

FORMATS = ("png", "svg", "pdf")  # what a plot's suffix may be; the first is the default
# Per format, what savefig is told so that a rerun writes the same bytes: no creation date (PDF, SVG).
_METADATA: dict[str, dict[str, Any]] = {"png": {}, "svg": {"Date": None}, "pdf": {"CreationDate": None}}


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
    # PDF text as TrueType (Type 42), not matplotlib's default Type 3, which paper venues' checks refuse;
    # SVG element ids from a fixed salt rather than a random one, so that reruns write the same file.
    matplotlib.rcParams["pdf.fonttype"] = 42
    matplotlib.rcParams["svg.hashsalt"] = "dialscore"
    import matplotlib.pyplot as plt

    return plt


def plot_format(path: Path) -> str:
    """The format a plot's file name asks for (its suffix), one of FORMATS; anything else is a ValueError
    naming them, never a PNG under another name."""
    fmt = path.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise ValueError(f"{path.name}: a plot is written as {', '.join('.' + f for f in FORMATS)} (its suffix)")
    return fmt


def _save(fig, path: Path) -> Path:
    """The figure in its suffix's format. A PNG is written with a palette of 256 colours (Pillow, which
    matplotlib depends on): these flat-coloured plots need no more, in 40% of the bytes of RGBA."""
    from PIL import Image

    fmt = plot_format(path)
    if fmt != "png":
        fig.savefig(path, dpi=120, format=fmt, metadata=_METADATA[fmt])
        return path
    drawn = io.BytesIO()
    fig.savefig(drawn, dpi=120, format="png")
    drawn.seek(0)
    with Image.open(drawn) as image:
        image.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT).save(path, "PNG", optimize=True)
    return path


def ranking_plot(labels: list[str], values: list[float | None], intervals: list[list[float] | None],
                 path: Path, xlabel: str, title: str, notes: Sequence[str | None] | None = None) -> Path:
    """Horizontal points with error bars, best at the top; undefined values are named in a note below.
    `notes[i]`, where given for a point without an interval, is written where its bar would be (why it
    has none): a bare point would read as exact. The file's format is its suffix (FORMATS)."""
    plot_format(path)
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
    _write_notes(ax, [(y, values[i], notes[i]) for y, i in zip(ys, keep) if notes and notes[i] and not intervals[i]])
    # over the figure, not the axes (which long labels push right), wrapped: no line is cut off
    fig.suptitle("\n".join(textwrap.fill(line, TITLE_WIDTH) for line in title.split("\n")), fontsize=10)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return path


NOTE_WIDTH = 40  # characters a line of a point's note holds: half the figure's width at 7.5 points


def _short(reason: str) -> str:
    """A reason in the two lines a note holds: a long one up to its first aside or colon (the report has it all)."""
    if len(reason) <= 2 * NOTE_WIDTH:
        return reason
    cut = min((at for at in (reason.find(" ("), reason.find(": ")) if at > 0), default=len(reason))
    return reason[:cut] + " (see the report)"


def _write_notes(ax, notes: list[tuple[float, float, str]]) -> None:
    """Each note beside its point, towards the wider side of the axes, so that it stays inside them."""
    if not notes:
        return
    low, high = ax.get_xlim()
    for y, x, text in notes:
        right = x <= (low + high) / 2
        ax.annotate(textwrap.fill(f"no interval: {_short(text)}", NOTE_WIDTH), (x, y), xytext=(8 if right else -8, 0),
                    textcoords="offset points", ha="left" if right else "right", va="center", fontsize=7.5,
                    color="#555555")


NO_TEST = "#d9d9d9"  # a cell without a p (the diagonal, a pair without a test): unlike white, p >= threshold


def significance_heatmap(names: list[str], matrix: dict[str, dict[str, float | None]], path: Path,
                         threshold: float = 0.1, center: float = 0.05, label: str = "p (row > column)",
                         title: str = "") -> Path:
    """Like Ji et al.'s Figure 3: a cell is coloured where the row system beats the column one at
    p < `threshold` (green for small p, yellow towards the threshold), white where p >= `threshold`,
    and grey where there is no p (the diagonal); `label` says which p (uncorrected or adjusted). A
    caption under the figure says so. The file's format is its suffix (FORMATS)."""
    import numpy as np
    from matplotlib.colors import LinearSegmentedColormap, ListedColormap, TwoSlopeNorm

    plot_format(path)
    plt = _pyplot()
    grid = np.full((len(names), len(names)), np.nan)
    untested = np.zeros((len(names), len(names)), dtype=bool)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            p = matrix.get(a, {}).get(b)
            untested[i, j] = p is None
            if p is not None and p < threshold:
                grid[i, j] = p
    cmap = LinearSegmentedColormap.from_list("sig", ["#00A100", "#cccc00"]).with_extremes(bad="white")
    fig, ax = plt.subplots(figsize=(0.55 * len(names) + 2.6, 0.55 * len(names) + 1.8))
    image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=TwoSlopeNorm(center, 0.0, threshold))
    ax.imshow(np.ma.masked_where(~untested, untested.astype(float)), cmap=ListedColormap([NO_TEST]), vmin=0, vmax=1)
    # Names longer than a cell is wide are slanted, or neighbours run together ("Bot 002Bot 004").
    slanted = max(map(len, names)) > 3
    ax.set_xticks(range(len(names)), names, rotation=45 if slanted else 0, ha="right" if slanted else "center",
                  rotation_mode="anchor")
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("column system")
    ax.set_ylabel("row system")
    ax.set_xticks(np.arange(-0.5, len(names)), minor=True)
    ax.set_yticks(np.arange(-0.5, len(names)), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    fig.colorbar(image, ax=ax, ticks=[0.0, center, threshold], shrink=0.85, label=label)
    if title:  # wrapped to this figure's width, as TITLE_WIDTH is to the ranking plot's 6.5 inches
        width = max(24, int(TITLE_WIDTH * fig.get_figwidth() / 6.5))
        fig.suptitle("\n".join(textwrap.fill(line, width) for line in title.split("\n")), fontsize=10)
    caption = (f"Coloured: p < {threshold:g}. White: p ≥ {threshold:g}, not significant at {threshold:g}. "
               "Grey: no test (a system against itself, or a pair without a p).")
    fig.text(0.5, 0.01, textwrap.fill(caption, max(24, int(13 * fig.get_figwidth()))), ha="center", va="bottom",
             fontsize=8)
    fig.tight_layout(rect=(0.0, 0.07 if len(names) > 3 else 0.12, 1.0, 1.0))
    _save(fig, path)
    plt.close(fig)
    return path


class Plots(list):
    """The plots written, and a line for each one left out because it would show nothing; the files
    of a left-out plot are removed, so an earlier run's picture in the same folder cannot pass for
    this run's."""

    def __init__(self) -> None:
        super().__init__()
        self.skipped: list[str] = []

    def skip(self, paths: Path | Sequence[Path], why: str) -> None:
        """`paths`: the plot's file in each format asked for."""
        paths = [paths] if isinstance(paths, Path) else list(paths)
        for path in paths:
            path.unlink(missing_ok=True)
        self.skipped.append(f"no {', '.join(path.name for path in paths)}: {why}")


def named(out: Path, stem: str, formats: Sequence[str]) -> list[Path]:
    """A plot's file in each of `formats` (FORMATS), in that order."""
    return [out / f"{stem}.{fmt}" for fmt in formats]


TITLE_WIDTH = 72  # characters a title line holds across the 6.5-inch figure at 10 points
STATISTIC = {"pearson": "Pearson r", "spearman": "Spearman ρ", "kendall": "Kendall τ-b"}


def _resampled(level: str, summary: dict[str, Any]) -> str:
    """What a level's bootstrap draws, in the few words a title holds (the report gives the whole sentence)."""
    from service.stats.designs import BOTH, BY_INPUTS, INPUTS, ITEMS, SYSTEMS

    design = summary["design"]
    if level == "item":
        return {ITEMS: "items", INPUTS: "inputs, each with its items"}.get(design, design)
    if summary.get("resampled") == BY_INPUTS.get(design) and design != SYSTEMS:
        return {ITEMS: "inputs (systems fixed)", BOTH: "systems and inputs"}[design]
    return {SYSTEMS: "systems (items fixed)", ITEMS: "items within each system (systems fixed)",
            BOTH: "systems, then items within each"}.get(design, design)


def _bars(result: dict[str, Any], level: str) -> str:
    """What the error bars are: the level's percentile bootstrap intervals and what they resample, or why
    there are none (points without bars would read as exact)."""
    summary = result.get("resampling", {}).get(level)
    if not summary:
        return ""
    if summary.get("reason"):
        return f"\nno bars: {summary['reason']}"
    return (f"\nbars: {100 * summary['confidence']:.4g}% percentile bootstrap resampling {_resampled(level, summary)}; "
            f"design {summary['design']}, B = {summary['resamples']}")


def correlate_plots(result: dict[str, Any], out: Path, formats: Sequence[str] = FORMATS[:1]) -> Plots:
    """One ranking plot per level and method: each metric's r with its bootstrap interval, in each of
    `formats` (FORMATS)."""
    paths = Plots()
    levels = ["item"] + (["system"] if "systems" in result else [])
    methods = list(next(iter(result["metrics"].values()))["item"])
    for level in levels:
        said = (result.get("resampling", {}).get(level) or {}).get("reason")
        for method in methods:
            entries = {name: m[level][method] for name, m in result["metrics"].items()}
            files = named(out, f"correlate_{level}_{method}", formats)
            if all(entry["r"] is None for entry in entries.values()):
                paths.skip(files, f"every {method} correlation at the {level} level is undefined (see the report)")
                continue
            ranked = sorted(entries, key=lambda k: -(entries[k]["r"] if entries[k]["r"] is not None else -9))
            trained = (result.get("input") or {}).get("trained") or {}
            labels = [f"{k} †" if trained.get(k) else k for k in ranked]
            marked = "\n† read some of these items in training (not held out; the report says how many)" if any(
                trained.get(k) for k in ranked) else ""
            # a metric's own reason beside its point; the level's, said once in the title, is not repeated
            notes = [entries[k].get("ci_reason") if entries[k].get("ci_reason") != said else None for k in ranked]
            xlabel = (f"{STATISTIC[method]} with the human ratings" if level == "item" else
                      f"{STATISTIC[method]} of the system means with the human means")
            for path in files:
                paths.append(ranking_plot(labels, [entries[k]["r"] for k in ranked],
                                          [entries[k].get("ci") for k in ranked], path, xlabel,
                                          f"{level} level, n = {next(iter(entries.values()))['n']} {level}s"
                                          f"{_bars(result, level)}{marked}", notes))
    return paths


def human_eval_plots(result: dict[str, Any], out: Path, formats: Sequence[str] = FORMATS[:1]) -> Plots:
    """The system ranking by overall z with intervals, and the pairwise significance heatmaps: uncorrected
    (significance, Ji et al.'s Figure 3) and Holm-adjusted (significance_holm), in each of `formats`."""
    systems = [s for s in result["systems"] if s["overall_z"] is not None]
    names = [s["system"] for s in systems]
    paths = Plots()
    if not systems:
        paths.skip(named(out, "ranking", formats), "no system has a score (no rating was kept; see the report)")
    else:
        intervals = result["intervals"]
        for path in named(out, "ranking", formats):
            paths.append(ranking_plot(
                [f"{s['system']} (n = {s['n']})" for s in systems], [s["overall_z"] for s in systems],
                [s.get("overall_z_ci") for s in systems], path,
                "mean z of passed raters (in each rater's standard deviations)",
                f"systems, best first; n: dialogues\nbars: {100 * intervals['confidence']:.4g}% Student-t interval "
                "of the mean per-dialogue z (no resampling)", [s.get("overall_z_ci_reason") for s in systems]))
    family = result.get("significance_tests", {}).get("family")
    for key, label, which in (
            ("significance", "uncorrected p (row > column)", "each test alone, uncorrected"),
            ("significance_holm", "Holm-adjusted p (row > column)",
             f"Holm-adjusted over {family} tests" if family else "Holm-adjusted")):
        files = named(out, key, formats)
        if len(systems) < 2:
            paths.skip(files, "fewer than two systems to compare")
            continue
        title = f"Row system better than column system: one-sided rank-sum p of per-dialogue z, {which}"
        for path in files:
            paths.append(significance_heatmap(names, result[key], path, label=label, title=title))
    return paths


def agreement_histogram(correlations: dict[str, list[float]], path: Path) -> Path:
    """Distribution of Pearson r between pairs of raters, both passed and both failed (Ji et al.'s Figure 2);
    the file's format is its suffix (FORMATS)."""
    plot_format(path)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    bins = [i / 10 for i in range(-10, 11)]
    for label, colour in (("passed", "#1f77b4"), ("failed", "#ff7f0e")):
        values = correlations.get(label, [])
        if values:
            ax.hist(values, bins=bins, alpha=0.6, color=colour, label=f"both {label} ({len(values)} pairs)")
    ax.set_xlim(-1, 1)
    ax.set_xlabel("Pearson r of two raters' per-dialogue mean z over the same systems")
    ax.set_ylabel("pairs of raters")
    ax.legend()
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return path
