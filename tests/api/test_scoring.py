"""/score and /rerank through Flask's test client."""
import pytest

from tests.conftest import BASELINES

ITEM = {"context": ["hey, what do you want to do tonight?", "why don't we go see a movie?"],
        "response": "nah, let's do something active.", "reference": "yeah, the film about turing looks great!"}


@pytest.mark.parametrize("model", BASELINES)
def test_score_each_baseline(client, model):
    response = client.post("/score", json={"model": model, "items": [ITEM, {**ITEM, "response": ITEM["reference"]}]})
    assert response.status_code == 200
    body = response.get_json()
    assert body["model"] == model and body["version"]
    assert len(body["scores"]) == 2
    if model != "length":  # a reply identical to the reference is the best a referenced metric can see
        assert body["scores"][1] > body["scores"][0]


def test_several_models_share_items(client):
    body = {"models": ["bleu4", "length"], "items": [ITEM], "options": {}}
    result = client.post("/score", json=body).get_json()
    assert result["models"] == ["bleu4", "length"]
    assert result["results"]["length"]["scores"] == [6.0]
    versions = ",".join(f"{m}={result['results'][m]['version']}" for m in ("bleu4", "length"))
    assert (result["model"], result["version"]) == ("bleu4,length", versions)  # the contract's fields, always
    single = client.post("/score", json={"model": "bleu4", "items": [ITEM]}).get_json()
    assert result["results"]["bleu4"]["scores"] == single["scores"]


def test_rerank_best_first_ties_keep_order_top_k(client):
    body = {"model": "length", "context": ["hi"], "candidates": ["one two", "one", "uno dos", "a b c"], "top_k": 3}
    ranking = client.post("/rerank", json=body).get_json()["ranking"]
    assert [r["index"] for r in ranking] == [3, 0, 2]
    assert ranking[0] == {"index": 3, "response": "a b c", "score": 3.0}


def test_rerank_referenced_model(client):
    body = {"model": "bleu4", "context": ["hi"], "candidates": ["no idea", "yeah, the film looks great!"],
            "reference": ITEM["reference"]}
    ranking = client.post("/rerank", json=body).get_json()["ranking"]
    assert ranking[0]["index"] == 1


def test_full_store_serves_and_is_batch_invariant(full_app):
    """Every committed model: 64 items of mixed lengths score exactly as each item does alone, and as
    in the batch reversed (the encoders once rounded by the batch's padded width and row count, the
    heads by a row's position: up to 2.4e-7), where GET /models says bit_exact_across_batches; elsewhere
    (OpenVINO) within its `batch_bound` (four times what make bench measured, on other items) or a
    thousandth of its range, whichever is more: a row mixed up with another moves by far more."""
    client = full_app.test_client()
    models = client.get("/models").get_json()["models"]
    assert {m["name"] for m in models} >= set(BASELINES)
    words = "so what do you think about the weather today my friend it is quite nice".split()
    items = []
    for i in range(64):
        context = [" ".join(words[: 1 + (i * 7) % 15]) for _ in range(1 + i % 4)]
        items.append({"context": context, "response": " ".join(words[: 1 + (i * 5) % 16]),
                      "reference": " ".join(words[(i % 5):])})
    dialogues = [{"turns": [{"speaker": "user" if j % 2 == 0 else "bot", "text": it["context"][0] + f" {j}"}
                            for j in range(2 + i % 5)]} for i, it in enumerate(items)]
    for model in models:
        batch = dialogues if model["kind"] == "dialogue" else items
        together = client.post("/score", json={"model": model["name"], "items": batch})
        assert together.status_code == 200, (model["name"], together.get_json())
        scores = together.get_json()["scores"]
        low, high = model["score_range"]
        bound = 0.0 if model["bit_exact_across_batches"] else max(model["batch_bound"] or 0, 1e-3) * (high - low)
        for i in range(0, 64, 9):
            alone = client.post("/score", json={"model": model["name"], "items": [batch[i]]}).get_json()["scores"][0]
            assert abs(alone - scores[i]) <= bound, (model["name"], i, alone, scores[i])  # bound 0: to the bit (API.md)
        backwards = client.post("/score", json={"model": model["name"], "items": batch[::-1]}).get_json()["scores"]
        # every row at another position of the batch
        assert all(abs(a - b) <= bound for a, b in zip(backwards[::-1], scores, strict=True)), model["name"]


