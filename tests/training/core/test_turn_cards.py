"""MiniLM store folders: the README is re-derived from the manifest's card on every card change."""
from __future__ import annotations

from service.artifacts.manifest import read_manifest
from tests.conftest import copy_store
from training.core.card import pearson_cell
from training.evaluation.evaluate import BEGIN, END
from training.core.turn_cards import update_card


def test_a_card_change_keeps_the_section_evaluate_wrote(tmp_path) -> None:
    """minilm-report and degenerate rewrite the README after `evaluate` ran (make train's order)."""
    store = copy_store(tmp_path, ("minilm-cosine", "autojudge-minilm"))
    cosine = store / "minilm-cosine"
    entry = read_manifest(cosine).card["evaluate"]
    update_card(cosine, degenerate={"empty": 0.5})
    text = (cosine / "README.md").read_text(encoding="utf-8")
    assert BEGIN in text and END in text and "- empty: 50.0%" in text
    dstc7 = entry["item_level"]["dstc7"]
    assert f"| dstc7 | {dstc7['n']} | {pearson_cell(dstc7)} |" in text
    # a trained head's README has its own correlation table; evaluate's is not repeated there
    update_card(store / "autojudge-minilm", degenerate={"empty": 0.5})
    assert BEGIN not in (store / "autojudge-minilm" / "README.md").read_text(encoding="utf-8")


def test_rewriting_an_untrained_models_folder_keeps_its_measured_figures(tmp_path) -> None:
    """`baselines` and `minilm-cosine` keep the figures evaluate, degenerate and minilm-report wrote into
    the committed cards: with nothing new, the folders stay byte for byte."""
    import filecmp

    from tests.conftest import MODEL_STORE
    from training.baselines import export as baselines
    from training.baselines.cosine import write_minilm_cosine

    names = (*baselines.BASELINES, "minilm-cosine")
    store = copy_store(tmp_path / "store", names)
    baselines.write_baselines(store)
    write_minilm_cosine(store / "minilm-cosine")
    for name in names:
        for file in ("manifest.json", "README.md"):
            assert filecmp.cmp(store / name / file, MODEL_STORE / name / file, shallow=False), (name, file)
    assert "degenerate" in read_manifest(store / "minilm-cosine").card
    assert "degenerate" in read_manifest(store / "length").card  # since the check writes every card


def data_licences(model: str, reddit: bool, next_turn: bool) -> str:
    """The licence line of a trained head's card (a run with or without --reddit and next-turn pre-training)."""
    from training.core.turn_cards import head_card, head_figures

    config = {"encoding": "last", "pooling": "last", "reddit_positives": reddit, "next_turn_epochs": 5 * next_turn}
    return head_card(model, head_figures(model, config, 1.0, {}, None, None))["licence"]


def test_each_card_names_the_licences_of_the_data_its_model_read():

    adem = data_licences("adem-minilm", reddit=False, next_turn=True)
    assert "dstc7: O-UDA" in adem and "GPL" not in adem  # its ratings fit reads dstc7 and Gupta's set only
    assert "GPL-3.0" in data_licences("autojudge-minilm", reddit=False, next_turn=True)
    for model in ("adem-minilm", "ruber-minilm", "autojudge-minilm"):
        text = data_licences(model, reddit=False, next_turn=True)
        assert "non-commercial, share-alike" in text and "chitchat-dataset: MIT" in text
    assert "DSTC7 replies" in data_licences("ruber-minilm", reddit=True, next_turn=False)


def test_every_minilm_card_is_rendered_from_its_manifest_as_committed(tmp_path) -> None:
    """The heads' README is what export_model writes from the manifest (write_readme); minilm-l6's is what
    export-minilm writes beside the graphs."""
    from tests.conftest import MODEL_STORE
    from tests.training.card_checks import SECTIONS, headings
    from training.core.turn_cards import write_readme
    from training.encoders.minilm.export import readme

    for name in ("adem-minilm", "ruber-minilm", "autojudge-minilm", "minilm-cosine"):
        write_readme(tmp_path, read_manifest(MODEL_STORE / name))
        text = (tmp_path / "README.md").read_text(encoding="utf-8")
        assert text.startswith(f"# {name}\n") and headings(text) == list(SECTIONS)
        assert text == (MODEL_STORE / name / "README.md").read_text(encoding="utf-8"), name
    assert readme() == (MODEL_STORE / "minilm-l6" / "README.md").read_text(encoding="utf-8")


def test_a_head_fitted_on_copies_of_a_set_says_it_reads_their_ratings_twice() -> None:
    from training.core.turn_cards import head_card, head_figures
    from training.data.judgements import ALIASES, TRAINING_SETS

    config = {"encoding": "last", "pooling": "last", "next_turn_epochs": 5}
    text = head_card("autojudge-minilm", head_figures("autojudge-minilm", config, 1.0, {}, None, None))["training_data"]
    copies = [(alias, original) for alias, original in ALIASES.items() if alias in TRAINING_SETS]
    assert copies and all(f"{alias} repeats {original}" in text for alias, original in copies)
    assert "reads those ratings twice" in text


def test_each_committed_head_card_names_the_settings_development_figures_chose() -> None:
    """Its recipe's l1, rank weight and next-turn pre-training, as its config holds them."""
    from tests.conftest import MODEL_STORE

    for name in ("adem-minilm", "ruber-minilm", "autojudge-minilm"):
        card = read_manifest(MODEL_STORE / name).card
        chosen, config = card["chosen_on_dev"], card["config"]
        assert "development-set Pearson" in chosen and f"l1 {config['l1']:g}" in chosen, name
        assert f"next-turn pre-training of M on DailyDialog + Chit-Chat train for {config['next_turn_epochs']} epochs" \
            in chosen, name
        if name != "ruber-minilm":  # RUBER's head reads no rating: no margin term beside a ratings fit
            assert f"rank weight {config['rank_weight']:g}" in chosen, name
