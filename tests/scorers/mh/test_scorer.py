"""The `mh` dialogue scorer: regression arithmetic, variants, missing proxies, drift, and the HTTP contract."""
from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

from service.scorers.mh import proxies
from service.store.registry import component_class
from service.artifacts.manifest import read_manifest, write_manifest
from service.artifacts.runtime import Runtime, RuntimeSettings
from service.scorers.base import Dialogue, OptionError, Turn
from service.store.registry import scorer_class
from service.store.model_store import ModelStore
from tests.conftest import MODEL_STORE

COMPONENTS = ("glove-50d", "minilm-l6")

GOOD = Dialogue([Turn("user", "hi! how are you today?"),
                 Turn("bot", "great, thanks! i just came back from a hike. do you like the outdoors?"),
                 Turn("user", "haha yes, i love hiking in the mountains"),
                 Turn("bot", "me too! which mountains do you go to?")])
BAD = Dialogue([Turn("user", "hi"), Turn("bot", "i am a bot"), Turn("user", "you are stupid"),
                Turn("bot", "i am a bot")])


def make_store(root: Path, coefficients: dict[str, float], intercept: float = 3.0,
               names: tuple[str, ...] = proxies.PROXIES, config: dict | None = None,
               ranges: dict[str, tuple[float, float]] | None = None) -> Path:
    """A store with the real components and an mh folder holding the given regression."""
    root.mkdir(parents=True, exist_ok=True)
    for component in COMPONENTS:
        (root / component).symlink_to(MODEL_STORE / component, target_is_directory=True)
    folder = root / "mh"
    folder.mkdir()
    width = len(names)
    regression = {"proxies": list(names), "mean": [0.5] * width, "scale": [0.25] * width,
                  "coefficients": [coefficients.get(n, 0.0) for n in names], "intercept": intercept}
    ranges = ranges or {}
    regression["low"] = [ranges.get(n, (-1e9, 1e9))[0] for n in names]
    regression["high"] = [ranges.get(n, (-1e9, 1e9))[1] for n in names]
    (folder / "regression.json").write_text(json.dumps(regression))
    write_manifest(folder, name="mh", version="test", kind="dialogue", scorer="mh", score_range=(1.0, 5.0),
                   uses=list(COMPONENTS), card={"summary": "test regression"}, config=config)
    return root


def load(root: Path):
    store = ModelStore(root, models=("mh",))
    store.load()
    return store


@pytest.fixture(scope="module")
def components() -> dict:
    """The real components, built once for the module as the store builds them."""
    runtime = Runtime(RuntimeSettings(providers=("CPUExecutionProvider",), intra_op_threads=1))
    return {name: component_class(read_manifest(MODEL_STORE / name).scorer)(read_manifest(MODEL_STORE / name), runtime)
            for name in COMPONENTS}


@pytest.fixture()
def build(tmp_path: Path, components: dict):
    """build(coefficients, intercept) -> an mh scorer on that regression and the real components."""

    def make(coefficients: dict[str, float], intercept: float = 3.0, ranges: dict | None = None):
        root = make_store(tmp_path / f"store{len(list(tmp_path.iterdir()))}", coefficients, intercept,
                          ranges=ranges)
        manifest = read_manifest(root / "mh")
        return scorer_class("mh")(manifest, components, components[COMPONENTS[0]].runtime)

    return make


def test_score_is_the_regression_of_the_proxies(build) -> None:
    mh = build({"question": 1.0}, intercept=2.0)
    # question = 1 (both bot turns ask) -> z = (1 - 0.5) / 0.25 = 2 -> 2 + 2 = 4
    batch = mh.score([GOOD, BAD], {"proxies": True})
    assert batch.scores == pytest.approx([4.0, 1.0])  # BAD: question 0 -> z = -2 -> 0, clipped to 1
    assert batch.details[1]["unclipped"] == pytest.approx(0.0)
    assert set(batch.details[0]["proxies"]) == set(proxies.PROXIES)
    assert mh.score([GOOD]).details is None


