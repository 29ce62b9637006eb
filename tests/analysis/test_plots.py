"""service/analysis/plots.py: what each figure says beside its marks, and its file formats."""
from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import numpy as np
import pytest

from service.analysis.plots import (agreement_histogram, correlate_plots, human_eval_plots, ranking_plot,
                                    significance_heatmap)
from service.stats import correlate
from service.stats.human_eval import assess


@pytest.fixture
def figures(monkeypatch) -> list:
    """Every figure the plots save, as it is when saved."""
    import matplotlib.figure

    saved: list = []
    original = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda fig, *a, **k: (saved.append(fig), original(fig, *a, **k))[1])
    return saved


def _notes(fig) -> list[str]:
    return [text.get_text().replace("\n", " ") for ax in fig.axes for text in ax.texts]


def test_a_system_without_an_interval_says_why_where_its_bar_would_be(tmp_path: Path, figures: list) -> None:
    """A system of one dialogue stood as a bare point among points with bars, its label without n: a
    reader could not tell it from an exact figure."""
    ratings = [{"rater": "r1", "system": "A", "item": f"a{i}", "scores": {"fun": 60 + 7 * i}} for i in range(3)]
    ratings.append({"rater": "r1", "system": "lone", "item": "l0", "scores": {"fun": 50}})
    human_eval_plots(assess(ratings), tmp_path)
    ranking = figures[0]
    assert _notes(ranking) == ["no interval: one dialogue (a t interval needs two)"]
    assert [label.get_text() for label in ranking.axes[0].get_yticklabels()] == ["A (n = 3)", "lone (n = 1)"]
    assert "no resampling" in ranking._suptitle.get_text()


def test_a_metric_without_an_interval_says_why_unless_the_title_does(tmp_path: Path, figures: list) -> None:
    human = [float(i) for i in range(20)]
    result = correlate(human, {"rare": [0.0] * 19 + [1.0], "good": [h + i % 3 for i, h in enumerate(human)]},
                       methods=["pearson"], resamples=200)
    correlate_plots(result, tmp_path)
    assert _notes(figures[0]) == ["no interval: the correlation is undefined in more than 5% of the bootstrap "
                                  "resamples (see the report)"]
    few = correlate(human, {"rare": [0.0] * 19 + [1.0]}, methods=["pearson"], resamples=10)
    figures.clear()
    correlate_plots(few, tmp_path)  # too few resamples for any interval: said once, in the title
    assert _notes(figures[0]) == [] and "no bars: too few resamples" in figures[0]._suptitle.get_text()


def test_titles_say_what_the_bars_resample(tmp_path: Path, figures: list) -> None:
    """'design both' named an option, not what was drawn."""
    human = [float(i % 7) for i in range(40)]
    scores = {"m": [h + (i % 5) / 3 for i, h in enumerate(human)]}
    systems = [f"s{i % 4}" for i in range(40)]
    correlate_plots(correlate(human, scores, systems, ["pearson"], resamples=50), tmp_path)
    titles = [fig._suptitle.get_text().replace("\n", " ") for fig in figures]
    assert "percentile bootstrap resampling items; design items, B = 50" in titles[0]
    assert "resampling systems, then items within each; design both" in titles[1]
    figures.clear()
    inputs = [f"c{i // 4}" for i in range(40)]
    correlate_plots(correlate(human, scores, systems, ["pearson"], resamples=50, inputs=inputs,
                              item_resampling="inputs"), tmp_path)
    titles = [fig._suptitle.get_text().replace("\n", " ") for fig in figures]
    assert "resampling inputs, each with its items; design inputs" in titles[0]
    assert "resampling systems and inputs; design both" in titles[1]
    assert figures[1].axes[0].get_xlabel() == "Pearson r of the system means with the human means"