def test_scores_stay_inside_the_published_range_at_the_ends(full_app):
    """A reply equal to its reference is where cosines and overlap ratios pass 1 by a rounding error."""
    client = full_app.test_client()
    ranges = {m["name"]: m["score_range"] for m in client.get("/models").get_json()["models"]}
    text = "yeah, the film about turing looks great!"
    same = {"context": ["shall we see a movie?"], "response": text, "reference": text}
    for model in ("bleu4", "rouge-l", "emb-average", "emb-extrema", "emb-greedy", "minilm-cosine", "ruber"):
        low, high = ranges[model]
        scores = client.post("/score", json={"model": model, "items": [same, ITEM]}).get_json()["scores"]
        assert all(low <= s <= high for s in scores), (model, scores)
    assert client.post("/score", json={"model": "bleu4", "items": [same]}).get_json()["scores"] == [1.0]


# An item on which adem's head rounded rows 4k and 4k+1 of a batch one float32 ulp apart.
PROBE_ITEM = {"context": ["game weekend...", "come friend love dinner okay you mother really", "quite?",
                          "hiking school you i you come don't a friend hate", "or..."],
              "response": "can't book coffee book music much today i.", "reference": "know today weekend"}


def test_identical_items_and_candidates_are_ties_for_every_model(full_app):
    client = full_app.test_client()
    others = [{**PROBE_ITEM, "response": f"other reply {i}"} for i in range(3)]
    for model in [m["name"] for m in client.get("/models").get_json()["models"] if m["kind"] != "dialogue"]:
        body = client.post("/score", json={"model": model, "items": [PROBE_ITEM] * 8 + others}).get_json()
        assert len(set(body["scores"][:8])) == 1, (model, body["scores"])
        if "details" in body:
            assert all(d == body["details"][0] for d in body["details"][:8]), model
        candidates = ["hi there", PROBE_ITEM["response"], "no", PROBE_ITEM["response"], PROBE_ITEM["response"]]
        ranking = client.post("/rerank", json={"model": model, "context": PROBE_ITEM["context"],
                                               "reference": PROBE_ITEM["reference"],
                                               "candidates": candidates}).get_json()["ranking"]
        copies = [r["index"] for r in ranking if r["response"] == PROBE_ITEM["response"]]
        assert copies == [1, 3, 4], (model, ranking)


def test_sentence_encoder_work_is_bounded_per_request(full_app, monkeypatch):
    """512 items of 256-word-piece texts to every model took 271 s within every other limit."""
    import dataclasses

    monkeypatch.setitem(full_app.config, "SETTINGS", dataclasses.replace(full_app.config["SETTINGS"],
                                                                        max_encoder_tokens=300))
    client = full_app.test_client()
    assert client.get("/models").get_json()["limits"]["max_encoder_tokens"] == 300
    items = [{"context": ["a shared first turn", f"turn {i} " + "word " * 40], "response": f"reply {i}",
              "reference": "a shared reference"} for i in range(8)]
    over = client.post("/score", json={"models": ["bleu4", "minilm-cosine"], "items": items})
    assert over.status_code == 413 and over.get_json()["error"]["code"] == "too_large"
    assert "minilm-l6" in over.get_json()["error"]["details"]["items"]
    assert client.post("/score", json={"model": "bleu4", "items": items}).status_code == 200  # not metered
    # a text repeated across items is encoded once, so it is counted once
    same = [{**items[0], "response": "one reply"}] * 40
    assert client.post("/score", json={"model": "minilm-cosine", "items": same}).status_code == 200
    rerank = client.post("/rerank", json={"model": "autojudge-minilm", "context": ["hi"],
                                          "candidates": [f"candidate {i} " + "word " * 30 for i in range(10)]})
    assert rerank.status_code == 413 and "candidates" in rerank.get_json()["error"]["details"]
    dialogue = {"turns": [{"speaker": "user", "text": "word " * 200}, {"speaker": "bot", "text": "word " * 150}]}
    assert client.post("/score", json={"model": "mh", "items": [dialogue]}).status_code == 413


