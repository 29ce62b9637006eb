"""RUBER's training side: a tiny model trained on real dialogues, exported, served and scored."""
from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from service.artifacts.manifest import read_manifest, verify_files
from service.scorers.base import EncodeCache, Item
from training.data.corpora import dailydialog
from training.data.judgements import JudgedItem
from training.ruber.calibrate import dev_reference, load_glove, open_scorer
from training.ruber.data import collate, make_pairs
from training.ruber.export import (encoder_parity, export_encoder, export_graphs, export_head, head_parity,
                                   symbolic_inputs, write_ruber_manifest)
from training.ruber.model import RuberConfig, build_glove_scorer, margin_loss
from training.ruber.train import TrainConfig, evaluate_ranking, length_sorted_batches, train_unreferenced

REPO = Path(__file__).resolve().parents[3]
LOG = logging.getLogger("test")


@pytest.fixture(scope="module")
def glove():
    return load_glove(REPO / "model_store")


@pytest.fixture(scope="module")
def pairs(glove):
    dialogues = dailydialog("train")[:120]
    return make_pairs(dialogues[:100], glove, 1, 128), make_pairs(dialogues[100:], glove, 1, 128)


@pytest.fixture(scope="module")
def trained(glove, pairs):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    train, valid = pairs
    model = build_glove_scorer(glove.vectors, RuberConfig(hidden=8, mlp_hidden=8))
    before = evaluate_ranking(model, train, 0.5)
    history = train_unreferenced(model, train, valid, 0.5,
                                 TrainConfig(batch_size=32, max_steps=60, eval_every=30, learning_rate=1e-2), LOG)
    return model, before, history


def test_pairs_follow_the_dialogue_and_the_service_preprocessing(glove):
    pairs = make_pairs([["Hello there !", "Hi , how are you ?", "zzqqxx"]], glove, 1, 128)
    # the last turn has no known word, so only one pair is kept
    assert len(pairs) == 1
    assert pairs.queries[0] == glove.ids(["hello", "there", "!"])
    two = make_pairs([["a b", "c d", "e f"]], glove, 2, 3)
    assert two.queries[1] == glove.ids(["a", "b", "c", "d"])[-3:]


def test_collate_pads_and_keeps_empty_rows_as_one_pad():
    ids, lengths = collate([[5, 6, 7], [], [9]], pad_id=99)
    assert ids.tolist() == [[5, 6, 7], [99, 99, 99], [9, 99, 99]]
    assert lengths.tolist() == [3, 1, 1]


def test_margin_loss_is_the_hinge_of_eq_7():
    positive = torch.tensor([0.9, 0.5, 0.2])
    negative = torch.tensor([0.1, 0.4, 0.6])
    expected = np.mean([max(0, 0.5 - 0.9 + 0.1), max(0, 0.5 - 0.5 + 0.4), max(0, 0.5 - 0.2 + 0.6)])
    assert float(margin_loss(positive, negative, 0.5)) == pytest.approx(expected)


@pytest.mark.data
def test_length_sorted_batches_cover_every_pair_once(pairs):
    import random

    batches = length_sorted_batches(pairs[0], 16, random.Random(0), window=4)
    flat = sorted(i for b in batches for i in b)
    assert flat == sorted(set(flat)) and len(flat) >= len(pairs[0]) - 1


@pytest.mark.data
def test_training_lowers_the_ranking_loss_on_its_data(trained, pairs):
    model, before, history = trained
    # an untrained head gives every pair about the same score: loss about Δ, accuracy about chance
    assert before["loss"] == pytest.approx(0.5, abs=0.05)
    after = evaluate_ranking(model, pairs[0], 0.5)
    assert after["loss"] < before["loss"] - 0.05
    assert after["accuracy"] > 0.6
    assert history["best"]["step"] in {h["step"] for h in history["history"]}


