"""Baselines against their reference implementations and hand-worked values."""
import numpy as np
import pytest
import sacrebleu
from rouge_score import rouge_scorer

from service.config import SERVICE_RANGES
from service.scorers.base import Item
from service.scorers.baselines.embedding import average_similarity, extrema_similarity, extrema_vector, greedy_similarity


@pytest.fixture(scope="module")
def store(baseline_store):
    from service.store.model_store import ModelStore

    store = ModelStore(baseline_store)
    assert store.load()
    return store


PAIRS = [("the cat sat on the mat", "the cat sat on a mat"), ("i like it", "no way"), ("", "something"),
         ("Hello, World!", "hello world")]


@pytest.mark.parametrize("reply, reference", PAIRS)
def test_bleu4_is_sacrebleu_sentence_bleu(store, reply, reference):
    ours = store.scorers["bleu4"].score([Item(["x"], reply, reference)]).scores[0]
    theirs = sacrebleu.sentence_bleu(reply, [reference], smooth_method="exp", lowercase=True).score / 100
    assert ours == pytest.approx(theirs, abs=1e-12)


@pytest.mark.parametrize("reply, reference", PAIRS)
def test_rouge_l_is_rouge_score_f_measure(store, reply, reference):
    ours = store.scorers["rouge-l"].score([Item(["x"], reply, reference)]).scores[0]
    theirs = rouge_scorer.RougeScorer(["rougeL"]).score(reference, reply)["rougeL"].fmeasure
    assert ours == pytest.approx(theirs, abs=1e-12)


def test_rouge_l_equals_rouge_score_on_long_texts_of_few_distinct_words(store):
    """The LCS is rapidfuzz's, not rouge-score's table: equal on texts where many alignments tie
    (ten distinct words), of every length up to the 2,000-character limit, in one batch."""
    rng = np.random.default_rng(0)
    words = "the a cat sat on mat I'm don't Hello, World!".split()
    pairs = [(" ".join(rng.choice(words, size=n)), " ".join(rng.choice(words, size=m)))
             for n, m in zip(rng.integers(0, 400, 60), rng.integers(0, 400, 60))]
    ours = store.scorers["rouge-l"].score([Item(["x"], reply, reference) for reply, reference in pairs]).scores
    reference_impl = rouge_scorer.RougeScorer(["rougeL"])
    theirs = [reference_impl.score(reference, reply)["rougeL"].fmeasure for reply, reference in pairs]
    assert ours == pytest.approx(theirs, abs=1e-12)
    assert len({round(v, 6) for v in theirs}) > 30  # the texts differ enough to test something


@pytest.mark.parametrize("reply, words", [("", 0), ("hi", 1), ("well, i don't know...", 5), ("  a  b ", 2)])
def test_length_counts_words_not_punctuation(store, reply, words):
    assert store.scorers["length"].score([Item(["x"], reply)]).scores == [float(words)]


def test_length_is_the_true_count_of_the_longest_replies(store, client):
    """A reply of max_chars characters holds up to max_chars words (a CJK character is one): over HTTP and
    offline the score is the count, within the published score_range, whose top no reply under
    the settings' ceiling on max_chars can pass."""
    longest = ["word " * 1999 + "word", "a." * 5000, "字" * 10_000]
    assert [len(text) for text in longest] == [9999, 10_000, 10_000]
    assert store.scorers["length"].score([Item(["x"], text) for text in longest]).scores == [2000.0, 5000.0, 10_000.0]
    answer = client.post("/score", json={"model": "length", "items": [{"context": ["x"], "response": t}
                                                                         for t in longest]}).get_json()
    assert answer["scores"] == [2000.0, 5000.0, 10_000.0]
    assert store.scorers["length"].score([Item(["x"], "word " * 30_000)]).scores == [30_000.0]  # offline: no limit
    [published] = [m["score_range"] for m in client.get("/models").get_json()["models"] if m["name"] == "length"]
    assert published == [0.0, float(SERVICE_RANGES["max_chars"][1])]


def test_embedding_similarities_by_hand():
    a = np.array([[1.0, 0.0], [0.0, 1.0]])
    b = np.array([[1.0, 0.0]])
    assert average_similarity(a, a) == pytest.approx(1.0)
    assert average_similarity(a, b) == pytest.approx(np.sqrt(0.5))
    np.testing.assert_array_equal(extrema_vector(np.array([[1.0, -3.0], [-2.0, 2.0]])), [-2.0, -3.0])
    assert extrema_similarity(b, np.array([[0.0, 1.0]])) == pytest.approx(0.0)
    # greedy: a->b best matches (1, 0) mean 0.5; b->a best 1; average 0.75
    assert greedy_similarity(a, b) == pytest.approx(0.75)
    assert average_similarity(np.zeros((0, 2)), b) == 0.0


def test_embedding_scorers_rank_paraphrase_over_unrelated(store):
    reference = "yeah, the film about turing looks great!"
    close = Item(["x"], "the movie about turing looks good", reference)
    far = Item(["x"], "my car needs new tyres", reference)
    empty = Item(["x"], "", reference)
    for name in ("emb-average", "emb-extrema", "emb-greedy"):
        scores = store.scorers[name].score([close, far, empty]).scores
        assert scores[0] > scores[1] > scores[2] == 0.0, (name, scores)
