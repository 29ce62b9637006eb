"""The reference-free models: RUBER's s_U served alone, and the stacked combination's signals and score."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from service.components.cache import EncodeCache
from service.scorers.base import Call, Item
from service.scorers.unref.signals import (copied_bigrams, copied_words, copy_excess, cos_mean, distinct_ratio, logit,
                                          repeated_bigrams, text_signal, turns_of)
from service.artifacts.manifest import write_manifest
from service.store.model_store import ModelStore
from tests.conftest import MODEL_STORE, copy_store

ITEMS = [
    Item(["hey, what do you want to do tonight?", "why don't we go see a movie?"], "nah, let's do something active."),
    Item(["where is the station?"], "go straight and turn left at the bank."),
    Item(["do you like cats?"], "the stock market fell by two percent today."),
    Item(["hi"], ""),
    Item(["i love jazz.", "me too!", "who is your favourite?"], "who is your favourite?"),
]
PARTS = ("ruber", "ruber-minilm", "minilm-cosine")  # the referenced models with a reference-free part


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> ModelStore:
    names = (*PARTS, "adem-minilm")
    store = ModelStore(copy_store(tmp_path_factory.mktemp("unref"), names))
    assert store.load(), store.failures
    return store


def test_signals_by_hand():
    turns = np.array([[1.0, 0.0], [0.0, 1.0]])
    reply = np.array([0.6, 0.8])
    assert cos_mean(reply, turns, 1) == pytest.approx(0.8)
    assert cos_mean(reply, turns, 2) == pytest.approx((0.6 + 0.8) / np.sqrt(2))
    assert copy_excess(reply, turns, 0.75) == pytest.approx(0.05)
    assert copy_excess(reply, turns, 0.9) == 0.0
    assert distinct_ratio("yes yes yes no") == 0.5 and distinct_ratio("?!") == 0.0
    assert repeated_bigrams("food food food food food") == pytest.approx(3 / 4)
    assert repeated_bigrams("how was it? how was it?") == pytest.approx(2 / 5)  # punctuation left out
    assert repeated_bigrams("it was great, i went hiking!") == 0.0 and repeated_bigrams("yes") == 0.0
    spec = {"name": "repetition", "source": "repeated_bigrams", "threshold": 0.5}
    assert text_signal(spec, "food food food food food", []) == pytest.approx(0.25)
    assert text_signal(spec, "how was it? how was it?", []) == 0.0
    turns = ["how was it?", "it was fine. and yours?"]
    # the smaller of the two shares, edges included: a turn said twice misses only the joining bigram
    assert copied_bigrams("how was it? how was it?", turns) == pytest.approx(6 / 7)
    assert copied_bigrams("it was fine.", turns) == 1.0  # a sentence of a turn, said again
    assert copied_bigrams("it was great", turns) == pytest.approx(2 / 4)  # half of its bigrams, half of the turn's
    assert copied_bigrams("it", turns) == pytest.approx(1 / 4) and copied_bigrams("cheese", turns) == 0.0
    assert copied_bigrams("hello!", ["hello"]) == 1.0 and copied_bigrams("?", ["hello"]) == 0.0
    # on words, blind to their order: a turn said in another order is the copy copied_bigrams misses
    assert copied_words("was how it?", turns) == 1.0 and copied_bigrams("was how it?", turns) == 0.25
    assert copied_words("it was great", turns) == pytest.approx(2 / 3)  # 2 of its 3 words, 2 of "it was fine."
    assert copied_words("cheese", turns) == 0.0 and copied_words("?", turns) == 0.0
    copy = {"name": "copied", "source": "copied_bigrams", "turns": 1, "threshold": 0.5}
    assert text_signal(copy, "how was it? how was it?", turns) == 0.0  # the last turn alone holds none of it
    assert text_signal(copy, "it was fine. it was fine.", turns) == pytest.approx(6 / 7 - 0.5)
    np.testing.assert_allclose(logit(np.array([0.5, 0.9])), [0.0, np.log(9)])
    assert np.isfinite(logit(np.array([0.0, 1.0]))).all()  # clipped, never infinite
    assert turns_of([]) == [""] and turns_of([str(i) for i in range(9)]) == ["4", "5", "6", "7", "8"]


@pytest.mark.parametrize("name", PARTS)
def test_a_part_is_its_models_reference_free_term_and_reads_no_reference(store: ModelStore, name: str):
    model = store.scorers[name]
    part = Call(model, model.resolve_options({"reference_free": True}))
    assert model.kind == "referenced" and model.reads_reference and model.has_reference_free_part
    assert part.kind == "unreferenced" and not part.reads_reference and part.name == name
    for whole in (Call(model, model.resolve_options({"reference_free": False})), Call(model, model.resolve_options(None))):
        assert whole.kind == "referenced" and whole.reads_reference
    with pytest.raises(ValueError):
        model.resolve_options({"reference_free": "yes"})
    scores = part.score(ITEMS, {"reference_free": True}).scores
    with_reference = [Item(i.context, i.response, "a reference it must not read.") for i in ITEMS]
    assert part.score(with_reference, {"reference_free": True}).scores == scores
    # the whole model asked the same way answers with the part, whatever the reference
    assert model.score(with_reference, {"reference_free": True}).scores == scores
    assert model.score(with_reference).scores != scores
    if name == "ruber":  # the classic ruber's raw s_U, before its min-max normalisation
        expected = model.unreferenced(ITEMS, EncodeCache())
    elif name == "ruber-minilm":  # its head's output s_unref, whatever the reference
        expected = model._run([Item(i.context, i.response, "anything") for i in ITEMS], EncodeCache())["s_unref"]
    else:  # the context cosine of the whole score's details
        expected = [d["s_context"] for d in model.score(with_reference).details]
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-6)
    if name != "minilm-cosine":
        assert all(0.0 < s < 1.0 for s in scores)


def test_models_without_a_reference_free_part_offer_no_option(store: ModelStore):
    """ADEM's c^T M r_hat is trained only jointly with its reference term: no part is offered."""
    model = store.scorers["adem-minilm"]
    assert not model.has_reference_free_part and Call(model, {"reference_free": True}).reads_reference
    with pytest.raises(ValueError):
        model.resolve_options({"reference_free": True})
    assert store.with_reference_free_part() == ["minilm-cosine", "ruber", "ruber-minilm"]


