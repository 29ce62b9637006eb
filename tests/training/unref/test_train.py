"""train-unref end to end on a handful of real items: out-of-fold heads, the fit, the export, the folder
served as the store serves it (train-unref itself checks the served scores against the fit's)."""
from __future__ import annotations

from pathlib import Path

import pytest

from service.scorers.base import Item
from service.store.model_store import ModelStore
from tests.conftest import MODEL_STORE, copy_store

torch = pytest.importorskip("torch")


@pytest.mark.data
def test_a_tiny_unref_minilm_trains_exports_and_serves(tmp_path: Path):
    from training.unref.train import main

    store = copy_store(tmp_path / "store", ("autojudge-minilm", "ruber-minilm"))
    assert main(["--model", "unref-minilm", "--store", str(store), "--cache", f"minilm-l6={tmp_path / 'cache'}",
                 "--one-setting", "--max-judged", "6", "--epochs", "1", "--negatives-contexts", "6",
                 "--next-turn-max-pairs", "16", "--ruber-pairs", "12"]) == 0
    manifest = ModelStore(store).root / "unref-minilm" / "manifest.json"
    assert manifest.is_file()
    served = ModelStore(store, models=("unref-minilm",))
    assert served.load(), served.failures
    scorer = served.scorers["unref-minilm"]
    assert scorer.manifest.kind == "unreferenced" and not scorer.reads_reference
    names = [spec["name"] for spec in scorer.manifest.config["signals"]]
    assert names == ["autojudge", "ruber_s_unref_logit", "cos_mean2", "copy_excess", "distinct_ratio", "log_length",
                     "copied_words", "repeated_bigrams"]
    # the served heads are copies of the -minilm models' graphs, named with their hashes
    heads = scorer.manifest.config["heads"]
    assert heads["autojudge_head.onnx"]["sha256"] == scorer.manifest.files["autojudge_head.onnx"]["sha256"]
    readme = (store / "unref-minilm" / "README.md").read_text()
    assert "| autojudge | minilm-l6 |" in readme and "Leave-one-set-out" in readme
    scores = scorer.score([Item(["do you like jazz?"], "yes, coltrane is my favourite."),
                           Item(["do you like jazz?"], "do you like jazz?")]).scores
    assert len(scores) == 2 and all(1.0 < s < 5.0 for s in scores)


@pytest.mark.data
@pytest.mark.parametrize("model", ["unref-minilm", "unref-mpnet", "unref-mpnet-minilm"])
def test_the_stacked_recipes_margin_term_reads_the_samples_and_each_dstc7_degenerate_kind(model: str):
    """The non-commercial recipes keep their DailyDialog++ negative samples (one kind for the floor) and add the
    DSTC7 train copies, repetitions and shuffled copies the commercial recipes read, drawn alike."""
    import random

    from training.core.turn_training import Config
    from training.data.degenerate import SHUFFLED_KIND
    from training.data.negatives import dstc7_copies, negative_samples
    from training.unref.recipes import RECIPES, SAMPLES_DEGENERATE_AND_SHUFFLED
    from training.unref.train import negatives_of

    assert RECIPES[model].negatives == SAMPLES_DEGENERATE_AND_SHUFFLED
    config = Config(negatives_contexts=6)
    ranked = negatives_of(SAMPLES_DEGENERATE_AND_SHUFFLED, config, 0)
    samples = negative_samples(config, random.Random(0), for_ruber=False)
    dstc7 = dstc7_copies(6, random.Random(0), repetitions=True, shuffled=True)
    assert ranked.bad == samples.bad + dstc7.bad
    assert ranked.kinds == ["samples"] * len(samples.bad) + dstc7.kinds
    assert set(ranked.kinds) == {"samples", "copy", "near-copy-x2", "near-copy-x3", "topic-word", SHUFFLED_KIND}


def test_leave_one_set_out_leaves_a_set_out_with_its_aliases():
    """A fold that left out only one copy of a set's items would score the other, trained on, as unseen."""
    from training.data.judgements import ALIASES
    from training.unref.heads import GROUPS

    assert all(GROUPS[alias] == GROUPS[original] for alias, original in ALIASES.items())


@pytest.mark.data
def test_a_tiny_commercial_model_reads_only_commercially_usable_sets_and_serves(tmp_path: Path, monkeypatch):
    """Its fit reads the train partitions of COMMERCIAL_SETS alone and, as negatives, copies and repetitions of DSTC7
    contexts, never the DailyDialog++ negative samples; its card says the terms in the keys GET /models reads; a copy
    of the context scores below a relevant reply (the bare cosine puts it first)."""
    from training.unref import train as unref_train
    from training.unref.recipes import COMMERCIAL_SETS

    read: list[tuple[str, ...]] = []
    judged = unref_train.judged

    def recording(split: str, sets: tuple[str, ...]):
        read.append(tuple(sets))
        return judged(split, sets)

    monkeypatch.setattr(unref_train, "judged", recording)
    monkeypatch.setattr(unref_train, "negative_samples", lambda *a, **k: pytest.fail("read negative samples"))
    store = copy_store(tmp_path / "store", ("minilm-l6",))
    assert unref_train.main(["--model", "unref-minilm-commercial", "--store", str(store), "--cache",
                             f"minilm-l6={tmp_path / 'cache'}", "--one-setting", "--max-judged", "200",
                             "--negatives-contexts", "24"]) == 0
    assert read == [COMMERCIAL_SETS]
    served = ModelStore(store, models=("unref-minilm-commercial",))
    assert served.load(), served.failures
    scorer = served.scorers["unref-minilm-commercial"]
    assert [f for f in scorer.manifest.files if f.endswith(".onnx")] == []
    assert [spec["name"] for spec in scorer.manifest.config["signals"]] == ["cos_last", "copied_words",
                                                                             "repeated_bigrams"]
    card = scorer.manifest.card
    assert card["commercial_use"] is True and card["license"] == "O-UDA-1.0 AND CC-BY-4.0 AND Apache-2.0 AND MIT" and card["license_reason"]
    context = ["i went to a jazz concert last night.", "do you like jazz?"]
    relevant, unrelated, copy = scorer.score([Item(context, "yes, coltrane is my favourite."),
                                              Item(context, "the train leaves at noon."),
                                              Item(context, "do you like jazz?")]).scores
    assert all(1.0 < s < 5.0 for s in (relevant, unrelated, copy))
    assert relevant > unrelated and relevant > copy


