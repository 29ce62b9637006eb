"""dialscore_client.Client against the real service (gunicorn, the committed models): each answer is the
server's own, read as the contract names it."""
from __future__ import annotations

import math

import pytest
import requests
from dialscore_client import Client, InvalidRequest, MultiScoreResult, RankedCandidate, ScoreResult, TooLarge

from tests.clients.conftest import SERVED
from tests.clients.fixed_server import answering

ITEMS = [
    {"context": ["hey, what do you want to do tonight?", "why don't we go see a movie?"],
     "response": "nah, let's do something active.", "reference": "yeah, the film about turing looks great!"},
    {"context": ["how was your weekend?"], "response": "great, i went hiking with my sister!",
     "reference": "it was fine, i stayed in."},
    {"context": ["do you like cats?", "i do", "what about dogs?"], "response": "dogs are great too.",
     "reference": "i prefer cats."},
]
CONTEXT = ["hi! how was your weekend?"]
CANDIDATES = ["i don't know.", "great, i went hiking with my sister!", "no", "it was fine, and yours?",
              "the weather is nice"]


def post(server, path: str, body: dict) -> dict:
    """The server's own answer, without the client."""
    answer = requests.post(server.url + path, json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.json()


@pytest.fixture()
def client(server):
    with Client(server.url, retry_deadline=0) as made:
        yield made


def test_models_lists_what_the_server_serves_and_its_limits(client):
    served = client.models()
    assert served.names() == sorted(SERVED.split(","))
    adem = next(m for m in served.models if m.name == "adem")
    assert adem.kind == "referenced" and adem.requires == ["context", "response", "reference"]
    assert adem.score_range == (1.0, 5.0) and len(adem.sha256) == 64 and adem.card["citation"]
    assert served.limits["max_items"] == 512 and served.limits["max_candidates"] == 64
    assert served.loading is False and served.failed == {}
    assert client.limits() == served.limits
    terms = {m.name: (m.license, m.commercial_use) for m in served.models}
    assert terms["length"] == ("MIT", True) and terms["unref-minilm"][1] is False


def test_models_keeps_every_field_the_server_describes(server, client):
    """Per model its components, what it uses, its batch bound, bit-exactness and training keys; not_built as the
    server's."""
    described = requests.get(server.url + "/models", timeout=60).json()
    served = client.models()
    assert served.not_built == described["not_built"]
    for info, raw in zip(served.models, described["models"], strict=True):
        assert (info.uses, info.components) == (raw["uses"], raw["components"])
        assert (info.batch_bound, info.bit_exact_across_batches) == (raw["batch_bound"],
                                                                    raw["bit_exact_across_batches"])
        assert info.trained_items == raw["trained_items"] and (info.trained_items is None) == (info.name in (
            "length", "mh"))
    minilm = next(m for m in served.models if m.name == "unref-minilm")
    assert minilm.uses and minilm.components[0]["name"] == minilm.uses[0]


def test_models_names_the_models_not_built():
    """A server without an encoder built lists the models that need it under not_built (docs/api.md)."""
    reason = "needs mpnet-base, which is not built (make encoder-mpnet)"
    answer = {"models": [], "limits": {}, "failed": {}, "not_built": {"unref-mpnet": reason}, "loading": False}
    with answering({"/models": answer}) as url, Client(url, retry_deadline=0) as client:
        assert client.models().not_built == {"unref-mpnet": reason}


def test_a_long_context_is_cut_by_default_and_unreadable_replies_are_warned(client):
    """The client sends on_long_context="keep_last" unless told otherwise: an 80-turn context is re-ranked on
    the turns the model reads; a chunked batch's warnings come back in the caller's indices."""
    context = [f"turn {i}: and then we talked about hiking" for i in range(80)]
    ranking = client.rerank("unref-minilm", context, [*CANDIDATES, "прекрасно!"])
    assert ranking.context_dropped == 75 and len(ranking.ranking) == len(CANDIDATES) + 1
    assert [(w["index"], w["code"]) for w in ranking.warnings] == [(len(CANDIDATES), "not_english")]
    with pytest.raises(TooLarge):
        client.rerank("unref-minilm", context, CANDIDATES, on_long_context="reject")
    items = [{"context": context, "response": text} for text in ("sure!", "我们去爬山吧", "😀")]
    scored = client.score("length", items)
    assert scored.context_dropped == [79, 79, 79]
    assert [(w["index"], w["code"]) for w in scored.warnings] == [(1, "not_english"), (2, "no_words")]


def test_score_one_model_is_the_servers_answer(server, client):
    expected = post(server, "/score", {"model": "adem", "items": ITEMS})
    result = client.score("adem", ITEMS)
    assert isinstance(result, ScoreResult)
    assert (result.model, result.version) == ("adem", expected["version"])
    assert result.scores == expected["scores"] and result.details == expected["details"]
    assert result.skipped == [] and result.errors == {}
    assert all(1.0 <= s <= 5.0 for s in result.scores)


def test_score_options_are_passed_on(client):
    plain = client.score("ruber", ITEMS)
    blended = client.score("ruber", ITEMS, options={"blend": "min", "components": True})
    assert plain.details is None and blended.details is not None
    assert blended.scores == [min(d["s_ref"], d["s_unref"]) for d in blended.details]


def test_score_several_models_joins_each_models_answer(server, client):
    expected = post(server, "/score", {"models": ["adem", "length"], "items": ITEMS})
    result = client.score(["adem", "length"], ITEMS)
    assert isinstance(result, MultiScoreResult)
    assert result.models == ["adem", "length"] and result.version == expected["version"]
    for name in ("adem", "length"):
        assert result.results[name].scores == expected["results"][name]["scores"]
        assert result.results[name].version == expected["results"][name]["version"]
    assert result.results["adem"].scores == client.score("adem", ITEMS).scores


def test_score_a_dialogue_model(client):
    dialogue = {"turns": [{"speaker": "user", "text": "hi, how are you?"},
                          {"speaker": "bot", "text": "great! i just got back from a hike."},
                          {"speaker": "user", "text": "where did you go?"},
                          {"speaker": "bot", "text": "up the hill behind my house."}]}
    result = client.score("mh", [dialogue, dialogue])
    assert result.scores[0] == result.scores[1] and 1.0 <= result.scores[0] <= 5.0


def test_skip_keeps_the_valid_items_and_names_the_others(server, client):
    items = [ITEMS[0], {"context": [], "response": "x", "reference": "y"}, ITEMS[1],
             {"context": ["a"], "response": "b"}]
    result = client.score("adem", items, on_invalid="skip")
    assert result.skipped == [1, 3]
    assert set(result.errors) == {"items.1.context", "items.3.reference"}
    assert result.scores[1] is None and result.scores[3] is None
    assert result.scores[0] == client.score("adem", [ITEMS[0]]).scores[0]
    assert result.details is not None and result.details[1] is None


def test_rerank_ranks_best_first_and_keeps_top_k(server, client):
    body = {"model": "autojudge-minilm", "context": CONTEXT, "candidates": CANDIDATES}
    expected = post(server, "/rerank", body)["ranking"]
    ranking = client.rerank("autojudge-minilm", CONTEXT, CANDIDATES)
    assert ranking.ranking == [RankedCandidate(e["index"], e["response"], e["score"], e["human_percentile"])
                               for e in expected]
    assert [c.score for c in ranking.ranking] == sorted((c.score for c in ranking.ranking), reverse=True)
    top = client.rerank("autojudge-minilm", CONTEXT, CANDIDATES, top_k=2)
    assert top.ranking == ranking.ranking[:2] and top.version == ranking.version


def test_rerank_leaves_out_the_warned_candidates_it_is_asked_to(server, client):
    body = {"model": "length", "context": CONTEXT, "candidates": ["", "hello there, friend", "!!", "ok"],
            "exclude_warned": ["empty", "no_words"]}
    ranking = client.rerank("length", CONTEXT, body["candidates"], exclude_warned=("empty", "no_words"))
    served = [e["index"] for e in post(server, "/rerank", body)["ranking"]]
    assert [c.index for c in ranking.ranking] == served == [1, 3]
    assert [(w["index"], w["code"]) for w in ranking.warnings] == [(0, "empty"), (2, "no_words")]
    with pytest.raises(InvalidRequest, match="exclude_warned"):
        client.rerank("length", CONTEXT, body["candidates"], exclude_warned="empty")  # type: ignore[arg-type]


def test_human_percentile_is_the_servers_where_the_model_has_one(server, client):
    """unref-minilm ships human_percentile.json; length does not, and its answers carry none."""
    items = [{**item, "reference": None} for item in ITEMS] + [{"context": [], "response": "x"}]
    expected = post(server, "/score", {"model": "unref-minilm", "items": items, "on_invalid": "skip"})
    scored = client.score("unref-minilm", items, on_invalid="skip")
    assert scored.human_percentile == expected["human_percentile"]
    assert scored.human_percentile[3] is None and all(0 <= p <= 1 for p in scored.human_percentile[:3])
    several = client.score(["unref-minilm", "length"], items, on_invalid="skip")
    assert several.results["unref-minilm"].human_percentile == expected["human_percentile"]
    assert several.results["length"].human_percentile is None and client.score("length", ITEMS).human_percentile is None
    body = {"model": "unref-minilm", "context": CONTEXT, "candidates": CANDIDATES}
    ranked = client.rerank("unref-minilm", CONTEXT, CANDIDATES)
    assert [c.human_percentile for c in ranked.ranking] == [e["human_percentile"]
                                                            for e in post(server, "/rerank", body)["ranking"]]
    assert all(c.human_percentile is None for c in client.rerank("length", CONTEXT, CANDIDATES).ranking)


def test_rerank_with_a_reference_model(client):
    ranking = client.rerank("ruber", CONTEXT, CANDIDATES, reference="it was great, i went hiking!")
    assert sorted(c.index for c in ranking.ranking) == list(range(len(CANDIDATES)))


def test_correlate(server, client):
    human = [3.0, 4.5, 1.0, 2.0, 5.0, 3.5, 2.0, 1.0, 4.0]
    scores = {"adem": [2.9, 4.0, 1.7, 2.5, 4.4, 3.0, 1.0, 2.0, 3.0], "bleu4": [.1, 0, .2, .3, .1, .4, .2, .5, .1]}
    systems = ["a", "b", "c"] * 3
    report = client.correlate(human, scores, systems=systems, methods=["pearson", "spearman"], resamples=200, seed=1)
    expected = post(server, "/correlate", {"human": human, "scores": scores, "systems": systems,
                                           "methods": ["pearson", "spearman"], "resamples": 200, "seed": 1})
    assert report == expected
    item = report["metrics"]["adem"]["item"]["pearson"]
    assert item["n"] == 9 and item["r"] is not None and math.isclose(item["r"], 0.8786, abs_tol=1e-3)
    assert set(report["metrics"]["adem"]) == {"item", "system"} and "kendall" not in report["metrics"]["adem"]["item"]
    assert {(c["a"], c["b"]) for c in report["comparisons"]} == {("adem", "bleu4")}
    systems_only = client.correlate(human, scores, systems=systems, methods=["pearson"], resamples=200,
                                    system_resampling="systems")
    assert systems_only["resampling"]["system"]["design"] == "systems"
    by_inputs = client.correlate(human, scores, systems=systems, methods=["pearson"], resamples=200,
                                 inputs=[f"c{i // 3}" for i in range(9)])
    assert "inputs" in by_inputs["resampling"]["system"]["resampled"]
    assert report["resampling"]["system"]["design"] == "both"  # the server's default
    inputs = [f"c{i}" for i in range(9)]
    items_by_inputs = client.correlate(human, scores, methods=["pearson"], resamples=200, inputs=inputs,
                                       item_resampling="inputs")
    assert items_by_inputs["resampling"]["item"]["design"] == "inputs"
    assert report["resampling"]["item"]["design"] == "items"  # the server's default


def test_correlate_several_ratings_per_item(client):
    report = client.correlate([[3.0, 2.0], [3.0, 1.0], [3.0, 4.0]], {"adem": [2.9, 4.0, 1.7]}, methods=["pearson"])
    assert report["agreement"] is not None and report["agreement"]["raters_per_item"] == 2.0


def test_human_eval(server, client):
    ratings = [{"rater": rater, "system": system, "item": f"{rater}-{system}-{i}",
                "scores": {"fun": base + 5 * i, "robotic": 100 - base - 3 * i}}
               for rater in ("r1", "r2", "r3") for system, base in (("A", 70), ("B", 45), ("degraded", 10))
               for i in range(4)]
    report = client.human_eval(ratings, reverse=["robotic"], scale=(0, 100), qc_system="degraded", alpha=0.05)
    expected = post(server, "/human-eval", {"ratings": ratings, "reverse": ["robotic"], "scale": [0, 100],
                                            "qc_system": "degraded", "alpha": 0.05})
    assert report == expected
    assert [s["system"] for s in report["systems"]] == ["A", "B"]
    assert report["raters"]["passed"] == ["r1", "r2", "r3"] and report["reversed"] == ["robotic"]


def test_a_ranked_candidate_carries_the_details_its_options_ask_for(client):
    """The server gives each ranked candidate the `details` its options ask for; the client dropped them."""
    context, candidates = ["how was your weekend?"], ["fine.", "great, i went hiking with my sister!"]
    ranking = client.rerank("unref-minilm", context, candidates, options={"signals": True}).ranking
    scored = client.score("unref-minilm", [{"context": context, "response": c} for c in candidates],
                          options={"signals": True})
    assert [entry.details for entry in ranking] == [scored.details[entry.index] for entry in ranking]
    assert all(entry.details for entry in ranking)
    assert all(entry.details is None for entry in client.rerank("unref-minilm", context, candidates).ranking)