def combination_folder(store_root: Path, signals: list[dict], bias: float = 3.0, uses: tuple = ("minilm-l6",),
                       heads: dict[str, Path] | None = None) -> Path:
    """A store folder of the unref-combination scorer with these signals (and head graphs, copied in)."""
    folder = store_root / "stacked"
    folder.mkdir(parents=True, exist_ok=True)
    for filename, source in (heads or {}).items():
        shutil.copyfile(source, folder / filename)
    write_manifest(folder, name="stacked", version="1", kind="unreferenced", scorer="unref-combination",
                   score_range=(1.0, 5.0), uses=list(uses), config={"signals": signals, "bias": bias})
    return folder


def test_a_combination_is_its_bias_plus_weighted_z_scores_of_the_signals(tmp_path: Path):
    root = copy_store(tmp_path / "store", ("autojudge-minilm",))
    signals = [{"name": "aj", "source": "head", "head": "aj.onnx", "encoder": "minilm-l6", "output": "score",
                "mean": 3.0, "sd": 0.5, "weight": 0.3},
               {"name": "cos", "source": "cos_mean", "encoder": "minilm-l6", "turns": 2, "mean": 0.2, "sd": 0.2,
                "weight": 0.2},
               {"name": "copy", "source": "copy_excess", "encoder": "minilm-l6", "turns": 5, "threshold": 0.75,
                "mean": 0.0, "sd": 0.01, "weight": -0.05},
               {"name": "len", "source": "log_length", "mean": 2.3, "sd": 0.6, "weight": -0.04},
               {"name": "copied", "source": "copied_bigrams", "turns": 5, "threshold": 0.5, "mean": 0.0, "sd": 0.05,
                "weight": -0.1},
               {"name": "repeated", "source": "repeated_bigrams", "threshold": 0.2, "mean": 0.0, "sd": 0.03,
                "weight": -0.1}]
    combination_folder(root, signals, heads={"aj.onnx": MODEL_STORE / "autojudge-minilm" / "head.onnx"})
    store = ModelStore(root, models=("stacked", "autojudge-minilm"))
    assert store.load(), store.failures
    scorer, autojudge = store.scorers["stacked"], store.scorers["autojudge-minilm"]
    batch = scorer.score(ITEMS, {"signals": True})
    raw = np.array([[d[s["name"]] for s in signals] for d in batch.details])
    np.testing.assert_allclose(raw[:, 0], autojudge.score(ITEMS).scores, atol=1e-6)  # the head as served alone
    assert raw[4, 2] > 0.2 and raw[0, 2] == 0.0  # the last item repeats a context turn
    assert raw[4, 4] == pytest.approx(0.5) and raw[0, 4] == 0.0  # ... word for word: the text signal sees it too
    z = (raw - [s["mean"] for s in signals]) / [s["sd"] for s in signals]
    expected = 3.0 + z @ [s["weight"] for s in signals]
    lo, hi = 1.0, 5.0  # inside the range the soft bound leaves a score as it is
    inside = (expected > lo + 0.2) & (expected < hi - 0.2)
    np.testing.assert_allclose(np.asarray(batch.scores)[inside], expected[inside], atol=1e-6)
    alone = [scorer.score([item]).scores[0] for item in ITEMS]
    assert alone == batch.scores  # a score does not depend on its batch