def test_a_proxy_beyond_its_fitting_range_counts_at_the_edge(build) -> None:
    # One user turn of "ha" x 1000 set the committed model's score alone (laughter z 18,000).
    laughing = Dialogue([Turn("user", "ha" * 1000), Turn("bot", "ok"), Turn("user", "hi"), Turn("bot", "hello")])
    unbounded = build({"laughter": 0.01}, intercept=2.0)
    held = build({"laughter": 0.01}, intercept=2.0, ranges={"laughter": (0.0, 1.0)})
    assert unbounded.score([laughing], {"proxies": True}).details[0]["unclipped"] > 5
    batch = held.score([laughing], {"proxies": True})
    assert batch.details[0]["proxies"]["laughter"] == 500  # reported as measured
    assert batch.scores == pytest.approx([2.0 + 0.01 * (1.0 - 0.5) / 0.25])  # used at the range's edge


def test_missing_proxies_take_the_training_mean(build) -> None:
    mh = build({"words": 1.0, "semantic_similarity": 1.0}, intercept=2.5)
    bot_only = Dialogue([Turn("bot", "hello, anyone there?")])  # no user turn: both proxies are missing
    batch = mh.score([bot_only], {"proxies": True})
    assert batch.scores == [2.5]
    assert batch.details[0]["proxies"]["words"] is None


def test_variants_change_which_turns_are_read(build) -> None:
    mh = build({"sentiment": 1.0}, intercept=3.0)
    dialogue = Dialogue([Turn("user", "this is awful and i hate it"), Turn("bot", "i love this, it is wonderful"),
                         Turn("user", "terrible, just terrible"), Turn("bot", "great, really great")])
    human_bot, bot_only = (mh.score([dialogue], {"variant": v}).scores[0] for v in ("human-bot", "bot-only"))
    assert human_bot < 3.0  # the user is negative
    selfplay = Dialogue([Turn("bot", t.text) for t in dialogue.turns if t.speaker == "bot"])
    assert mh.score([selfplay], {"variant": "self-play"}).scores[0] == pytest.approx(bot_only)
    assert bot_only > human_bot  # the bot's own utterances, read as the "user" side too, are positive


def test_same_score_alone_and_in_a_batch(build) -> None:
    mh = build({n: 0.1 * (i + 1) for i, n in enumerate(proxies.PROXIES)}, 0.0)
    together = mh.score([GOOD, BAD, GOOD], {}).scores
    alone = [mh.score([d]).scores[0] for d in (GOOD, BAD, GOOD)]
    assert together == pytest.approx(alone, abs=1e-5)


def test_vader_reads_each_distinct_utterance_once_per_request(build, monkeypatch) -> None:
    """In self-play a turn is read up to five times, and VADER's own memo keeps short texts only:
    26 dialogues of 50 long emoji turns took 89 s. Now once per distinct text, same scores."""
    mh = build({n: 0.1 * (i + 1) for i, n in enumerate(proxies.PROXIES)}, 0.0)
    texts = [("\u263a love it " * 30).strip(), ("\u2639 awful " * 30).strip(), ("fine, and you? " * 20).strip()]
    dialogues = [Dialogue([Turn("bot", texts[(t + d) % 3]) for t in range(12)]) for d in range(4)]
    before = mh.score(dialogues, {"variant": "self-play", "proxies": True})
    read: list[str] = []
    counted = proxies.vader

    def counting(text: str):
        read.append(text)
        return counted(text)

    monkeypatch.setattr(proxies, "vader", counting)
    after = mh.score(dialogues, {"variant": "self-play", "proxies": True})
    assert sorted(read) == sorted(texts) and after.scores == before.scores and after.details == before.details


def test_bad_options_are_refused(build) -> None:
    mh = build({"question": 1.0})
    with pytest.raises(OptionError) as caught:
        mh.score([GOOD], {"variant": "B/B"})
    assert "options.variant" in caught.value.fields
    with pytest.raises(OptionError):
        mh.score([GOOD], {"temperature": 1})


def test_regression_fitted_on_other_proxies_is_not_served(tmp_path: Path) -> None:
    store = load(make_store(tmp_path, {}, names=proxies.PROXIES[:-1]))
    assert store.get("mh") is None
    assert "fitted on proxies" in store.failures["mh"]


def test_a_regression_without_its_fitting_ranges_is_not_served_and_says_why(tmp_path: Path) -> None:
    root = make_store(tmp_path, {})
    path = root / "mh" / "regression.json"
    regression = json.loads(path.read_text())
    del regression["low"], regression["high"]
    path.write_text(json.dumps(regression))
    manifest = json.loads((root / "mh" / "manifest.json").read_text())
    manifest["files"]["regression.json"]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (root / "mh" / "manifest.json").write_text(json.dumps(manifest))
    store = load(root)
    assert store.get("mh") is None
    assert "regression.json lacks ['low', 'high']" in store.failures["mh"]