def test_a_body_that_opens_with_a_byte_order_mark_is_read(client):
    """RFC 8259 lets a parser ignore a BOM; Windows tools write one (it was 400 bad_json)."""
    import json

    body = b"\xef\xbb\xbf" + json.dumps({"model": "length", "items": [ITEM]}).encode()
    response = client.post("/score", data=body, content_type="application/json")
    assert response.status_code == 200, response.get_json()


def test_texts_shared_across_items_roles_and_models_do_not_change_a_score(full_app):
    """The per-request EncodeCache is keyed by (component, text): the same text is an utterance, a
    one-turn context state, a RUBER query and a MiniLM vector, each its own vector. Here one item's
    reply is another's context turn and reference, and several models share the request: every
    score must equal the one of the item scored alone by that model alone (to the bit, API.md)."""
    client = full_app.test_client()
    served = {m["name"] for m in client.get("/models").get_json()["models"]}
    names = [n for n in ("adem", "autojudge", "ruber", "minilm-cosine", "adem-minilm") if n in served]
    assert {"adem", "minilm-cosine"} <= set(names)
    x, y, z = "where did you go on holiday?", "we went to spain for two weeks.", "how was the weather?"
    items = [{"context": [x], "response": y, "reference": z},
             {"context": [y], "response": z, "reference": x},
             {"context": [x, z], "response": x, "reference": y}]
    alone = {name: [client.post("/score", json={"model": name, "items": [item]}).get_json()["scores"][0]
                    for item in items] for name in names}
    for name in names:  # one model, the texts shared between the items' roles
        assert client.post("/score", json={"model": name, "items": items}).get_json()["scores"] == alone[name], name
    together = client.post("/score", json={"models": names, "items": items})  # and between models
    assert together.status_code == 200, together.get_json()
    for name in names:
        assert together.get_json()["results"][name]["scores"] == alone[name], name


def test_a_missing_reference_names_every_model_that_needs_it_in_a_sentence(client):
    items = [{"context": ["hi"], "response": "hello"}]
    one = client.post("/score", json={"model": "bleu4", "items": items}).get_json()["error"]["details"]
    assert one == {"items.0.reference": "Required, and not blank, by bleu4 (a referenced model)."}
    two = client.post("/score", json={"models": ["bleu4", "rouge-l"], "items": items}).get_json()["error"]["details"]
    assert two == {"items.0.reference": "Required, and not blank, by bleu4, rouge-l (referenced models)."}


@pytest.mark.parametrize("path,body,field", [
    ("/correlate", b'{"human": [1e400, 2, 3], "scores": {"a": [1, 2, 3]}}', "human.0"),
    ("/human-eval", b'{"ratings": [{"rater": "a", "system": "s", "item": "i", "scores": {"x": -1e400}}]}',
     "ratings.0.scores.x"),
])
def test_a_number_past_a_double_is_named_as_such(client, path, body, field):
    """JSON allows 1e400 (so a 422, not a 400); it reads as infinity, which is what the message says."""
    response = client.post(path, data=body, content_type="application/json")
    assert response.status_code == 422
    assert response.get_json()["error"]["details"][field].startswith("A number too large for a double")


def test_correlate_and_human_eval_answers_name_the_tool_version_that_computed_them(client):
    """Figures a researcher publishes from the HTTP answers cite the version, as the reports' files do."""
    from service.version import VERSION

    human, metric = [1, 2, 3, 4, 5, 2], [2, 1, 4, 3, 5, 2]
    answer = client.post("/correlate", json={"human": human, "scores": {"m": metric}, "resamples": 0})
    assert answer.status_code == 200 and answer.get_json()["dialscore"] == VERSION
    ratings = [{"rater": f"w{r}", "system": s, "item": f"d{r}{s}", "scores": {"fun": 50 + r + (s == "A") * 20}}
               for r in range(3) for s in ("A", "B")]
    answer = client.post("/human-eval", json={"ratings": ratings, "scale": [0, 100]})
    assert answer.status_code == 200 and answer.get_json()["dialscore"] == VERSION, answer.get_json()


@pytest.mark.parametrize("model, options, reference", [("unref-minilm-commercial", {"signals": True}, None),
                                                       ("ruber", {"components": True}, "i went hiking.")])
