"""minilm-cosine and the three -minilm heads, served from the committed store."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from service.artifacts.runtime import Runtime, RuntimeSettings
from service.components.cache import EncodeCache
from service.scorers.base import Item
from service.store.model_store import ModelStore

STORE = Path(__file__).resolve().parents[2] / "model_store"
TRAINED = ("adem-minilm", "ruber-minilm", "autojudge-minilm")
MODELS = ("minilm-cosine", *TRAINED)

ITEMS = [
    Item(["hey, what do you want to do tonight?", "why don't we go see a movie?"],
         "nah, let's do something active.", "yeah, the film about turing looks great!"),
    Item(["could you pass me the salt?"], "sure, here you go.", "of course, here it is."),
    Item(["where did you go on holiday?", "we went to spain for two weeks.", "how was the weather?"],
         "it was sunny and hot every day.", "lovely, not a single cloud."),
]


@pytest.fixture(scope="module")
def store() -> ModelStore:
    runtime = Runtime(RuntimeSettings(providers=("CPUExecutionProvider",), intra_op_threads=1))
    loaded = ModelStore(STORE, runtime, MODELS)
    loaded.load()
    assert not loaded.failures, loaded.failures
    return loaded


def test_minilm_cosine_is_the_mean_of_its_two_cosines(store: ModelStore) -> None:
    scorer = store.scorers["minilm-cosine"]
    encoder = scorer.encoder
    batch = scorer.score(ITEMS)
    for item, score, details in zip(ITEMS, batch.scores, batch.details):
        reply, reference, last = encoder.encode([item.response, item.reference, item.context[-1]])
        assert details["s_ref"] == pytest.approx(float(reply @ reference), abs=1e-6)
        assert details["s_context"] == pytest.approx(float(reply @ last), abs=1e-6)
        assert score == pytest.approx((details["s_ref"] + details["s_context"]) / 2, abs=1e-6)


def test_copying_the_last_turn_maxes_the_context_part(store: ModelStore) -> None:
    item = Item(["how was the weather?"], "how was the weather?", "sunny.")
    details = store.scorers["minilm-cosine"].score([item]).details[0]
    assert details["s_context"] == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("name", MODELS)
def test_scores_do_not_depend_on_the_batch(store: ModelStore, name: str) -> None:
    scorer = store.scorers[name]
    together = scorer.score(ITEMS).scores
    alone = [scorer.score([item]).scores[0] for item in ITEMS]
    np.testing.assert_allclose(together, alone, atol=1e-5)
    low, high = scorer.manifest.score_range
    if name != "minilm-cosine":
        assert all(np.isfinite(together))
    else:
        assert all(low - 1e-6 <= s <= high + 1e-6 for s in together)


@pytest.mark.parametrize("name", TRAINED)
def test_the_batched_path_cuda_takes_gives_the_per_item_scores(store: ModelStore, name: str) -> None:
    """On CUDA a head runs the whole batch at once (Session.on_cuda); here that path runs on a CPU
    session, so a slip in packing contexts of different lengths together would show."""
    scorer = store.scorers[name]
    items = [*ITEMS, Item(["one turn only"], "a reply", "a reference"), ITEMS[2]]
    per_item = scorer.score(items, cache=EncodeCache()).scores
    try:
        scorer.session.on_cuda = True
        batched = scorer.score(items, cache=EncodeCache()).scores
    finally:
        scorer.session.on_cuda = False
    np.testing.assert_allclose(batched, per_item, atol=1e-5)


def test_one_encoder_pass_for_all_models(store: ModelStore) -> None:
    """Scoring one request with every MiniLM model encodes each distinct utterance once."""
    cache = EncodeCache()
    for name in (*MODELS, "minilm-cosine"):  # minilm-cosine twice: a second model on the same texts
        store.scorers[name].score(ITEMS, None, cache)
    distinct = {t for item in ITEMS for t in (*item.context, item.response, item.reference)}
    for name in MODELS:
        encoding = store.scorers[name].manifest.config.get("context_encoding", "last")
        if encoding.startswith("joined"):
            k = int(encoding[len("joined"):])
            distinct |= {" ".join(item.context[-k:]) for item in ITEMS}
    assert cache.misses <= len(distinct)
    assert cache.misses == len({key for key in cache._vectors})
    assert cache.hits > 0


def test_ruber_minilm_blends_and_components(store: ModelStore) -> None:
    scorer = store.scorers["ruber-minilm"]
    parts = scorer.score(ITEMS, {"components": True, "blend": "min"})
    for score, details in zip(parts.scores, parts.details):
        assert 0.0 <= details["s_ref"] <= 1.0 and 0.0 <= details["s_unref"] <= 1.0
        assert score == pytest.approx(min(details["s_ref"], details["s_unref"]))
    arithmetic = scorer.score(ITEMS, {"blend": "arithmetic", "components": True})
    for score, details in zip(arithmetic.scores, arithmetic.details):
        assert score == pytest.approx((details["s_ref"] + details["s_unref"]) / 2)
    with pytest.raises(ValueError):
        scorer.score(ITEMS, {"blend": "median"})


def test_adem_minilm_details_are_the_terms_of_its_score(store: ModelStore) -> None:
    """The contract's adem example answers details {s_ref, s_unref}: adem-minilm's are its graph's terms,
    and with the copy penalty and config's alpha and beta they give back the score (inside the band
    the soft bound leaves alone)."""
    from service.scorers.base import soft_bound

    scorer = store.scorers["adem-minilm"]
    batch = scorer.score(ITEMS)
    alpha, beta = scorer.manifest.config["alpha"], scorer.manifest.config["beta"]
    recomposed = [alpha + beta * (d["s_unref"] + d["s_ref"] - d["copy_penalty"]) for d in batch.details]
    assert batch.scores == pytest.approx(list(soft_bound(np.array(recomposed), 1.0, 5.0)), abs=1e-5)
    copy = scorer.score([Item(ITEMS[1].context, ITEMS[1].context[-1], ITEMS[1].reference)]).details[0]
    assert copy["copy_penalty"] > 0 and batch.details[1]["copy_penalty"] == 0  # a copy of the last turn pays
    other_reference = scorer.score([Item(ITEMS[0].context, ITEMS[0].response, ITEMS[1].reference)]).details[0]
    assert other_reference["s_unref"] == pytest.approx(batch.details[0]["s_unref"], abs=1e-6)
    assert other_reference["s_ref"] != pytest.approx(batch.details[0]["s_ref"], abs=1e-3)


@pytest.mark.parametrize("name", [m for m in MODELS if m != "minilm-cosine"])
def test_trained_heads_prefer_the_human_reply_to_degenerate_ones(store: ModelStore, name: str) -> None:
    scorer = store.scorers[name]
    context = ["i'm thinking of getting a dog.", "what kind of dog?"]
    human = Item(context, "probably a labrador, they're so friendly with kids.", "maybe a small terrier.")
    bad = [Item(context, text, human.reference) for text in ("", "what kind of dog?", "i don't know.")]
    scores = scorer.score([human, *bad]).scores
    assert scores[0] > max(scores[1:])


def test_ruber_minilm_normalises_each_part_with_its_own_calibrated_range(store: ModelStore) -> None:
    """RUBER's eq. 8 by hand: (x - lo) / (hi - lo) clipped to [0, 1], with s_ref's range for s_ref and
    s_unref's for s_unref (manifest config `normalise`)."""
    scorer = store.scorers["ruber-minilm"]
    raw = scorer._run(ITEMS, EncodeCache())
    ranges = scorer.manifest.config["normalise"]
    assert ranges["s_ref"] != ranges["s_unref"]  # otherwise the test could not tell them apart
    details = scorer.score(ITEMS, {"components": True}).details
    for part in ("s_ref", "s_unref"):
        lo, hi = ranges[part]
        expected = np.clip((raw[part].astype(np.float64) - lo) / (hi - lo), 0.0, 1.0)
        assert [d[part] for d in details] == pytest.approx(list(expected), abs=1e-9), part


