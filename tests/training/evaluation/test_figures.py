"""One source of figures: docs/evaluation.json, and the README's standings, every card (manifest, and so
GET /models, and README), and docs/evaluation.md's item-level table agree with it, model by model and set
by set (three decimals where a page prints three)."""
from __future__ import annotations

import json
import re

import pytest

from service.artifacts.manifest import read_manifest
from tests.conftest import MODEL_STORE, REPO, copy_store
from training.core.card import TRIVIAL_BARS, evaluate_section, pearson_cell
from training.evaluation import figures

DOC = json.loads((REPO / "docs" / "evaluation.json").read_text(encoding="utf-8"))
ITEM_LEVEL = DOC["item_level"]
EVALUATED = sorted(ITEM_LEVEL)


def three(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def test_the_json_is_what_the_cards_evaluate_entries_hold() -> None:
    """GET /models serves each manifest's card: its `evaluate` figures are the JSON's, from one run."""
    assert figures.from_cards(MODEL_STORE) == DOC
    assert DOC["standings"] == figures.standings(ITEM_LEVEL, DOC["sets"])


@pytest.mark.parametrize("model", sorted(set(EVALUATED) - set(TRIVIAL_BARS)))
def test_a_card_shows_the_trivial_bars_on_its_own_sets(model: str) -> None:
    """Reply length and the untrained MiniLM cosine beside each set's figures, as the JSON has them, so a
    reader sees where a model (a published baseline above all) falls below them."""
    entry = read_manifest(MODEL_STORE / model).card["evaluate"]
    assert entry["trivial"] == {name: {bar: ITEM_LEVEL[bar].get(name, {}).get("pearson") for bar in TRIVIAL_BARS}
                                for name in ITEM_LEVEL[model]}
    section = evaluate_section(entry)
    assert "| length r | minilm-cosine r |" in section
    dstc7 = ITEM_LEVEL[model]["dstc7"]
    assert f"| dstc7 | {dstc7['n']} | {pearson_cell(dstc7)} |" in section and " [" in pearson_cell(dstc7)
    assert f"| {three(ITEM_LEVEL['length']['dstc7']['pearson'])} | {three(ITEM_LEVEL['minilm-cosine']['dstc7']['pearson'])} |\n" in section


def test_a_run_of_some_models_gets_the_bars_back_from_the_stores_figures(tmp_path) -> None:
    """evaluate --models autojudge rewrites autojudge's entry whole; the bars come from the store's cards."""
    from training.evaluation.evaluate import Result, write_cards

    store = copy_store(tmp_path / "store", ("autojudge", "length", "minilm-cosine"))
    results = {"dstc7": {"autojudge": Result("autojudge", "dstc7", 3400, pearson=0.5, spearman=0.4)}}
    write_cards(store, results, ["autojudge"], "python -m training evaluate --models autojudge", "dev")
    assert "trivial" not in read_manifest(store / "autojudge").card["evaluate"]
    assert figures.write_trivial_bars(store, figures.from_cards(store)) == ["autojudge"]
    assert read_manifest(store / "autojudge").card["evaluate"]["trivial"] == {"dstc7": {
        "length": ITEM_LEVEL["length"]["dstc7"]["pearson"], "minilm-cosine": ITEM_LEVEL["minilm-cosine"]["dstc7"]["pearson"]}}
    readme = (store / "autojudge" / "README.md").read_text(encoding="utf-8")
    assert f"| dstc7 | 3400 | 0.500 | 0.400 | – | {three(ITEM_LEVEL['length']['dstc7']['pearson'])} |" in readme


def test_the_figures_command_writes_the_trivial_bars_into_a_card_without_them(tmp_path) -> None:
    store = copy_store(tmp_path / "store", ("autojudge", "length", "minilm-cosine"))
    manifest = json.loads((store / "autojudge" / "manifest.json").read_text(encoding="utf-8"))
    del manifest["card"]["evaluate"]["trivial"]
    (store / "autojudge" / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n",
                                                      encoding="utf-8")
    assert figures.write_trivial_bars(store, DOC) == ["autojudge"]
    assert read_manifest(store / "autojudge").card["evaluate"]["trivial"]["dstc7"] == {
        "length": ITEM_LEVEL["length"]["dstc7"]["pearson"], "minilm-cosine": ITEM_LEVEL["minilm-cosine"]["dstc7"]["pearson"]}
    assert "| length r | minilm-cosine r |" in (store / "autojudge" / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("model", EVALUATED)
def test_a_cards_dev_figures_are_the_served_models(model: str) -> None:
    """A card's `correlations` (a training run's or minilm-report's once) are the served model's figures,
    and every set-by-set table of its README prints them."""
    card = read_manifest(MODEL_STORE / model).card
    assert card["evaluate"]["item_level"] == ITEM_LEVEL[model]
    if "correlations" in card:
        assert card["correlations"] == figures.served_correlations(ITEM_LEVEL[model])
        assert card["correlations_command"] == figures.CORRELATIONS_COMMAND
    readme = (MODEL_STORE / model / "README.md").read_text(encoding="utf-8")
    for name, row in ITEM_LEVEL[model].items():
        # `| set | n | r | rho |` rows: the measured table and evaluate's section
        printed = re.findall(rf"^\| {name} \| {row['n']} \| ([^|]+) \| (\S+) \|", readme, re.M)
        assert printed, (model, name)
        assert all(p == (pearson_cell(row), three(row["spearman"])) for p in printed), (model, name, printed)


def evaluation_md_table() -> tuple[list[str], dict[str, list[str]]]:
    text = (REPO / "docs" / "evaluation.md").read_text(encoding="utf-8")
    section = text[text.index("<!-- evaluate:begin -->"):]
    lines = [line for line in section.splitlines() if line.startswith("| model | dstc7 (n=")]
    start = section.splitlines().index(lines[0])
    rows = section.splitlines()[start:]
    sets = [re.sub(r" \(n=\d+\)$", "", c.strip()) for c in rows[0].strip("|").split("|")[1:]]
    table = {}
    for line in rows[2:]:
        if not line.startswith("| "):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        table[cells[0]] = cells[1:]
    return sets, table


def test_evaluation_md_prints_the_json_and_bolds_its_best() -> None:
    sets, table = evaluation_md_table()
    assert sets == DOC["sets"]
    for model in EVALUATED:
        for name, cell in zip(sets, table[model]):
            row = ITEM_LEVEL[model].get(name)
            if row is None:
                assert cell == "n/a", (model, name)
                continue
            bold = model in figures.best_models({m: r.get(name, {}).get("pearson") for m, r in ITEM_LEVEL.items()})
            pearson = three(row["pearson"])
            expected = f"{f'**{pearson}**' if bold else pearson} / {three(row['spearman'])}"
            assert cell.split(" (n=")[0] == expected, (model, name, cell)
    text = (REPO / "docs" / "evaluation.md").read_text(encoding="utf-8")
    tallies = dict(re.findall(r"([\w-]+) (\d+/\d+)", text.split("beats both BLEU-4 and ROUGE-L (of the distinct "
                                                                "sets where all three ran): ")[1].split("\n")[0]))
    for model in EVALUATED:
        if "beats_bleu4_and_rouge_l" in DOC["standings"][model]:
            won, contested = DOC["standings"][model]["beats_bleu4_and_rouge_l"]
            assert tallies[model] == f"{won}/{contested}", model


def readme_standings() -> dict[str, str]:
    """model -> its README row's standing cell (a row naming two models gives both the cell)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        if line.startswith("| `") and line.count("|") == 5:
            cells = [c.strip() for c in line.strip("|").split("|")]
            for model in re.findall(r"`([\w-]+)`", cells[0]):
                rows[model] = cells[3]
    return rows


def test_the_readmes_standings_are_the_jsons() -> None:
    """Each "A/N" beats-both tally, each "best on K of M" and each "(set .xyz)" figure; a model best on any
    set says so."""
    rows = readme_standings()
    for model in EVALUATED:
        cell, standing = rows[model], DOC["standings"][model]
        best, contested = standing["best"]
        tally = re.search(r"(\d+)/(\d+)", cell)
        if tally and "beats_bleu4_and_rouge_l" in standing:
            assert [int(tally.group(1)), int(tally.group(2))] == standing["beats_bleu4_and_rouge_l"], model
        claimed = re.search(r"best on (\d+) of (\d+)", cell)
        assert (claimed is not None) or best == 0, f"{model} is best on {best} sets; its README row says nothing"
        if claimed:
            assert (int(claimed.group(1)), int(claimed.group(2))) == (best, contested), model
        for name, value in re.findall(r"\((\w+) (-?\.\d{3})\)", cell):
            assert three(ITEM_LEVEL[model][name]["pearson"]).replace("0.", ".", 1) == value, (model, name)


def test_the_standings_rules_bold_ties_and_need_a_contest() -> None:
    rows = {"a": {"s1": {"pearson": 0.5}, "s2": {"pearson": 0.2}, "s3": {"pearson": 0.1}},
            "b": {"s1": {"pearson": 0.5}, "s2": {"pearson": None}},
            "bleu4": {"s1": {"pearson": 0.4}, "s2": {"pearson": 0.3}, "s3": {"pearson": 0.0}},
            "rouge-l": {"s1": {"pearson": 0.45}, "s2": {"pearson": 0.1}}}
    assert figures.best_models({m: r.get("s1", {}).get("pearson") for m, r in rows.items()}) == {"a", "b"}
    assert figures.best_models({"a": 0.3, "b": None}) == set()  # no contest, no bold
    standings = figures.standings(rows, ["s1", "s2", "s3"])
    assert standings["a"] == {"best": [2, 3], "beats_bleu4_and_rouge_l": [1, 2]}  # s3 lacks rouge-l
    assert standings["b"] == {"best": [1, 3], "beats_bleu4_and_rouge_l": [1, 1]}
    tie = {"m": {"s": {"pearson": 0.3}}, "bleu4": {"s": {"pearson": 0.3}}, "rouge-l": {"s": {"pearson": 0.1}}}
    assert figures.beats(tie, "m", ["s"]) == (0, 1)  # level with a baseline is no win
    assert standings["bleu4"] == {"best": [1, 3]}


def test_the_standings_count_a_set_and_its_copy_once() -> None:
    """xdial_conture_turn holds conture's items and xdial_dailydialog_gupta Gupta's: a win on both is one."""
    def rows(**pearsons: float) -> dict[str, dict[str, float]]:
        return {name: {"pearson": r} for name, r in pearsons.items()}

    item_level = {"a": rows(conture=0.5, xdial_conture_turn=0.5, dstc7=0.1, dailydialog_gupta_multiref=0.6,
                            xdial_dailydialog_gupta=0.6),
                  "b": rows(conture=0.2, xdial_conture_turn=0.2, dstc7=0.3, dailydialog_gupta_multiref=0.1,
                            xdial_dailydialog_gupta=0.1),
                  "bleu4": rows(dstc7=0.2, dailydialog_gupta_multiref=0.3, xdial_dailydialog_gupta=0.3),
                  "rouge-l": rows(dstc7=0.2, dailydialog_gupta_multiref=0.3, xdial_dailydialog_gupta=0.3)}
    standings = figures.standings(item_level, list(figures.SETS))
    assert standings["a"] == {"best": [2, 3], "beats_bleu4_and_rouge_l": [1, 2]}
    assert standings["b"] == {"best": [1, 3], "beats_bleu4_and_rouge_l": [1, 2]}


def test_a_trainers_correlations_move_to_training_run_once(tmp_path) -> None:
    from service.artifacts.manifest import update_card

    store = copy_store(tmp_path / "store", ("adem",))
    trained = {"dev": {"dstc7": {"pearson": 0.1403, "spearman": 0.1407, "n": 3290}}}
    update_card(store / "adem", correlations=trained, correlations_command=None)
    for _ in range(2):  # a second evaluate keeps the trainer's figures where the first put them
        assert figures.write_card_correlations(store, DOC) == ["adem"]
        card = read_manifest(store / "adem").card
        assert card["correlations"] == figures.served_correlations(ITEM_LEVEL["adem"])
        assert card["training_run"]["correlations"] == trained and "command" not in card["training_run"]
    assert read_manifest(store / "adem").trained_items == read_manifest(MODEL_STORE / "adem").trained_items
