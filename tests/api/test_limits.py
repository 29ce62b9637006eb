"""service/api/limits.py: the per-request limits that answer 413 before any model runs."""
from __future__ import annotations

import pytest

from service.api import limits
from service.config import load_settings
from service.errors import TooLarge

SETTINGS = load_settings({}, environ={})


def test_a_dialogue_over_the_turn_and_character_limits_is_413() -> None:
    """A dialogue's `turns` have their own limit (max_dialogue_turns), its texts the same as every utterance
    (max_chars); an item's context keeps max_turns."""
    turns = [{"speaker": "user" if j % 2 else "bot", "text": "hi"} for j in range(SETTINGS.max_dialogue_turns + 1)]
    with pytest.raises(TooLarge) as caught:
        limits.check_items([{"turns": turns}], SETTINGS)
    assert caught.value.details == {"items.0.turns": f"{len(turns)} turns; the limit is {SETTINGS.max_dialogue_turns}."}
    assert limits.check_items([{"turns": turns[:SETTINGS.max_turns + 1]}], SETTINGS) == {}
    with pytest.raises(TooLarge) as caught:
        limits.check_items([{"context": ["hi"] * (SETTINGS.max_turns + 1), "response": "a"}], SETTINGS)
    assert list(caught.value.details) == ["items.0.context"]
    long = [{"speaker": "bot", "text": "x" * (SETTINGS.max_chars + 1)}]
    with pytest.raises(TooLarge) as caught:
        limits.check_items([{"turns": long}], SETTINGS)
    assert "items.0.turns.0" in caught.value.details


def test_a_rerank_context_one_turn_over_the_limit_is_413_and_at_it_is_not() -> None:
    body = {"context": ["hi"] * SETTINGS.max_turns, "candidates": ["a"], "reference": None}
    assert limits.check_rerank(body, SETTINGS) == {}
    with pytest.raises(TooLarge) as caught:
        limits.check_rerank({**body, "context": ["hi"] * (SETTINGS.max_turns + 1)}, SETTINGS)
    assert "context" in caught.value.details


# --- the public benchmarks score with the default settings (API.md) --------------------------------
DSTC9_TURNS = 630  # DSTC9's longest interactive dialogue
LONGEST_TURN = 3414  # characters of FED's and DSTC9's longest turns
SHORT_TURNS = ["hi! how are you today?", "good thanks, i just got back from a long walk.", "where did you go?",
               "along the river, the weather was lovely.", "that sounds nice, do you walk often?",
               "most mornings, it helps me think. what about you?"]


def long_turn(tag: int, chars: int = LONGEST_TURN) -> str:
    """`chars` characters of plain English sentences, distinct for each tag."""
    sentences = (f"we talked about the {i}th book and why the ending felt rushed." for i in range(300))
    text = f"turn {tag}: " + " ".join(sentences)
    return text[:chars]


def benchmark_dialogue(turns: int = DSTC9_TURNS, every: int = 63) -> dict:
    """A conversation as long as DSTC9's longest, every `every`-th turn as long as FED's and DSTC9's longest."""
    return {"turns": [{"speaker": "user" if j % 2 == 0 else "bot",
                       "text": long_turn(j) if j % every == 0 else SHORT_TURNS[j % len(SHORT_TURNS)]}
                      for j in range(turns)]}


def test_defaults_admit_the_longest_public_benchmark_dialogues_and_turns() -> None:
    assert SETTINGS.max_dialogue_turns >= DSTC9_TURNS and SETTINGS.max_chars >= LONGEST_TURN
    assert len(long_turn(0)) == LONGEST_TURN


def test_mh_scores_a_dstc9_length_dialogue_with_fed_length_turns_by_default(full_app) -> None:
    client = full_app.test_client()
    dialogue = benchmark_dialogue()
    short = {"turns": [t for t in dialogue["turns"] if len(t["text"]) < 100]}
    answer = client.post("/score", json={"model": "mh", "items": [dialogue, short], "options": {"proxies": True}})
    assert answer.status_code == 200, answer.get_json()
    low, high = full_app.extensions["dialscore.store"].get("mh").manifest.score_range
    assert all(low <= score <= high for score in answer.get_json()["scores"])
    long_words, short_words = (d["proxies"]["words"] for d in answer.get_json()["details"])
    assert long_words > short_words  # the long user turns were read, not cut or left out


def test_every_model_scores_a_reply_as_long_as_the_longest_benchmark_turn(full_app) -> None:
    client = full_app.test_client()
    reply_models = [m["name"] for m in client.get("/models").get_json()["models"] if m["kind"] != "dialogue"]
    item = {"context": [SHORT_TURNS[0], long_turn(1)], "response": long_turn(2), "reference": long_turn(3)}
    answer = client.post("/score", json={"models": reply_models, "items": [item]})
    assert answer.status_code == 200, answer.get_json()
    assert sorted(answer.get_json()["results"]) == sorted(reply_models) and len(reply_models) >= 13
    ranking = client.post("/rerank", json={"model": "autojudge-minilm", "context": item["context"],
                                           "candidates": [long_turn(4), "ok."]})
    assert ranking.status_code == 200, ranking.get_json()


def test_over_the_raised_limits_is_still_413_naming_the_field(full_app) -> None:
    client = full_app.test_client()
    too_many = benchmark_dialogue(SETTINGS.max_dialogue_turns + 1, every=10**9)
    answer = client.post("/score", json={"model": "mh", "items": [too_many]})
    assert answer.status_code == 413 and list(answer.get_json()["error"]["details"]) == ["items.0.turns"]
    too_long = benchmark_dialogue(4)
    too_long["turns"][3]["text"] = long_turn(5, SETTINGS.max_chars + 1)
    answer = client.post("/score", json={"model": "mh", "items": [too_long]})
    assert answer.status_code == 413 and list(answer.get_json()["error"]["details"]) == ["items.0.turns.3"]
    item = {"context": ["hi"], "response": long_turn(6, SETTINGS.max_chars + 1), "reference": "hello"}
    answer = client.post("/score", json={"model": "bleu4", "items": [item]})
    assert answer.status_code == 413 and list(answer.get_json()["error"]["details"]) == ["items.0.response"]
    answer = client.post("/rerank", json={"model": "bleu4", "context": ["hi"], "reference": "hello",
                                          "candidates": ["ok", long_turn(7, SETTINGS.max_chars + 1)]})
    assert answer.status_code == 413 and list(answer.get_json()["error"]["details"]) == ["candidates.1"]
