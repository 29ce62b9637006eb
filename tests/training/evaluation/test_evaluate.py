"""`evaluate`: correlations against scipy, its own section of docs/evaluation.md, and a real run."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from service.scorers.base import ScoreBatch
from service.text import word_count
from tests.conftest import MODEL_STORE, copy_store
from training.data.judgements import JudgedItem, load_set
from training.evaluation import synthetic
from training.evaluation.evaluate import BEGIN, END, correlate, main, score_items, system_level, write_section


def test_correlate_matches_scipy_and_refuses_constant_input():
    rng = np.random.default_rng(0)
    human = rng.normal(size=50)
    metric = human + rng.normal(size=50)
    r, p, rho, _ = correlate(human, metric)
    assert r == pytest.approx(stats.pearsonr(human, metric).statistic)
    assert p == pytest.approx(stats.pearsonr(human, metric).pvalue)
    assert rho == pytest.approx(stats.spearmanr(human, metric).statistic)
    assert correlate(human, np.ones(50)) == (None, None, None, None)


def test_system_level_correlates_per_system_means():
    human = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    metric = np.array([0.1, 0.3, 0.2, 0.6, 0.9, 0.8])
    systems = ["a", "a", "b", "b", "c", "c"]
    r, rho, n = system_level(human, metric, systems)
    assert n == 3
    assert r == pytest.approx(stats.pearsonr([1.5, 3.5, 5.5], [0.2, 0.4, 0.85]).statistic)
    assert rho == pytest.approx(1.0)
    assert system_level(human, metric, ["a"] * 3 + ["b"] * 3)[:2] == (None, None)


def test_pearsons_interval_draws_contexts_whole():
    """Replies to one context come together: five copies of each of 30 items are 30 draws, not 150, and
    their interval is as wide as the 30 items' own; an item bootstrap would narrow it by about sqrt(5)."""
    from service.stats import correlate as correlate_body
    from training.evaluation.evaluate import pearson_interval

    rng = np.random.default_rng(1)
    human = rng.normal(size=30)
    metric = human + 2 * rng.normal(size=30)
    alone = pearson_interval(human, metric, [str(i) for i in range(30)])
    copied = pearson_interval(np.repeat(human, 5), np.repeat(metric, 5), [str(i) for i in np.repeat(range(30), 5)])
    items = correlate_body(np.repeat(human, 5).tolist(), {"m": np.repeat(metric, 5).tolist()}, methods=["pearson"],
                           resamples=1000, seed=0)["metrics"]["m"]["item"]["pearson"]["ci"]
    assert alone[0] < stats.pearsonr(human, metric).statistic < alone[1]
    assert copied[1] - copied[0] == pytest.approx(alone[1] - alone[0], rel=0.25)
    assert items[1] - items[0] < 0.6 * (copied[1] - copied[0])
    assert pearson_interval(human[:2], metric[:2], ["a", "b"]) is None  # too few items for r


def test_write_section_rewrites_only_its_own_markers(tmp_path):
    doc = tmp_path / "evaluation.md"
    doc.write_text(f"# Evaluation\n\nintro\n\n{BEGIN}\nold\n{END}\n\n<!-- mh:begin -->\nkeep me\n<!-- mh:end -->\n")
    write_section(doc, f"{BEGIN}\nnew table\n{END}\n")
    text = doc.read_text()
    assert "new table" in text and "old" not in text
    assert "intro" in text and "keep me" in text and text.count(BEGIN) == 1
    fresh = tmp_path / "fresh.md"
    write_section(fresh, f"{BEGIN}\nx\n{END}\n")
    assert BEGIN in fresh.read_text()


