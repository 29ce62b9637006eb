"""M_H training: the rating loaders on the real data, the regression, and a tiny end-to-end run."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from service.store.model_store import ModelStore
from tests.conftest import MODEL_STORE
from training.mh import data
from training.mh import model as fit

JUDGEMENTS = data.DEFAULT_ROOT


@pytest.mark.data
def test_convai2_conversations_carry_bot_ids_and_ratings() -> None:
    rated = data.load_convai2(min_pairs=1)
    assert len(rated) > 400
    assert {c.dataset for c in rated} == {"convai2"}
    assert all(c.bot and c.bot.split("/")[0] in ("intermediate", "volunteers") for c in rated)
    assert all(1 <= c.rating <= 5 for c in rated)
    assert all(set(c.speakers) <= {"user", "bot"} and data.exchanges(c.speakers) >= 1 for c in rated)
    stricter = data.load_convai2(min_pairs=3)
    assert 0 < len(stricter) < len(rated) and all(data.exchanges(c.speakers) >= 3 for c in stricter)


@pytest.mark.data
def test_ieval_and_conture_loaders() -> None:
    ieval = data.load_ieval()
    assert {c.bot for c in ieval} == {"ieval/Pink", "ieval/Purple", "ieval/Yellow", "ieval/Green"}
    assert all(c.speakers[0] == "user" and 1 <= c.rating <= 4 for c in ieval)
    assert not any(t.startswith("- ") for c in ieval for t in c.texts)
    conture = data.load_conture()
    assert len(conture) == 119 and all(1 <= c.rating <= 5 and c.bot is None for c in conture)
    assert not any(t.startswith(("User:", "Chatbot:")) for c in conture for t in c.texts)


def test_fit_recovers_a_linear_relation_on_standardised_proxies() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3)) * [1.0, 2.0, 0.5] + [0.0, 1.0, -3.0]
    z = (x - x.mean(0)) / x.std(0)
    y = 2.0 * z[:, 0] - 1.0 * z[:, 1] + 3.0
    model = fit.fit(x, y)
    assert model.coefficients == pytest.approx([2.0, -1.0, 0.0], abs=1e-9)
    assert model.intercept == pytest.approx(3.0)
    assert model.predict(x) == pytest.approx(y)
    with_gap = x.copy()
    with_gap[0, 0] = np.nan  # a missing proxy takes the mean, i.e. contributes 0
    assert fit.fit(with_gap, y).predict(np.array([[np.nan, x[1, 1], x[1, 2]]]))[0] == pytest.approx(
        fit.fit(with_gap, y).predict(np.array([[np.nanmean(with_gap[:, 0]), x[1, 1], x[1, 2]]]))[0])
    assert np.linalg.norm(fit.fit(x, y, ridge=100.0).coefficients) < np.linalg.norm(model.coefficients)


def test_leave_bot_out_never_sees_the_held_out_bot() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(90, 2))
    y = x[:, 0] + rng.normal(scale=0.1, size=90)
    bots = ["a"] * 30 + ["b"] * 30 + ["c"] * 30
    first = fit.leave_bot_out(x, y, bots)
    poisoned = y.copy()
    poisoned[:30] += 100.0  # bot a's ratings change: a's own predictions must not move
    second = fit.leave_bot_out(x, poisoned, bots)
    assert second.predictions[:30] == pytest.approx(first.predictions[:30])
    assert not np.allclose(second.predictions[30:], first.predictions[30:])
    stability = fit.coefficient_stability(first.folds, ["x0", "x1"])
    assert stability["x0"]["same_sign"] and stability["x0"]["min"] <= stability["x0"]["mean"] <= stability["x0"]["max"]
    with pytest.raises(ValueError):
        fit.leave_bot_out(x, y, ["a"] * 90)


def _slice(source: Path, target: Path, count: int) -> None:
    records = json.loads(source.read_text(encoding="utf-8"))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(records[:count]), encoding="utf-8")


def _data_slice(root: Path) -> None:
    """root/judgements: the first records of ConvAI2, iEval and ConTurE."""
    judgements = root / "judgements"
    for name in data.CONVAI2_FILES:
        _slice(JUDGEMENTS / "convai2_human_bot" / name, judgements / "convai2_human_bot" / name, 25)
    _slice(JUDGEMENTS / "ieval" / "ieval_data.json", judgements / "ieval" / "ieval_data.json", 1)
    _slice(JUDGEMENTS / "conture" / "data.json", judgements / "conture" / "data.json", 3)


@pytest.mark.data
def test_train_mh_end_to_end_on_a_slice(tmp_path: Path) -> None:
    """A real run on the first records of each data set: artifact, card, docs section, served scorer."""
    from training.mh import report, train

    _data_slice(tmp_path)
    store = tmp_path / "store"
    store.mkdir()
    for component in ("glove-50d", "minilm-l6"):
        (store / component).symlink_to(MODEL_STORE / component, target_is_directory=True)
    docs = tmp_path / "evaluation.md"
    docs.write_text("# Evaluation\n\nintro\n\n<!-- mh:begin -->\nSTALE-SECTION\n<!-- mh:end -->\n\nafter\n")
    arguments = ["--data-dir", str(tmp_path), "--store", str(store), "--out", str(store / "mh"),
                 "--docs", str(docs), "--cache", str(tmp_path / "cache"), "--min-pairs", "1"]
    assert train.main(arguments) == 0
    text = docs.read_text()
    assert "STALE-SECTION" not in text and text.startswith("# Evaluation\n\nintro") and text.rstrip().endswith("after")
    assert "leave-bot-out" in text and "reply length" in text
    report.write_selfplay_docs(docs, {"bot-x": "| bot-x | 3.100 | 3.0..3.2 | 2 x 2 | 0 | `cmd` |"})
    assert train.main(arguments) == 0  # again, from the proxy cache: the self-play rows survive
    assert "| bot-x | 3.100 |" in docs.read_text()
    card = (store / "mh" / "README.md").read_text()
    assert "VADER" in card and "2-core x86_64 CPU, no GPU" in card and "Ghandeharioun" in card
    served = ModelStore(store, models=("mh",))
    assert served.load(), served.failures
    manifest = served.get("mh").manifest
    assert manifest.kind == "dialogue" and set(manifest.uses) == {"glove-50d", "minilm-l6"}
    assert set(manifest.card["coefficient_stability"]) >= {"sentiment", "words", "intercept"}


def test_train_mh_reads_the_data_root_every_command_reads(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """--data-dir, defaulting to DIALSCORE_DATA_DIR, as pretrain, train adem and evaluate read it."""
    import os
    import subprocess
    import sys

    from training.__main__ import main

    env = {**os.environ, "DIALSCORE_DATA_DIR": str(tmp_path / "elsewhere")}
    shown = subprocess.run([sys.executable, "-c", "from training.mh import data; print(data.DEFAULT_ROOT)"],
                           env=env, capture_output=True, text=True, check=True, cwd=MODEL_STORE.parent)
    assert shown.stdout.strip() == str(tmp_path / "elsewhere" / "judgements")
    missing = tmp_path / "nonexist"
    assert main(["train-mh", "--data-dir", str(missing), "--store", str(MODEL_STORE), "--no-write",
                 "--cache", str(tmp_path / "cache")]) == 2
    assert str(missing / "judgements") in capsys.readouterr().err


@pytest.mark.data
def test_vader_reads_every_turn_of_the_fitting_and_transfer_data_whole() -> None:
    """MAX_SENTIMENT_WORDS was cut from 512 to 128 for the service's worst case (service/scorers/mh/proxies.py):
    that changes no fitted or reported figure only while no turn of these sets is longer."""
    from service.scorers.mh import proxies

    emojis = proxies._vader().emojis
    longest = max(len(proxies._with_emoji_described(text, emojis).split())
                  for load in (data.load_convai2, data.load_ieval, data.load_conture)
                  for dialogue in load(min_pairs=1) for text in dialogue.texts)
    assert longest <= proxies.MAX_SENTIMENT_WORDS


def test_ridge_shrinks_the_coefficients_but_never_the_intercept() -> None:
    """z's columns are centred, so least squares with ridge * ||lambda||^2 (intercept not penalised) has
    intercept mean(y) for every ridge and lambda = (Z^T Z + ridge I)^-1 Z^T (y - mean(y))."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(50, 2)) * [1.0, 3.0] + [2.0, -1.0]
    y = 3.0 + x @ np.array([1.0, -0.5]) + rng.normal(scale=0.1, size=50)
    z = (x - x.mean(axis=0)) / x.std(axis=0)
    for ridge in (0.0, 10.0, 1e4):
        model = fit.fit(x, y, ridge=ridge)
        assert model.intercept == pytest.approx(y.mean(), abs=1e-9)
        expected = np.linalg.solve(z.T @ z + ridge * np.eye(2), z.T @ (y - y.mean()))
        assert model.coefficients == pytest.approx(expected, abs=1e-9)


@pytest.mark.data
def test_the_card_of_a_run_follows_the_template(tmp_path: Path) -> None:
    from tests.training.card_checks import SECTIONS, headings
    from training.mh import train
    from training.mh.card import figures, readme

    _data_slice(tmp_path)
    args = argparse.Namespace(data_dir=tmp_path, store=MODEL_STORE, cache=tmp_path / "cache", min_pairs=1,
                                    ridge=0.0, no_write=True, results=None, command_line=["train-mh"])
    text = readme(figures(train.run(args), train.VERSION))
    assert text.startswith("# mh ") and headings(text) == list(SECTIONS)
    assert (MODEL_STORE / "mh" / "README.md").read_text(encoding="utf-8").startswith(f"# mh {train.VERSION}: ")