def _cell_colours(fig, size: int) -> np.ndarray:
    """The RGB of each cell's centre as drawn, [row, column]."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)  # closing the figure took its canvas away
    canvas.draw()
    pixels = np.asarray(canvas.buffer_rgba())[..., :3]
    ax = fig.axes[0]
    out = np.zeros((size, size, 3), dtype=int)
    for i in range(size):
        for j in range(size):
            x, y = ax.transData.transform((j, i))
            out[i, j] = pixels[pixels.shape[0] - int(round(y)), int(round(x))]
    return out


def test_heatmap_white_is_not_significant_and_grey_is_no_test(tmp_path: Path, figures: list) -> None:
    """White stood for both 'p above the threshold' and 'no test' (the diagonal, a pair without a p):
    now white is the one, grey the other, and the caption says which is which."""
    matrix = {"A": {"B": 0.01, "C": 0.5}, "B": {"A": None, "C": 0.2}, "C": {"A": 0.99, "B": 0.07}}
    significance_heatmap(["A", "B", "C"], matrix, tmp_path / "h.png")
    colours = _cell_colours(figures[0], 3)
    white, grey = [255, 255, 255], [0xd9, 0xd9, 0xd9]
    for i, j in ((0, 0), (1, 1), (2, 2), (1, 0)):  # the diagonal, and the pair without a p
        assert colours[i, j].tolist() == grey, (i, j)
    for i, j in ((0, 2), (1, 2), (2, 0)):  # p >= 0.1
        assert colours[i, j].tolist() == white, (i, j)
    for i, j in ((0, 1), (2, 1)):  # p < 0.1: green to yellow, neither white nor grey
        assert colours[i, j][1] > colours[i, j][2] + 100, (i, j)


def test_heatmap_axes_are_named_and_long_names_slanted(tmp_path: Path, figures: list) -> None:
    """Eleven names like 'Bot 002' ran into each other under the columns ('Bot 002Bot 004...')."""
    names = [f"Bot {i:03d}" for i in range(11)]
    significance_heatmap(names, {}, tmp_path / "h.png", title="one-sided rank-sum p")
    ax = figures[0].axes[0]
    assert ax.get_xlabel() == "column system" and ax.get_ylabel() == "row system"
    assert all(label.get_rotation() == 45 for label in ax.get_xticklabels())
    significance_heatmap(["A", "B"], {}, tmp_path / "h.png")
    assert all(label.get_rotation() == 0 for label in figures[1].axes[0].get_xticklabels())


def _draw_all(folder: Path, suffix: str) -> list[Path]:
    folder.mkdir(exist_ok=True)
    return [ranking_plot(["a", "b"], [0.2, 0.3], [[0.1, 0.3], None], folder / f"r.{suffix}", "r", "t", [None, "why"]),
            significance_heatmap(["A", "B"], {"A": {"B": 0.01}, "B": {"A": 0.9}}, folder / f"h.{suffix}"),
            agreement_histogram({"passed": [0.1, 0.5, 0.6], "failed": [-0.2]}, folder / f"a.{suffix}")]


def test_each_plot_is_written_as_vector_svg_or_pdf_by_its_suffix(tmp_path: Path) -> None:
    """Papers want vector figures; the plots were PNG whatever the name. A PDF's text is TrueType (Type 3
    fonts are refused by venues' checks), and a rerun writes the same bytes (no date, no random ids)."""
    for suffix in ("svg", "pdf"):
        for first, second in zip(_draw_all(tmp_path / "one", suffix), _draw_all(tmp_path / "two", suffix)):
            data = first.read_bytes()
            if suffix == "svg":
                assert ElementTree.fromstring(data).tag == "{http://www.w3.org/2000/svg}svg"
            else:
                assert data.startswith(b"%PDF") and b"/CIDFontType2" in data and b"/Type3" not in data
            assert data == second.read_bytes(), first.name


def test_a_png_is_written_with_a_palette_the_same_on_a_rerun(tmp_path: Path) -> None:
    """RGBA PNGs of these flat-coloured plots took 2.5 times the bytes (the committed docs' run among them)."""
    from PIL import Image

    for first, second in zip(_draw_all(tmp_path / "one", "png"), _draw_all(tmp_path / "two", "png")):
        with Image.open(first) as image:
            assert image.mode == "P", first.name
        assert first.read_bytes() == second.read_bytes(), first.name


def test_a_suffix_that_is_no_plot_format_is_refused_before_drawing(tmp_path: Path) -> None:
    for draw in (lambda p: ranking_plot(["a"], [0.2], [None], p, "r", "t"),
                 lambda p: significance_heatmap(["A", "B"], {}, p),
                 lambda p: agreement_histogram({"passed": [0.1]}, p)):
        with pytest.raises(ValueError, match=r"\.png, \.svg, \.pdf"):
            draw(tmp_path / "figure.jpg")
    assert not list(tmp_path.iterdir())