@pytest.mark.parametrize("bad,why", [({"source": "nonsense"}, "unknown signal source"),
                                     ({"source": "cos_mean", "encoder": "mpnet-base", "turns": 1}, "not in `uses`"),
                                     ({"source": "log_length", "sd": 0.0}, "sd must be above 0"),
                                     ({"source": "copied_bigrams"}, "lacks ['turns']")])
def test_a_bad_signal_fails_that_model_only(tmp_path: Path, bad: dict, why: str):
    root = copy_store(tmp_path / "store", ("minilm-cosine",))
    combination_folder(root, [{"name": "x", "source": "log_length", "mean": 0.0, "sd": 1.0, "weight": 1.0, **bad}])
    store = ModelStore(root)
    store.load()
    assert "stacked" in store.failures and why in store.failures["stacked"]
    assert "minilm-cosine" in store.scorers


def test_a_request_encodes_every_text_it_reads_in_one_encoder_call(tmp_path: Path):
    """The heads read the last turn, the vector signals the last two: both turns and the replies go
    through the encoder together, not the earlier turn in a run of its own."""
    store = ModelStore(copy_store(tmp_path / "store", ("unref-minilm",)), models=("unref-minilm",))
    assert store.load(), store.failures
    scorer = store.scorers["unref-minilm"]
    encoder = scorer.components["minilm-l6"]
    calls: list[list[str]] = []
    encode = encoder._encode
    encoder._encode = lambda texts, cache: calls.append(list(texts)) or encode(texts, cache)
    context = ["hey, what do you want to do tonight?", "why don't we go see a movie?"]
    replies = ["sure, when?", "nah, let's do something active.", "why don't we go see a movie?"]
    cache = EncodeCache()
    batch = scorer.score([Item(context, reply) for reply in replies], cache=cache)
    assert [sorted(texts) for texts in calls] == [sorted({*context, *replies})]
    encoder._encode = encode
    assert batch.scores == scorer.score([Item(context, reply) for reply in replies]).scores


def test_a_stacks_head_graphs_are_among_its_sessions(tmp_path: Path):
    """GET /models' providers and bit_exact_across_batches read every session: where the encoder runs on
    OpenVINO, the head graphs still run on the CPU EP, and `providers` must say so."""
    store = ModelStore(copy_store(tmp_path, ("unref-minilm",)))
    assert store.load(), store.failures
    stack = store.scorers["unref-minilm"]
    assert stack.heads and all(any(runner.session is s for s in stack._sessions()) for runner in stack.heads.values())
