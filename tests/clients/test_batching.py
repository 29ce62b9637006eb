"""Batches over the server's limits: split by the client, joined in the caller's order and indices.

`small_server` takes 4 items, 3 candidates, 2,048-byte bodies, 120 encoder word pieces and 200-character
texts; the joined answer must equal, to the bit, what `server` (default limits) answers for the whole batch.
"""
from __future__ import annotations

import pytest
import requests
from dialscore_client import Client, DialscoreError, InvalidRequest, TooLarge, TransportError
from dialscore_client.batching import Piece, join_scores, plan, refusal_of_the_whole

from tests.clients.conftest import TOKEN
from tests.clients.proxy import proxy

WORDS = ("the a movie hiking tonight weekend sister great really what do you want to go see film i like turtles "
         "no yes maybe cats dogs rain sun tea coffee").split()


def sentence(seed: int, words: int) -> str:
    return " ".join(WORDS[(seed * 7 + k * 3) % len(WORDS)] for k in range(words))


ITEMS = [{"context": [sentence(i, 3 + i % 5), sentence(i + 1, 2 + i % 3)][: 1 + i % 2],
          "response": sentence(i + 2, 1 + i % 7), "reference": sentence(i + 3, 2 + i % 4)} for i in range(11)]
BLANK_CONTEXT = {"context": [], "response": "x", "reference": "y"}
NO_REFERENCE = {"context": ["hello"], "response": "hi"}
NO_REFERENCE_ERROR = "Required, and not blank, by adem (a referenced model)."
OVER_LONG_ERROR = "260 characters; the limit is 200."


@pytest.fixture()
def whole(server):
    """A client of the server with the default limits: every batch here goes in one request."""
    with Client(server.url, retry_deadline=0) as made:
        yield made


@pytest.fixture()
def split(small_server):
    with Client(small_server.url, token=TOKEN, retry_deadline=0) as made:
        yield made


def refused_whole(small_server, path: str, body: dict) -> int:
    return requests.post(small_server.url + path, json=body, timeout=60,
                         headers={"Authorization": f"Bearer {TOKEN}"}).status_code


def test_plan_cuts_at_the_count_and_the_bytes():
    assert plan([10] * 7, envelope=20, max_count=3, max_bytes=None) == [range(0, 3), range(3, 6), range(6, 7)]
    # 20 + 10 + 1 + 10 = 41 bytes fit in 41; a third element would make 52
    assert plan([10] * 5, envelope=20, max_count=None, max_bytes=41) == [range(0, 2), range(2, 4), range(4, 5)]
    assert plan([10, 100, 10], envelope=20, max_count=None, max_bytes=50) == [range(0, 1), range(1, 2), range(2, 3)]
    assert plan([], envelope=20, max_count=3, max_bytes=50) == [range(0, 0)]


def test_chunks_of_two_versions_are_not_joined(server):
    """A roll-out between two chunks: the second answer names another version of the model."""
    answer = requests.post(server.url + "/score", json={"model": "length", "items": ITEMS[:2]}, timeout=60).json()
    pieces = [Piece(0, 2, answer), Piece(2, 4, {**answer, "version": answer["version"] + ".1"})]
    assert join_scores(pieces[:1] + [Piece(2, 4, answer)]).scores == answer["scores"] * 2
    with pytest.raises(DialscoreError) as caught:
        join_scores(pieces)
    assert caught.value.code == "version_changed" and len(caught.value.details["versions"]) == 2


def test_a_chunked_batchs_training_items_come_back_in_the_callers_indices():
    """/score's `trained` indexes each chunk's items; joined, they index the caller's batch."""
    answer = {"model": "m", "version": "1", "scores": [1.0, 2.0]}
    pieces = [Piece(0, 2, {**answer, "trained": [1]}), Piece(2, 4, answer), Piece(4, 6, {**answer, "trained": [0, 1]})]
    assert join_scores(pieces).trained == [1, 4, 5]
    assert join_scores(pieces[1:2]).trained == []


def test_the_limits_are_read_once(small_server):
    with proxy(small_server.port) as hop, Client(hop.url, token=TOKEN, retry_deadline=0) as split:
        split.score("length", ITEMS[:2])
        split.rerank("length", ["hi"], ["hello", "hey"])
        assert split.limits()["max_items"] == 4 and split.limits()["max_body_bytes"] == 2048
        assert [path for method, path, _ in hop.exchanges if method == "GET"] == ["/models"]
        split.limits(refresh=True)
        assert [path for method, path, _ in hop.exchanges if method == "GET"] == ["/models"] * 2