@pytest.mark.data
def test_evaluate_runs_served_models_on_real_dev_sets(tmp_path):
    store = copy_store(tmp_path / "store", ("bleu4", "length"))
    out, plots = tmp_path / "evaluation.md", tmp_path / "plots"
    sets = ["holistic_eval", "dailydialog_gupta_multiref"]
    assert main(["--store", str(store), "--models", "bleu4", "length", "--sets", *sets,
                 "--out", str(out), "--plots", str(plots), "--no-recover-references"]) == 0
    text = out.read_text()
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    rows: dict[str, str] = {}
    for line in text.splitlines():  # the item-level table comes first
        if line.startswith("| "):
            rows.setdefault(line.split("|")[1].strip(), line)
    # bleu4 needs a reference; holistic_eval has none (recovery is off here)
    assert rows["bleu4"].split("|")[2].strip() == "n/a"
    # the length cell is the real correlation on that dev split
    items = load_set("holistic_eval", "dev")
    lengths = [word_count(i.response) for i in items]
    expected = stats.pearsonr([i.score for i in items], lengths).statistic
    assert f"{expected:.3f}" in rows["length"].split("|")[2]
    assert "**" in text  # the best per set is bold
    assert "System level" in text  # gupta names five systems
    # the bar of the issue is counted for every model but the baselines themselves
    assert "beats both BLEU-4 and ROUGE-L" not in text  # rouge-l was not run here
    for name in sets:
        assert (plots / f"evaluate-{name}.png").stat().st_size > 1000
    # the synthetic check of the one reference-free model, in its own section
    check = text[text.index(synthetic.BEGIN):text.index(synthetic.END)]
    row = next(line for line in check.splitlines() if line.startswith("| length |"))
    assert 0.5 < float(row.split("|")[2]) < 1 and "| model | mean | random (" in check
    assert text.index(END) < text.index(synthetic.BEGIN) and check.count("\n| ") == 2  # the header, one row
    # two sets of nine: a partial table, which must not replace the card's (the committed full run)
    from service.artifacts.manifest import read_manifest

    assert "dstc7" in read_manifest(store / "length").card["evaluate"]["item_level"]


def test_cards_get_the_figures_of_a_full_run(tmp_path):
    from service.artifacts.manifest import read_manifest
    from training.evaluation.evaluate import Result
    from training.evaluation.evaluate import write_cards

    store = copy_store(tmp_path / "store", ("bleu4", "length"))
    results = {"holistic_eval": {"length": Result("length", "holistic_eval", 72, pearson=-0.54, spearman=-0.56),
                                 "bleu4": Result("bleu4", "holistic_eval", 0, skipped="needs a reference")},
               "dstc7": {"length": Result("length", "dstc7", 3400, pearson=0.104, spearman=0.098,
                                          pearson_ci=[0.0712345, 0.1361]),
                         "bleu4": Result("bleu4", "dstc7", 3290, pearson=0.076, spearman=0.057)}}
    check = synthetic.Agreement(0.6, {"random": 0.55, "hard": 0.65}, {"dailydialog": 0.6})
    assert write_cards(store, results, ["bleu4", "length"], "python -m training evaluate", "dev",
                       checks={"length": check}) == ["bleu4", "length"]
    card = read_manifest(store / "length").card["evaluate"]  # the manifest still verifies: artifacts untouched
    assert card["item_level"]["dstc7"] == {"pearson": 0.104, "spearman": 0.098, "n": 3400,
                                           "pearson_ci": [0.071235, 0.1361]}
    assert card["synthetic"] == {"mean": 0.6, "kinds": {"random": 0.55, "hard": 0.65}, "sources": {"dailydialog": 0.6}}
    assert set(read_manifest(store / "bleu4").card["evaluate"]["item_level"]) == {"dstc7"}  # skipped sets left out
    assert "synthetic" not in read_manifest(store / "bleu4").card["evaluate"]  # a referenced model takes no check
    readme = (store / "length" / "README.md").read_text()
    assert "| holistic_eval | 72 | -0.540 | -0.560 |" in readme  # no interval: none shown
    assert "| dstc7 | 3400 | 0.104 [0.07, 0.14] | 0.098 |" in readme and "contexts whole" in readme
    assert "mean 0.600; by kind random 0.550, hard 0.650; by source dailydialog 0.600." in readme
    write_cards(store, results, ["length"], "python -m training evaluate", "dev")  # a rerun replaces, never appends
    assert (store / "length" / "README.md").read_text().count("holistic_eval") == 1


def test_unknown_models_are_a_set_up_error(tmp_path, capsys):
    store = copy_store(tmp_path / "store", ("length",))
    with pytest.raises(SystemExit) as stopped:
        main(["--store", str(store), "--models", "length", "no-such", "--sets", "holistic_eval"])
    assert stopped.value.code == 2 and "no-such" in capsys.readouterr().err


def test_beats_baselines_counts_sets_where_a_model_tops_bleu_and_rouge():
    from training.evaluation.evaluate import Result, beats_baselines

    def row(**pearson):
        return {m: Result(model=m, set="s", n=10, pearson=r) for m, r in pearson.items()}

    results = {"a": row(bleu4=0.1, **{"rouge-l": 0.2}, ruber=0.3, length=0.0),
               "b": row(bleu4=0.4, **{"rouge-l": 0.2}, ruber=0.3, length=0.5),
               "c": {"length": Result(model="length", set="c", n=10, pearson=0.9)}}
    line = beats_baselines(results, ["a", "b", "c"], ["bleu4", "rouge-l", "ruber", "length"])
    assert "ruber 1/2" in line and "length 1/2" in line and "bleu4 " not in line