@pytest.mark.data
def test_export_parity_and_symbolic_axes(trained, tmp_path):
    model, _, _ = trained
    query = export_encoder(model.query_encoder, tmp_path / "q.onnx")
    head = export_head(model.head, tmp_path / "h.onnx")
    assert encoder_parity(model.query_encoder, query, shapes=((1, 1), (1, 9), (4, 6), (2, 400))) < 1e-4
    assert head_parity(model.head, head) < 1e-4
    assert symbolic_inputs(query) and symbolic_inputs(head)


@pytest.mark.data
def test_whole_chain_train_export_load_in_the_store_and_score(trained, glove, tmp_path):
    from service.artifacts.runtime import Runtime, RuntimeSettings
    from service.store.model_store import ModelStore

    model, _, _ = trained
    root = tmp_path / "store"
    shutil.copytree(REPO / "model_store" / "glove-50d", root / "glove-50d")
    folder = root / "ruber"
    parity = export_graphs(model, folder)
    assert max(parity.values()) < 1e-4
    write_ruber_manifest(folder, RuberConfig(hidden=8, mlp_hidden=8),
                         {"s_ref": [0.5, 1.0], "s_unref": [0.3, 0.7]}, "geometric", {"summary": "test"})
    store = ModelStore(root, Runtime(RuntimeSettings(providers=("CPUExecutionProvider",), intra_op_threads=1)))
    assert store.load(), store.failures
    scorer = store.scorers["ruber"]
    assert scorer.kind == "referenced" and scorer.option_spec["blend"]["default"] == "geometric"
    items = [Item(["how are you ?"], "fine , thanks .", "i am good ."),
             Item(["where is the station ?"], "go straight and turn left .", "it is over there ."),
             Item(["hi"], "zzqqxx", "hello")]
    batch = scorer.score(items, {"components": True})
    assert len(batch.scores) == 3 and all(0.0 <= s <= 1.0 for s in batch.scores)
    parts = batch.details
    assert all(set(d) == {"s_ref", "s_unref"} for d in parts)
    assert batch.scores[0] == pytest.approx(np.sqrt(parts[0]["s_ref"] * parts[0]["s_unref"]))
    # the served s_U is the trained torch model's (up to ONNX and float error)
    direct = open_scorer(folder, glove).unreferenced(items[:2], EncodeCache())
    with torch.no_grad():
        q = model.query_encoder.collate([glove.ids(["how", "are", "you", "?"]), glove.ids(["where", "is", "the", "station", "?"])])
        r = model.reply_encoder.collate([glove.ids(["fine", ",", "thanks", "."]), glove.ids(["go", "straight", "and", "turn", "left", "."])])
        expected = model(q, r).numpy()
    np.testing.assert_allclose(direct, expected, atol=1e-5)
    # each item scores the same alone as in a batch
    alone = [scorer.score([item]).scores[0] for item in items]
    np.testing.assert_allclose(alone, scorer.score(items).scores, atol=1e-6)


@pytest.mark.data
def test_the_command_pipeline_writes_a_servable_calibrated_model_with_a_card(tmp_path):
    from training.ruber.train import run

    store = tmp_path / "store"
    for name in ("glove-50d", "bleu4"):
        shutil.copytree(REPO / "model_store" / name, store / name)
    torch.set_num_threads(1)
    summary = run(store / "ruber", store, RuberConfig(hidden=4, mlp_hidden=4),
                  TrainConfig(batch_size=16, max_steps=6, eval_every=3), max_pairs=200, valid_pairs=50,
                  choice_sets=["dailydialog_gupta_multiref"], card_sets=["dailydialog_gupta_multiref", "holistic_eval"],
                  command="test", sources=("dailydialog",), calibration_contexts=10)
    lo, hi = summary["normalisation"]["s_unref"]
    assert 0.0 <= lo < hi <= 1.0
    assert summary["blend"]["chosen"] in summary["blend"]["mean_pearson"]
    assert summary["query_turns"]["chosen"] in (1, 2, 3)
    card = (store / "ruber" / "README.md").read_text()
    assert summary["threads"] == 1
    for needed in ("## Training", "2-core x86_64 CPU, no GPU (one thread", "Tao", "| dailydialog_gupta_multiref |",
                   "bleu4"):
        assert needed in card
    manifest = read_manifest(store / "ruber")
    verify_files(manifest)
    assert manifest.options["blend"]["default"] == summary["blend"]["chosen"]
    assert "word_weights.npy" in manifest.files
    assert manifest.options["word_weights"] == {"type": "string", "choices": ["none", "frequency"],
                                                "default": summary["blend"]["word_weights"]}
    assert set(summary["blend"]["by_word_weights"]) == {"none", "frequency"}
    lo, hi = summary["normalisation"]["s_ref_frequency"]
    assert -1.0 <= lo < hi <= 1.0
    assert manifest.card["correlations"]["holistic_eval"]["bleu4"] == {"n/a": "needs a reference"}