def test_split_by_count_joins_to_the_whole_answer(whole, split, small_server):
    assert refused_whole(small_server, "/score", {"model": "adem", "items": ITEMS}) == 413
    assert split.score("adem", ITEMS) == whole.score("adem", ITEMS)
    several = split.score(["adem", "length"], ITEMS)
    assert several == whole.score(["adem", "length"], ITEMS)
    assert several.results["length"].scores == [float(len(item["response"].split())) for item in ITEMS]


def test_split_by_body_bytes(whole, small_server):
    """Items of about 800 bytes: four are within max_items but over max_body_bytes, so the client sends two
    at a time, measured before sending (no request is refused)."""
    long_items = [{**item, "response": sentence(i, 60)[:190], "context": [sentence(i, 60)[:190]] * 3}
                  for i, item in enumerate(ITEMS[:5])]
    assert refused_whole(small_server, "/score", {"model": "adem", "items": long_items[:4]}) == 413
    with proxy(small_server.port) as hop, Client(hop.url, token=TOKEN, retry_deadline=0) as split:
        assert split.score("adem", long_items) == whole.score("adem", long_items)
    assert hop.exchanges == [("GET", "/models", 200)] + [("POST", "/score", 200)] * 3


def test_a_chunk_over_the_encoders_word_pieces_is_halved(whole, small_server):
    """The client cannot count word pieces; the server's 413 naming `items` makes it send halves."""
    items = [{"context": [sentence(i, 14)], "response": sentence(i + 5, 14)} for i in range(4)]
    with proxy(small_server.port) as hop, Client(hop.url, token=TOKEN, retry_deadline=0) as split:
        assert split.score("autojudge-minilm", items) == whole.score("autojudge-minilm", items)
    assert [status for _, _, status in hop.exchanges] == [200, 413, 200, 200]


def test_skipped_items_are_told_in_the_callers_indices(whole, split):
    # chunks of 4: [0-3] two invalid, [4-7] all invalid (the server refuses such a chunk), [8-10] one invalid
    items = list(ITEMS)
    for i in (1, 3, 9):
        items[i] = NO_REFERENCE
    items[4:8] = [BLANK_CONTEXT, NO_REFERENCE, BLANK_CONTEXT, NO_REFERENCE]
    joined = split.score("adem", items, on_invalid="skip")
    assert joined == whole.score("adem", items, on_invalid="skip")
    assert joined.skipped == [1, 3, 4, 5, 6, 7, 9]
    assert joined.errors["items.6.context"] == "Shorter than minimum length 1."
    assert set(joined.errors) == {"items.1.reference", "items.3.reference", "items.4.context", "items.5.reference",
                                  "items.6.context", "items.7.reference", "items.9.reference"}
    assert split.score(["adem", "length"], items, on_invalid="skip") == whole.score(["adem", "length"], items,
                                                                                      on_invalid="skip")


def test_items_that_are_not_objects_are_skipped_across_chunks_as_in_one_request(whole, split):
    """A chunk whose every item is null (the server names `items.<i>`, no field) is the chunk's own
    problem, not the request's; without skip the error names every such item, as one request does."""
    items = [*ITEMS[:4], None, None, None, None, ITEMS[8]]
    joined = split.score("length", items, on_invalid="skip")
    assert joined == whole.score("length", items, on_invalid="skip") and joined.skipped == [4, 5, 6, 7]
    items[1] = 5
    with pytest.raises(InvalidRequest) as by_chunks:
        split.score("length", items)
    with pytest.raises(InvalidRequest) as at_once:
        whole.score("length", items)
    assert by_chunks.value.details == at_once.value.details and set(at_once.value.details) == {
        "items.1", "items.4", "items.5", "items.6", "items.7"}


def test_human_percentiles_of_chunks_join_in_the_callers_order(whole, split):
    """Chunks of 4 items: [0-3] one skipped, [4-7] all skipped (no answer), [8-10] answered whole."""
    items = [{"context": item["context"], "response": item["response"]} for item in ITEMS]
    items[2] = items[4] = items[5] = items[6] = items[7] = BLANK_CONTEXT
    joined = split.score("unref-minilm", items, on_invalid="skip")
    assert joined == whole.score("unref-minilm", items, on_invalid="skip")
    assert [p is None for p in joined.human_percentile] == [i in (2, 4, 5, 6, 7) for i in range(len(items))]
    assert joined.human_percentile[8:] == split.score("unref-minilm", items[8:]).human_percentile
    several = split.score(["length", "unref-minilm"], items, on_invalid="skip")
    assert several.results["unref-minilm"].human_percentile == joined.human_percentile
    assert several.results["length"].human_percentile is None