def test_beats_baselines_counts_a_set_and_its_copy_once():
    from training.evaluation.evaluate import Result, beats_baselines

    def row(name: str, **pearson):
        return {m: Result(model=m, set=name, n=10, pearson=r) for m, r in pearson.items()}

    sets = ["dailydialog_gupta_multiref", "xdial_dailydialog_gupta", "dstc7"]
    results = {name: row(name, bleu4=0.1, **{"rouge-l": 0.2}, ruber=0.3) for name in sets}
    line = beats_baselines(results, sets, ["bleu4", "rouge-l", "ruber"])
    assert "ruber 2/2" in line and "distinct sets" in line


@pytest.mark.data
def test_evaluate_recovers_dailydialog_references_by_default(tmp_path):
    from training.data.references import with_recovered_references

    store = copy_store(tmp_path / "store", ("bleu4",))
    out = tmp_path / "evaluation.md"
    assert main(["--store", str(store), "--models", "bleu4", "--sets", "holistic_eval",
                 "--out", str(out), "--plots", str(tmp_path / "plots")]) == 0
    text = out.read_text()
    items, gained = with_recovered_references(load_set("holistic_eval", "dev"))
    assert 0 < gained < len(items)
    assert f"holistic_eval {gained}/{len(items)}" in text and "recovered from DailyDialog" in text
    row = next(line for line in text.splitlines() if line.startswith("| bleu4 "))
    assert "n/a" not in row and f"(n={gained})" not in row  # the only model: its n is the header's
    assert f"holistic_eval (n={gained})" in text


def test_supplementary_table_leaves_out_replies_that_are_their_own_reference():
    from training.evaluation.evaluate import Result, distinct_reply_table

    human = np.array([5.0, 5.0, 1.0, 2.0, 3.0, 4.0])
    copies = np.array([True, True, False, False, False, False])
    refs = np.array([True] * 6)

    def result(model, scores):
        r = Result(model=model, set="s", n=6, scores=np.asarray(scores, float), human=human,
                   has_reference=refs, reply_is_reference=copies)
        r.pearson = float(stats.pearsonr(human, r.scores).statistic)
        return r

    # bleu4 rides on the two copies; the reference-free model ranks the other four right
    results = {"s": {"bleu4": result("bleu4", [1, 1, 0, 0, .1, 0]),
                     "rouge-l": result("rouge-l", [1, 1, 0, .1, 0, 0]),
                     "free": result("free", [3, 3, 1, 2, 3, 4])},
               "plain": {"free": Result(model="free", set="plain", n=3, pearson=0.5, scores=np.ones(3),
                                        human=np.ones(3), has_reference=np.ones(3, bool),
                                        reply_is_reference=np.zeros(3, bool))}}
    assert results["s"]["bleu4"].pearson > results["s"]["free"].pearson  # the main table's bar
    lines = distinct_reply_table(results, ["s", "plain"], ["bleu4", "rouge-l", "free"])
    header = next(line for line in lines if line.startswith("| model"))
    assert "s (n=4)" in header and "plain" not in header  # a set without copies is not repeated
    free = next(line for line in lines if line.startswith("| free "))
    assert "1.000" in free  # on the four distinct items the reference-free model is exact
    assert "free 1/1" in lines[-1]


@pytest.mark.skipif(not (MODEL_STORE / "mh" / "manifest.json").is_file(), reason="mh not exported")
def test_evaluating_only_dialogue_models_says_why_there_is_nothing(capsys):
    """Dialogue models only (`--models mh`): a set-up error, not an empty table and exit 0."""
    with pytest.raises(SystemExit) as exited:
        main(["--models", "mh", "--sets", "holistic_eval", "--store", str(MODEL_STORE), "--no-cards"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "nothing to evaluate: mh score(s) whole dialogues" in err


def test_training_reports_the_services_spearman_p() -> None:
    """Training's correlations use /correlate's p (the heads' metrics and M_H's card carry it): exact for a
    handful of systems, where scipy's t approximation says p = 0 for any perfect ranking (M_H's 4 iEval bots)."""
    from training.evaluation.evaluate import correlate
    from training.core.heads import correlations
    from training.mh.evaluate import correlate as mh_correlate

    x, y = np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.5, 2.5, 3.5, 9.0])
    assert correlate(x, y)[3] == pytest.approx(1 / 12)
    assert correlations(y, x)["spearman_p"] == pytest.approx(1 / 12)
    assert mh_correlate(x, y)["spearman_p"] == pytest.approx(1 / 12)