SENTENCE_HEADS = sorted(p for name in (*TRAINED, "unref-minilm", "unref-minilm-commercial", "unref-mpnet",
                                       "unref-mpnet-minilm") for p in (STORE / name).glob("*head.onnx"))


@pytest.mark.parametrize("path", SENTENCE_HEADS, ids=lambda p: f"{p.parent.name}/{p.name}")
@pytest.mark.parametrize("threads", [1, 2])
def test_every_served_head_gives_a_row_its_own_bits_in_a_batch_of_equal_widths(path: Path, threads: int) -> None:
    """What lets rows of equal context width share a run (Session.batch_exact): in a batch of 1 to 64 rows,
    each row's outputs are the bits it gets run alone, at one turn and at three."""
    session = Runtime(RuntimeSettings(providers=("CPUExecutionProvider",), intra_op_threads=threads)).session(path)
    dim = session.inputs["response"].shape[-1]
    rng = np.random.default_rng(5)
    for width in (1, 3):
        vectors = rng.standard_normal((64, width + 2, dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=-1, keepdims=True)
        feeds = {"context": vectors[:, :width], "context_mask": np.ones((64, width), np.float32),
                 "response": vectors[:, width]}
        if "reference" in session.inputs:
            feeds["reference"] = vectors[:, width + 1]
        alone = [session.run({k: v[i:i + 1] for k, v in feeds.items()}) for i in range(64)]
        for rows in range(1, 65):
            together = session.run({k: v[:rows] for k, v in feeds.items()})
            for k, output in enumerate(together):
                np.testing.assert_array_equal(output, np.concatenate([row[k] for row in alone[:rows]]))


def test_a_lone_re_ranking_runs_each_head_once(store: ModelStore) -> None:
    """The probe at load held on this CPU, so a context's candidates share one run of the head, with
    the scores they get run one at a time."""
    scorer = store.scorers["autojudge-minilm"]
    assert scorer.session.batch_exact
    items = [Item(ITEMS[0].context, f"candidate reply number {i}") for i in range(9)]
    runs = []
    run = scorer.session._run
    try:
        scorer.session._run = lambda feeds, outputs=None: runs.append(len(feeds["response"])) or run(feeds, outputs)
        together = scorer.score(items, cache=EncodeCache()).scores
        assert runs == [9]
        scorer.session.batch_exact = False
        assert scorer.score(items, cache=EncodeCache()).scores == together
        assert runs[1:] == [1] * 9
    finally:
        scorer.session._run = run
        scorer.session.batch_exact = True