def test_nothing_valid_fails_as_the_whole_batch_would(whole, split):
    items = [BLANK_CONTEXT, NO_REFERENCE] * 3
    with pytest.raises(InvalidRequest) as joined:
        split.score("adem", items, on_invalid="skip")
    with pytest.raises(InvalidRequest) as at_once:
        whole.score("adem", items, on_invalid="skip")
    assert joined.value.status == 422 and joined.value.details == at_once.value.details
    assert set(joined.value.details) == {f"items.{i}.{'context' if i % 2 == 0 else 'reference'}" for i in range(6)}
    # one item over small_server's 200 characters, in the middle one of three chunks: 413, as the whole
    # batch would be
    items = [BLANK_CONTEXT, NO_REFERENCE] * 5
    items[4] = {"context": ["hello"], "response": "far too long " * 20, "reference": "y"}
    with pytest.raises(TooLarge) as joined:
        split.score("adem", items, on_invalid="skip")
    assert joined.value.status == 413
    assert joined.value.details["items.4.response"] == "260 characters; the limit is 200."
    assert len(joined.value.details) == 10 and joined.value.details["items.9.reference"].startswith("Required")


def test_an_invalid_item_in_a_later_chunk_is_named_by_its_own_index(whole, split):
    items = list(ITEMS)
    items[9] = NO_REFERENCE
    with pytest.raises(InvalidRequest) as joined:
        split.score("adem", items)
    with pytest.raises(InvalidRequest) as at_once:
        whole.score("adem", items)
    assert joined.value.details == at_once.value.details == {
        "items.9.reference": "Required, and not blank, by adem (a referenced model)."}


OVER_LONG = {"context": ["hello"], "response": "far too long " * 20, "reference": "y"}


def test_a_split_batch_fails_naming_every_invalid_item_as_the_whole_would(whole, split):
    """Invalid items in the first and last of three chunks: the error the whole batch gets, each item named by
    its own index."""
    items = list(ITEMS)
    items[1], items[9] = NO_REFERENCE, BLANK_CONTEXT
    with pytest.raises(InvalidRequest) as joined:
        split.score("adem", items)
    with pytest.raises(InvalidRequest) as at_once:
        whole.score("adem", items)
    assert (joined.value.status, joined.value.details) == (at_once.value.status, at_once.value.details)
    assert joined.value.details == {"items.1.reference": NO_REFERENCE_ERROR,
                                    "items.9.context": "Shorter than minimum length 1."}


def test_a_split_batch_over_the_limits_names_every_item_over_them(split):
    """Items over max_chars in two chunks, an invalid one in a third: 413 naming those over a limit, which
    the server checks first, as it answers a whole batch."""
    items = list(ITEMS)
    items[1], items[6], items[9] = NO_REFERENCE, OVER_LONG, OVER_LONG
    with pytest.raises(TooLarge) as joined:
        split.score("adem", items)
    assert joined.value.status == 413
    assert joined.value.details == {"items.6.response": OVER_LONG_ERROR, "items.9.response": OVER_LONG_ERROR}


def test_a_split_batch_whose_later_chunk_fails_otherwise_names_the_items_found_and_where_checking_ended():
    """A timeout after a refused chunk: the refusal is the answer, saying from which item on none was checked."""
    refused = InvalidRequest(422, "invalid_request", "Some items are invalid.", {"items.1.reference": "Required."})
    over = TooLarge(413, "too_large", "Over the limits.", {"items.6.response": "260 characters."})
    timeout = TransportError(None, "timeout", "No answer in time.")
    error = refusal_of_the_whole([refused, over], unchecked=(8, timeout))
    assert (type(error), error.status, error.details) == (TooLarge, 413, {"items.6.response": "260 characters."})
    assert error.message == str(error).split(": ", 1)[1]
    assert error.message.startswith("Over the limits. (Elements from 8 on were not checked: timeout")
    assert refusal_of_the_whole([refused]).details == refused.details


CONTEXT = ["hi! how was your weekend?"]
CANDIDATES = ["i don't know.", "great, i went hiking with my sister!", "no", "it was fine, and yours?",
              "the weather is nice", "no", "i don't know.", "hiking, and you?"]