def test_a_different_encoder_than_the_fitted_one_is_logged(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = load(make_store(tmp_path, {}, config={"encoder_files": {"encoder-int8.onnx": "0" * 64}}))
    assert store.get("mh") is not None  # still served: the other ten proxies are unaffected
    assert "fitted on sentence-encoder files" in caplog.text


def test_http_contract_for_dialogue_items(tmp_path: Path) -> None:
    from service.app import create_app

    root = make_store(tmp_path, {"question": 1.0}, intercept=2.0)
    app = create_app({"model_store": root, "load_sync": True, "max_dialogue_turns": 6})
    client = app.test_client()
    listed = {m["name"]: m for m in client.get("/models").get_json()["models"]}
    assert listed["mh"]["kind"] == "dialogue" and listed["mh"]["card"]["summary"] == "test regression"

    def turns(d: Dialogue) -> dict:
        return {"turns": [{"speaker": t.speaker, "text": t.text} for t in d.turns]}

    ok = client.post("/score", json={"model": "mh", "items": [turns(GOOD), turns(BAD)],
                                     "options": {"variant": "human-bot"}})
    assert ok.status_code == 200, ok.get_json()
    assert ok.get_json()["scores"] == pytest.approx([4.0, 1.0])
    no_bot = client.post("/score", json={"model": "mh", "items": [{"turns": [{"speaker": "user", "text": "hi"}]}]})
    assert no_bot.status_code == 422 and no_bot.get_json()["error"]["code"] == "invalid_request"
    # blank turns are dropped before scoring, so a blank bot turn is no bot turn (it was scored)
    for blank in ("", " \n\t", "\u200b\ufeff"):  # invisible characters are blank too (text.is_blank)
        for dialogue in ([{"speaker": "user", "text": "hi"}, {"speaker": "bot", "text": blank}],
                         [{"speaker": "bot", "text": blank}]):
            refused = client.post("/score", json={"model": "mh", "items": [turns(GOOD), {"turns": dialogue}]})
            assert refused.status_code == 422, (blank, dialogue)
            assert "items.1.turns" in refused.get_json()["error"]["details"]
    # "human-bot" with no user turn with text: every proxy reading the user's turns took its training mean,
    # and the score was about the intercept, answered 200 without a word; the bot's turns alone are scored.
    for user in ([], [{"speaker": "user", "text": " "}]):
        bots_only = {"turns": [*user, {"speaker": "bot", "text": "hi there"}, {"speaker": "bot", "text": "do you?"}]}
        refused = client.post("/score", json={"model": "mh", "items": [turns(GOOD), bots_only]})
        assert refused.status_code == 422 and "bot-only" in refused.get_json()["error"]["details"]["items.1.turns"]
        skipped = client.post("/score", json={"model": "mh", "items": [turns(GOOD), bots_only], "on_invalid": "skip"})
        assert skipped.status_code == 200 and skipped.get_json()["skipped"] == [1]
        for variant in ("bot-only", "self-play"):
            scored = client.post("/score", json={"model": "mh", "items": [bots_only], "options": {"variant": variant}})
            assert scored.status_code == 200, scored.get_json()
    empty = client.post("/score", json={"model": "mh", "items": [{"turns": []}]})
    assert empty.status_code == 422
    long = {"turns": [{"speaker": "bot", "text": "hi"}] * 7}
    too_many = client.post("/score", json={"model": "mh", "items": [long]})
    assert too_many.status_code == 413 and too_many.get_json()["error"]["code"] == "too_large"
    bad_option = client.post("/score", json={"model": "mh", "items": [turns(GOOD)], "options": {"variant": "x"}})
    assert bad_option.status_code == 422


def test_committed_artifact_serves_with_its_card() -> None:
    store = ModelStore(MODEL_STORE, models=("mh",))
    store.load()
    mh = store.get("mh")
    assert mh is not None, store.failures
    assert {"coefficient_stability", "correlations", "citation"} <= set(mh.manifest.card)
    scores = mh.score([GOOD, BAD]).scores
    assert all(1.0 <= s <= 5.0 and math.isfinite(s) for s in scores)
    regression = json.loads((MODEL_STORE / "mh" / "regression.json").read_text())
    assert np.all(np.asarray(regression["scale"]) > 0)