def test_a_ranked_candidate_carries_the_details_its_options_ask_for_as_score_gives_them(full_app, model, options,
                                                                                        reference):
    """The options were accepted on /rerank and their details dropped: a bot could not see why a candidate
    ranked where it did from the call it makes."""
    client = full_app.test_client()
    context, candidates = ["how was your weekend?"], ["great, i went hiking!", "weekend your was how", "ok"]
    body = {"model": model, "context": context, "candidates": candidates, "reference": reference}
    ranked = client.post("/rerank", json={**body, "options": options})
    assert ranked.status_code == 200, ranked.get_json()
    items = [{"context": context, "response": c, "reference": reference} for c in candidates]
    scored = client.post("/score", json={"model": model, "items": items, "options": options}).get_json()
    for entry in ranked.get_json()["ranking"]:
        assert entry["details"] == scored["details"][entry["index"]] and entry["details"]
    assert all("details" not in entry for entry in client.post("/rerank", json=body).get_json()["ranking"])


def test_a_ranked_candidates_details_are_its_own_when_candidates_before_it_were_left_out(full_app):
    """With a candidate excluded, the scored batch is shorter than the request: each entry's details are
    those of the candidate its index names, as /score gives them."""
    client = full_app.test_client()
    context, candidates = ["how was your weekend?"], ["", "great, i went hiking!", "weekend your was how", "ok"]
    ranked = client.post("/rerank", json={"model": "ruber", "context": context, "candidates": candidates,
                                          "reference": "i went hiking.", "options": {"components": True},
                                          "exclude_warned": ["empty"]})
    assert ranked.status_code == 200, ranked.get_json()
    items = [{"context": context, "response": c, "reference": "i went hiking."} for c in candidates[1:]]
    scored = client.post("/score", json={"model": "ruber", "items": items, "options": {"components": True}}).get_json()
    assert sorted(entry["index"] for entry in ranked.get_json()["ranking"]) == [1, 2, 3]
    for entry in ranked.get_json()["ranking"]:
        assert entry["details"] == scored["details"][entry["index"] - 1]


def test_score_names_each_models_training_items_and_models_says_which_it_checks(tmp_path):
    """/score marks, per model, the items that are its training items (as `dialscore score` and bulk do), so that
    a researcher scoring over HTTP does not take them for held-out figures; GET /models says what is checked."""
    from service.api import schemas
    from service.app import create_app
    from tests.conftest import copy_store, with_trained_items

    store = copy_store(tmp_path / "store", ("length", "bleu4"))
    with_trained_items(store, "length", [(["how was your weekend?"], "we went hiking.")])
    client = create_app({"model_store": store, "load_sync": True, "models": ["length", "bleu4"]}).test_client()
    items = [{"context": ["hi", "How was your weekend?"], "response": "We went hiking!", "reference": "fun"},
             {"context": ["how was your weekend?"], "response": "quiet.", "reference": "fun"},
             {"context": ["User: how was your weekend ?"], "response": "Bot: we went hiking .", "reference": "x"}]
    several = client.post("/score", json={"models": ["length", "bleu4"], "items": items}).get_json()
    schemas.MultiScoreResponseSchema().load(several)
    assert several["results"]["length"]["trained"] == [0, 2] and "trained" not in several["results"]["bleu4"]
    one = client.post("/score", json={"model": "length", "items": items[1:], "on_invalid": "skip"}).get_json()
    assert one["trained"] == [1]
    assert "trained" not in client.post("/score", json={"model": "length", "items": items[1:2]}).get_json()
    invalid = {"context": ["hi"], "response": 5}  # skipped: `trained` counts the request's positions, not the kept
    skipped = client.post("/score", json={"model": "length", "items": [invalid, *items], "on_invalid": "skip"})
    assert skipped.status_code == 200 and skipped.get_json()["trained"] == [1, 3]
    described = {m["name"]: m["trained_items"] for m in client.get("/models").get_json()["models"]}
    assert described == {"bleu4": None, "length": {"keys": 1, "unit": trained_items_unit(), "split": "train",
                                                   "sets": {"a-set": 1}}}


def trained_items_unit() -> str:
    from service.store.trained_items import UNIT

    return UNIT