@pytest.mark.parametrize("model", ["autojudge-minilm", "length"])
def test_rerank_merges_the_chunks_rankings(whole, split, small_server, model):
    """The duplicates score the same (`length` ties most): ties keep the candidates' order across chunks."""
    body = {"model": model, "context": CONTEXT, "candidates": CANDIDATES}
    assert refused_whole(small_server, "/rerank", body) == 413
    joined = split.rerank(model, CONTEXT, CANDIDATES)
    assert joined == whole.rerank(model, CONTEXT, CANDIDATES)
    assert all((entry.human_percentile is not None) == (model == "autojudge-minilm") for entry in joined.ranking)
    for top_k in (1, 3, 8, 20):
        assert split.rerank(model, CONTEXT, CANDIDATES, top_k=top_k) == whole.rerank(model, CONTEXT, CANDIDATES,
                                                                                      top_k=top_k)


def test_rerank_skips_over_long_candidates_by_their_own_index(whole, split):
    candidates = list(CANDIDATES)
    candidates[4] = candidates[5] = "far too long " * 20  # 260 characters: over small_server's 200
    ranking = split.rerank("length", CONTEXT, candidates, top_k=4, on_invalid="skip")
    assert ranking.skipped == [4, 5]
    assert ranking.errors == {"candidates.4": "260 characters; the limit is 200.",
                              "candidates.5": "260 characters; the limit is 200."}
    kept = [c for c in whole.rerank("length", CONTEXT, candidates).ranking if c.index not in (4, 5)]
    assert ranking.ranking == kept[:4]


def test_rerank_excludes_warned_candidates_in_every_chunk(whole, split):
    """Chunks of four, one of which holds only warned candidates: its empty ranking is no bad answer."""
    candidates = list(CANDIDATES)
    candidates[1], candidates[4:8] = "", ["!!", " ", "...", "\u200b"]
    for top_k in (None, 2):
        ranking = split.rerank("length", CONTEXT, candidates, top_k=top_k, exclude_warned=["empty", "no_words"])
        assert ranking == whole.rerank("length", CONTEXT, candidates, top_k=top_k, exclude_warned=["empty", "no_words"])
        assert [c.index for c in ranking.ranking] == [3, 0, 2][:top_k]
        assert sorted(w["index"] for w in ranking.warnings) == [1, 4, 5, 6, 7]


def test_a_chunked_reranking_orders_by_score_within_the_bound_a_provider_states() -> None:
    """Where scores move with their batch-mates (OpenVINO, CUDA: docs/api.md), each chunk's scores lie
    within a bound of the one-request scores; the joined ranking then misorders no two candidates whose
    one-request scores differ by more than twice that bound."""
    from random import Random

    from dialscore_client.batching import join_rankings

    rng, bound = Random(0), 1e-3
    exact = [round(rng.uniform(0, 1), 3) for _ in range(40)] + [0.5, 0.5 + bound, 0.5 - bound]
    chunks = [range(start, min(start + 8, len(exact))) for start in range(0, len(exact), 8)]
    pieces = [Piece(c.start, c.stop, {"model": "m", "version": "1", "ranking": [
        {"index": i - c.start, "response": str(i), "score": exact[i] + rng.uniform(-bound, bound)} for i in c]})
        for c in chunks]
    ranking = join_rankings(pieces, None).ranking
    assert sorted(entry.index for entry in ranking) == list(range(len(exact)))
    for earlier, later in zip(ranking, ranking[1:]):
        assert earlier.score >= later.score
    for i, earlier in enumerate(ranking):
        assert all(exact[later.index] - exact[earlier.index] <= 2 * bound for later in ranking[i + 1:])


def test_warnings_and_dropped_turns_of_chunks_join_in_the_callers_indices(split):
    candidates = ["sure", "прекрасно", "ok", "fine", "你好"]  # chunks of 3 candidates
    ranking = split.rerank("length", ["one", "two"], candidates)
    assert [(w["index"], w["code"]) for w in ranking.warnings] == [(1, "not_english"), (4, "not_english")]
    assert ranking.context_dropped == 1  # length reads no turn; one is always kept
    items = [{"context": ["a", "b", "c"][: 1 + i % 3], "response": text}
             for i, text in enumerate(["yes", "no", "😀", "maybe", "ok", "да"])]  # chunks of 4 items
    scored = split.score("length", items)
    assert scored.context_dropped == [0, 1, 2, 0, 1, 2]
    assert [(w["index"], w["code"]) for w in scored.warnings] == [(2, "no_words"), (5, "not_english")]