@pytest.mark.data
def test_training_is_deterministic_for_a_seed(glove, pairs):
    """`make train` must reproduce the committed weights: same seed, same data -> same parameters."""
    torch.set_num_threads(1)
    states = []
    for _ in range(2):
        torch.manual_seed(123)
        model = build_glove_scorer(glove.vectors, RuberConfig(hidden=4, mlp_hidden=4))
        train_unreferenced(model, pairs[0], pairs[1], 0.5, TrainConfig(batch_size=16, max_steps=8, eval_every=4,
                                                                         seed=5), LOG)
        states.append(model.state_dict())
    for key in states[0]:
        assert torch.equal(states[0][key], states[1][key]), key


def test_the_card_reads_convergence_from_the_validation_history():
    from training.ruber.card import convergence

    def history(losses):
        return [{"step": 100 * (i + 1), "loss": loss} for i, loss in enumerate(losses)]

    falling = {"history": history([0.5, 0.4, 0.3, 0.25]), "best": {"step": 400, "loss": 0.25}, "steps": 400}
    assert "still falling" in convergence(falling) and "0.4000 by step 200" in convergence(falling)
    flat = {"history": history([0.5, 0.3, 0.31, 0.32, 0.33]), "best": {"step": 200, "loss": 0.3}, "steps": 500}
    assert "stopped improving after step 200" in convergence(flat)


def test_frequency_weights_shrink_common_words_and_leave_unseen_ones():
    from training.ruber.word_weights import frequency_weights

    index = {"the": 0, "cinema": 1, "zyzzyva": 2}
    dialogues = [["the cinema", "the the the"], ["the end"]]  # 'the' is 5 of the 7 tokens, 'cinema' 1
    weights = frequency_weights(index, dialogues, a=0.1)
    assert weights[0] == pytest.approx(0.1 / (0.1 + 5 / 7))
    assert weights[1] == pytest.approx(0.1 / (0.1 + 1 / 7))
    assert weights[2] == 1.0 and weights.dtype == np.float32


def test_the_card_says_how_the_validation_loss_ended():
    from training.ruber.card import convergence

    def run(losses):
        history = [{"step": 1000 * (i + 1), "loss": loss} for i, loss in enumerate(losses)]
        best = min(history, key=lambda h: h["loss"])
        return convergence({"history": history, "best": best, "steps": 1000 * len(losses)})

    assert run([.5, .4, .3, .2, .1]).startswith("Validation loss was still falling")
    # The committed run: best at 24,500 of 26,000, then rising: not "still falling".
    assert run([.5, .4, .3, .2, .19, .18, .17, .16, .15, .14, .13, .12, .11, .10, .09, .08, .07, .06, .05, .04,
                .03, .02, .01, .02, .03]).startswith("Validation loss levelled off near the end")
    assert run([.5, .1, .2, .3, .4, .5]).startswith("Validation loss stopped improving")