class _ReferenceLength:
    """A referenced stand-in model: the score is the reference's length (so which reference was kept shows)."""

    kind = "referenced"
    reads_reference = True

    def score(self, items, options=None, cache=None):
        return ScoreBatch([float(len(item.reference)) for item in items])


def _item(references: list[str]) -> JudgedItem:
    return JudgedItem("s", "i", ["hi"], "hello", references, 3.0, None, None)


def test_a_referenced_model_keeps_its_best_score_over_the_first_max_refs_references():
    """Gupta et al. 2019's multi-reference protocol (evaluate's docstring): the best over the first
    `max_refs` references, not the last one scored, and never one past `max_refs`; also across a
    batch boundary."""
    items = [_item(["a", "a" * 8, "aa", "aaaa", "a" * 16]),  # first four: 1, 8, 2, 4 -> 8 (16 is the 5th)
             _item(["aaa"]),                                 # one reference -> 3
             _item(["a" * 5, "a"])]                          # 5, 1 -> 5
    for batch in (256, 3):
        np.testing.assert_array_equal(score_items(_ReferenceLength(), items, None, max_refs=4, batch=batch),
                                      [8.0, 3.0, 5.0])


@pytest.mark.parametrize("precision", ["int8", "int8-float"])
def test_the_store_is_served_as_a_worker_with_the_same_encoder_precision_would(tmp_path, monkeypatch, precision):
    """DIALSCORE_ENCODER_PRECISION reaches evaluate and degenerate as it reaches a worker: with a w8a8 file
    built, `auto` would measure it, and a run asked for another precision must not."""
    from training.evaluation.evaluate import load_store

    monkeypatch.setenv("DIALSCORE_ENCODER_PRECISION", precision)
    monkeypatch.setenv("DIALSCORE_PROVIDERS", "CPUExecutionProvider")  # OpenVINO serves int8 as int8-float
    store = load_store(copy_store(tmp_path / "store", ("minilm-cosine",)), ["minilm-cosine"], strict=True)
    encoder = store.components["minilm-l6"]
    assert (encoder.precision, encoder.filename) == (precision, "encoder-int8.onnx")


def test_a_card_names_the_provider_and_precision_its_figures_came_from() -> None:
    from training.core.card import evaluate_section
    from training.evaluation.evaluate import card_entry, served_as

    openvino = {"name": "minilm-l6", "file": "encoder-int8.onnx", "precision": "int8",
                "provider": "OpenVINOExecutionProvider", "compute": "bf16"}
    cpu = {"name": "mpnet-base", "file": "encoder-fp32.onnx", "precision": "fp32", "provider": "CPUExecutionProvider"}
    served = served_as([openvino, cpu], ["OpenVINOExecutionProvider", "CPUExecutionProvider"])
    assert served == ("minilm-l6 encoder-int8.onnx as int8 on OpenVINOExecutionProvider computing in bf16; "
                      "mpnet-base encoder-fp32.onnx as fp32 on CPUExecutionProvider")
    assert served_as([], ["CUDAExecutionProvider", "CPUExecutionProvider"]) == "CUDAExecutionProvider"
    entry = card_entry({}, "python -m training evaluate", "dev", served)
    assert entry["served"] == served and f"Served as: {served}." in evaluate_section(entry)


@pytest.mark.data
def test_the_figures_on_a_sets_published_items_are_best_of_four_references() -> None:
    """docs/evaluation.md quotes adem-minilm on all of dailydialog_gupta_multiref and on its train split
    under the page's rule, the best score over the first four references (the first alone gives
    .773 and .915)."""
    import re
    from pathlib import Path

    from training.evaluation.evaluate import run

    text = " ".join((Path(__file__).resolve().parents[3] / "docs" / "evaluation.md").read_text().split())
    quoted = re.search(r"on all 500 items of dailydialog_gupta_multiref adem-minilm reaches r = (\.\d+) and "
                       r"autojudge-minilm \.\d+, on the 310 it was trained on (\.\d+) and", text)
    assert quoted, "the sentence quoting the published items' figures moved"
    for split, figure in zip(("all", "train"), quoted.groups()):
        found = run(MODEL_STORE, ["dailydialog_gupta_multiref"], ["adem-minilm"], split, max_refs=4, check=False)
        assert found.results["dailydialog_gupta_multiref"]["adem-minilm"].pearson == pytest.approx(
            float(figure), abs=0.0015), split
