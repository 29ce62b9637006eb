"""The committed adem and autojudge read typographic quotes as straight ones (hred-encoder 2026.11.2's
tokenizer.json, training/encoders/hred/tokenizer.py `served`): before, autojudge scored the first reply below 3.26
after "it's" and 1.05 after "it’s"."""
from __future__ import annotations

import pytest

from tests.conftest import copy_store

CASES = [  # (context with curly quotes, the same with straight ones, reply, reference)
    (["i think it’s going to rain today."], ["i think it's going to rain today."],
     "then i'll bring my umbrella, thanks for the warning.", "oh no, i'd better take an umbrella."),
    (["did you see ‘casablanca’ last night?", "i didn’t, was it good?"],
     ["did you see 'casablanca' last night?", "i didn't, was it good?"],
     "it was great, you should watch it.", "yes, it's a classic."),
    (["my boss said “we’re done here” and left."], ['my boss said "we\'re done here" and left.'],
     "that sounds rough, are you ok?", "what did he mean by that?"),
]


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from service.app import create_app

    store = copy_store(tmp_path_factory.mktemp("store"), ("adem", "autojudge"))
    app = create_app({"model_store": store, "load_sync": True})
    app.config["TESTING"] = True
    return app.test_client()


def scores(client, contexts, responses, references) -> dict[str, list[float]]:
    items = [{"context": c, "response": r, "reference": ref} for c, r, ref in zip(contexts, responses, references)]
    response = client.post("/score", json={"models": ["adem", "autojudge"], "items": items})
    assert response.status_code == 200, response.get_json()
    return {name: result["scores"] for name, result in response.get_json()["results"].items()}


def test_curly_and_straight_quotes_score_the_same(client) -> None:
    curly = scores(client, [c[0] for c in CASES], [c[2] for c in CASES], [c[3] for c in CASES])
    straight = scores(client, [c[1] for c in CASES], [c[2] for c in CASES], [c[3] for c in CASES])
    assert curly == straight
    assert straight["autojudge"][0] == pytest.approx(3.26, abs=0.01)  # the audit's straight-quote score
    # and in the reply and the reference, not only the context
    replies = {"curly": ["then i’ll bring my umbrella, thanks for the “warning”.", "oh no, i’d better take an umbrella."],
               "straight": ["then i'll bring my umbrella, thanks for the \"warning\".",
                            "oh no, i'd better take an umbrella."]}
    assert (scores(client, [CASES[0][1]], *([r] for r in replies["curly"]))
            == scores(client, [CASES[0][1]], *([r] for r in replies["straight"])))


def test_the_served_versions_say_so(client) -> None:
    listed = {m["name"]: m["version"] for m in client.get("/models").get_json()["models"]}
    assert listed["adem"] == listed["autojudge"] == "2026.11.3"


def test_the_committed_tokenizer_is_the_served_form() -> None:
    """What `export` writes (training/encoders/hred/tokenizer.py `served`): mapping it again changes nothing."""
    from tests.conftest import MODEL_STORE
    from training.encoders.hred import tokenizer as bpe

    committed = bpe.load(MODEL_STORE / "hred-encoder" / "tokenizer.json")
    assert bpe.served(committed).to_str() == committed.to_str()
    assert committed.encode("it’s “so”").ids == committed.encode("it's \"so\"").ids