@pytest.mark.data
def test_a_time_cap_that_stops_training_early_is_a_warning_and_none_means_none(glove, pairs, caplog):
    """A time cap that stops training early says so (the model then depends on the machine's speed)."""
    torch.set_num_threads(1)
    capped = build_glove_scorer(glove.vectors, RuberConfig(hidden=4, mlp_hidden=4))
    with caplog.at_level(logging.INFO):
        history = train_unreferenced(capped, pairs[0], pairs[1], 0.5,
                                     TrainConfig(batch_size=16, max_steps=50, eval_every=25, max_minutes=1e-9), LOG)
    assert history["steps"] == 1 and history["stopped_by"] == "time"
    assert any(r.levelno == logging.WARNING and "stopping early" in r.getMessage() for r in caplog.records)
    uncapped = build_glove_scorer(glove.vectors, RuberConfig(hidden=4, mlp_hidden=4))
    history = train_unreferenced(uncapped, pairs[0], pairs[1], 0.5,
                                 TrainConfig(batch_size=16, max_steps=6, eval_every=3, max_minutes=None), LOG)
    assert history["steps"] == 6 and history["stopped_by"] == "steps"


def test_the_command_logs_under_out_and_make_train_sets_no_time_cap(tmp_path, monkeypatch):
    """`train ruber --out X` logs into X, not into the working folder."""
    from training.ruber import train as ruber_train

    seen = {}
    monkeypatch.setattr(ruber_train, "run", lambda out, store, config, train_config, *rest: seen.update(
        out=out, train_config=train_config))
    monkeypatch.chdir(tmp_path)
    assert ruber_train.main(["--out", str(tmp_path / "ruber"), "--minutes", "0"]) == 0
    assert (tmp_path / "ruber" / "train.log").is_file() and not (tmp_path / "runs").exists()
    assert seen["train_config"].max_minutes is None
    script = (REPO / "scripts" / "train.sh").read_text()
    ruber_line = next(line for line in script.splitlines() if "training train ruber" in line)
    assert "--minutes 0" in ruber_line


def test_a_failed_run_without_log_keeps_its_log_out_of_the_removed_build(tmp_path, monkeypatch):
    """Without --log the log lives in the build, which a failed run removes: a copy is kept."""
    import tempfile

    from training.ruber import train as ruber_train

    def fail(out, *rest):
        ruber_train.log.info("ruber: step 1 of many")
        raise RuntimeError("out of memory, say")

    monkeypatch.setattr(ruber_train, "run", fail)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    with pytest.raises(RuntimeError):
        ruber_train.main(["--out", str(tmp_path / "ruber"), "--minutes", "0"])
    kept = list((tmp_path / "tmp").glob("ruber-train-failed-*.log"))
    assert len(kept) == 1 and "step 1 of many" in kept[0].read_text() and "is kept in" in kept[0].read_text()
    assert not (tmp_path / "ruber").exists() or not any((tmp_path / "ruber").iterdir())


class _ReferenceLengthRuber:
    """A stand-in for the served Ruber: raw s_R is the reference's length; calibration bounds [0, 10]."""

    def referenced(self, items, word_weights="none"):
        return np.asarray([float(len(item.reference)) for item in items])

    def reference_bounds(self, word_weights):
        return [0.0, 10.0]


def test_dev_reference_keeps_the_best_of_the_first_max_refs_references_normalised():
    """The best raw s_R over each item's first `max_refs` references, then min-max normalised with
    the calibration bounds ((v - 0) / 10, clipped to [0, 1]); NaN for an item without references."""
    items = [JudgedItem("s", "a", ["hi"], "yo", ["a" * 2, "a" * 6, "a" * 3, "a", "a" * 9], 3.0, None, None),
             JudgedItem("s", "b", ["hi"], "yo", [], 3.0, None, None),
             JudgedItem("s", "c", ["hi"], "yo", ["a" * 4], 3.0, None, None),
             JudgedItem("s", "d", ["hi"], "yo", ["a" * 30, "a"], 3.0, None, None)]
    got = dev_reference(_ReferenceLengthRuber(), items, max_refs=4)
    np.testing.assert_allclose(got, [0.6, np.nan, 0.4, 1.0])  # 6 of the first four; 9 is the fifth; 30 clips
