from training.unref.card import portable_command


def test_a_card_names_cache_folders_not_this_machines_paths() -> None:
    argv = ["python", "-m", "training", "train-unref", "--model", "unref-minilm",
            "--cache", "minilm-l6=/work/scratch/minilm-cache/", "--model-dir", "/keep/this"]
    assert portable_command(argv) == ("python -m training train-unref --model unref-minilm "
                                      "--cache minilm-l6=$CACHE/minilm-cache --model-dir /keep/this")


def committed_card(name: str) -> dict:
    """The card the fixed templates render for a committed stacked model (its fit and run figures)."""
    import json

    from service.artifacts.manifest import read_manifest
    from tests.conftest import MODEL_STORE
    from training.unref import card
    from training.unref.recipes import RECIPES

    run = json.loads((MODEL_STORE.parent / "docs" / "cards" / f"{name}.json").read_text(encoding="utf-8"))
    return card.card(card.card_figures(RECIPES[name], read_manifest(MODEL_STORE / name).card["fit"], **run))


def test_a_commercial_card_reproduces_the_signal_scan_on_its_own_encoder() -> None:
    from training.unref.recipes import RECIPES

    commercial = [recipe for recipe in RECIPES.values() if recipe.template == "unref-commercial"]
    assert {recipe.uses[0] for recipe in commercial} == {"minilm-l6", "mpnet-base"}
    for recipe in commercial:
        scan = committed_card(recipe.name)["reproduce"].splitlines()[0]
        assert f"unref-scan --model {recipe.name} --encoder {recipe.uses[0]} " in scan


def test_a_card_says_where_development_figures_shaped_the_model() -> None:
    """The fit reads no development item, but the copied_bigrams signal was redesigned after a development run."""
    from tests.conftest import MODEL_STORE

    import re

    for name in ("unref-minilm-commercial", "unref-minilm"):
        summary = committed_card(name)["summary"]
        assert "no development item read." not in summary and "redesigned after" in summary
        cited = re.findall(r"docs/notes/[\w.-]+\.md", summary)
        assert cited and all((MODEL_STORE.parent / path).is_file() for path in cited), cited


def test_a_stacked_card_says_which_rated_sets_are_copies_of_others() -> None:
    assert "xdial_dailydialog_gupta repeats dailydialog_gupta_multiref" in committed_card("unref-minilm")["training_data"]
    assert "repeats" not in committed_card("unref-minilm-commercial")["training_data"]  # dstc7 and conture only