def test_the_commercial_sets_state_terms_that_allow_commercial_use():
    from training.data.judgements import SETS
    from training.unref.recipes import COMMERCIAL_SETS

    for name in COMMERCIAL_SETS:
        licence = SETS[name].licence
        assert licence in ("O-UDA v1.0", "CC BY 4.0"), (name, licence)


def test_a_recipe_with_the_commercial_card_refuses_data_of_other_terms():
    from training.unref.recipes import COMMERCIAL_TEMPLATE, MINILM, RECIPES, Recipe, commercial

    assert {r.name for r in RECIPES.values() if r.template == COMMERCIAL_TEMPLATE} == {
        "unref-minilm-commercial", "unref-mpnet-commercial"}
    base = commercial("m", MINILM)
    for change in ({"rated_sets": ("dstc7", "dailydialog_gupta_multiref")}, {"negatives": "samples"},
                   {"heads": RECIPES["unref-minilm"].heads}, {"rated_sets": Recipe("m", (MINILM,), (), {}).rated_sets}):
        with pytest.raises(ValueError, match="a commercial card over data of other terms"):
            Recipe(**{**base.__dict__, **change})


def test_the_commercial_cards_spdx_names_every_term_of_what_the_models_read_and_ship():
    """The SPDX expression a compliance scanner reads: the sets the fit reads, the encoder, and the MIT
    of this project's code and of chitchat-dataset (the human_percentile table)."""
    import json

    from training.data.judgements import SETS
    from training.unref.recipes import COMMERCIAL_SETS

    spdx = {"O-UDA v1.0": "O-UDA-1.0", "CC BY 4.0": "CC-BY-4.0"}
    for name in ("unref-minilm-commercial", "unref-mpnet-commercial"):
        card = json.loads((MODEL_STORE / name / "manifest.json").read_text())["card"]
        terms = set(card["license"].split(" AND "))
        assert {spdx[SETS[s].licence] for s in COMMERCIAL_SETS} | {"Apache-2.0", "MIT"} <= terms, (name, terms)
        assert "chitchat" in card["human_percentile"]["table"]


@pytest.mark.data
def test_the_commercial_recipe_on_mpnet_reads_its_vectors_and_its_card_names_that_encoder(tmp_path: Path):
    """unref-mpnet-commercial is unref-minilm-commercial's data and negatives with every vector signal on
    mpnet-base (a tiny MPNet here) and copy_excess beside its signals, as the scan chose on mpnet; its card's
    summary and terms name that encoder, not MiniLM."""
    from tests.mpnet_tiny import tiny_component
    from training.unref import train as unref_train
    from training.unref.recipes import RECIPES

    minilm, mpnet = RECIPES["unref-minilm-commercial"], RECIPES["unref-mpnet-commercial"]
    assert [s["name"] for s in minilm.signals] == ["cos_last", "copied_words", "repeated_bigrams"]
    assert [s["name"] for s in mpnet.signals] == ["cos_last", "copy_excess", "copied_words", "repeated_bigrams"]
    assert mpnet.rated_sets == minilm.rated_sets and mpnet.negatives == minilm.negatives and mpnet.uses == ("mpnet-base",)
    store = tiny_component(tmp_path).parent
    assert unref_train.main(["--model", "unref-mpnet-commercial", "--store", str(store), "--cache",
                             f"mpnet-base={tmp_path / 'cache'}", "--one-setting", "--max-judged", "40",
                             "--negatives-contexts", "12"]) == 0
    served = ModelStore(store, models=("unref-mpnet-commercial",))
    assert served.load(), served.failures
    scorer = served.scorers["unref-mpnet-commercial"]
    assert {spec["encoder"] for spec in scorer.manifest.config["signals"] if "encoder" in spec} == {"mpnet-base"}
    card = scorer.manifest.card
    assert card["commercial_use"] is True and "all-mpnet-base-v2 (Apache-2.0 as released" in card["license_reason"]
    assert "all-mpnet-base-v2" in card["summary"] and "MiniLM" not in card["summary"] + card["license_reason"]
    scores = scorer.score([Item(["do you like jazz?"], "yes, coltrane is my favourite.")]).scores
    assert len(scores) == 1 and 1.0 <= scores[0] <= 5.0
